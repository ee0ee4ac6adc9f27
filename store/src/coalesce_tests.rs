use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Semaphore;

use super::*;

/// A store stand-in: each query takes a ticket (its number, from 1) and
/// waits for a permit, so the test decides when queries answer.
#[derive(Default)]
struct Backend {
    queries: AtomicUsize,
    gate: Option<Arc<Semaphore>>,
}

impl Backend {
    fn gated() -> (Arc<Backend>, Arc<Semaphore>) {
        let gate = Arc::new(Semaphore::new(0));
        (Arc::new(Backend { queries: AtomicUsize::new(0), gate: Some(gate.clone()) }), gate)
    }

    async fn query(&self) -> Result<usize> {
        let ticket = self.queries.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(gate) = &self.gate {
            gate.acquire().await.expect("gate open").forget();
        }
        Ok(ticket)
    }

    fn count(&self) -> usize {
        self.queries.load(Ordering::SeqCst)
    }
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("timed out waiting for {what}");
}

/// A coalescer over a gated [`Backend`], and the gate.
struct Rig {
    c: Arc<Coalescer<u32, usize>>,
    backend: Arc<Backend>,
    gate: Arc<Semaphore>,
}

impl Rig {
    fn new() -> Rig {
        let (backend, gate) = Backend::gated();
        Rig { c: Arc::default(), backend, gate }
    }

    /// A caller reading key 7, in a task of its own.
    fn spawn(&self) -> tokio::task::JoinHandle<usize> {
        let (c, b) = (self.c.clone(), self.backend.clone());
        tokio::spawn(async move { c.read(7, || b.query()).await.expect("read") })
    }

    /// A first caller, once its query (ticket 1) is in flight.
    async fn leader(&self) -> tokio::task::JoinHandle<usize> {
        let caller = self.spawn();
        until("the first query", || self.backend.count() == 1).await;
        caller
    }

    /// Another caller, once it is the `n`th waiting for the next query.
    async fn waiter(&self, n: usize) -> tokio::task::JoinHandle<usize> {
        let caller = self.spawn();
        until("a waiter", || waiting(&self.c, 7) == n).await;
        caller
    }

    /// `caller` gets the second query's answer, not stalled, and no key is
    /// held afterwards.
    async fn second_answers(&self, caller: tokio::task::JoinHandle<usize>) {
        let got = tokio::time::timeout(Duration::from_secs(5), caller).await.expect("not stalled").expect("join");
        assert_eq!(got, 2);
        assert!(lock(&self.c.flights).is_empty());
    }
}

fn waiting(c: &Coalescer<u32, usize>, key: u32) -> usize {
    lock(&c.flights).get(&key).map_or(0, Vec::len)
}

#[tokio::test]
async fn callers_during_a_query_share_the_next_one_and_never_an_older_one() {
    let rig = Rig::new();
    // The first caller's query (ticket 1) is in flight...
    let first = rig.leader().await;
    // ... ten more arrive: they must not get ticket 1, which may predate
    // a write committed before they asked.
    let later: Vec<_> = (0..10).map(|_| rig.spawn()).collect();
    until("ten waiters", || waiting(&rig.c, 7) == 10).await;
    rig.gate.add_permits(1);
    assert_eq!(first.await.expect("join"), 1);
    // One of them runs ticket 2 for all ten.
    until("the second query", || rig.backend.count() == 2).await;
    rig.gate.add_permits(1);
    for caller in later {
        assert_eq!(caller.await.expect("join"), 2);
    }
    assert_eq!(rig.backend.count(), 2, "eleven callers, two queries");
    assert!(lock(&rig.c.flights).is_empty(), "no key is held once its queries are done");
}

#[tokio::test]
async fn keys_do_not_wait_for_each_other() {
    let c = Coalescer::<u32, usize>::default();
    let (slow, _gate) = Backend::gated();
    let fast = Backend::default();
    let _stuck = c.read(1, || slow.query());
    // Key 1's query never answers; key 2 is read at once.
    let read = tokio::time::timeout(Duration::from_secs(5), c.read(2, || fast.query())).await;
    assert_eq!(read.expect("key 2 not blocked").expect("read"), 1);
}

#[tokio::test]
async fn a_cancelled_leader_stalls_nobody() {
    let rig = Rig::new();
    // The leader's client goes away mid-query.
    let leader = rig.leader().await;
    let follower = rig.waiter(1).await;
    leader.abort();
    assert!(leader.await.expect_err("aborted").is_cancelled());
    // The waiter leads the next query (ticket 2) and gets its answer.
    rig.gate.add_permits(2);
    rig.second_answers(follower).await;
}

#[tokio::test]
async fn a_waiter_that_went_away_is_skipped_when_leadership_passes() {
    let rig = Rig::new();
    let first = rig.leader().await;
    let gone = rig.waiter(1).await;
    let stays = rig.waiter(2).await;
    gone.abort();
    let _ = gone.await;
    rig.gate.add_permits(2);
    assert_eq!(first.await.expect("join"), 1);
    rig.second_answers(stays).await;
}

#[tokio::test]
async fn not_found_is_shared_and_other_errors_are_read_again() {
    let c = Arc::new(Coalescer::<u32, usize>::default());
    let gate = Arc::new(Semaphore::new(0));
    let queries = Arc::new(AtomicUsize::new(0));
    // The query fails with `error` after the gate opens.
    let run = |error: fn() -> Error| {
        let (c, gate, queries) = (c.clone(), gate.clone(), queries.clone());
        tokio::spawn(async move {
            c.read(7, || async {
                queries.fetch_add(1, Ordering::SeqCst);
                gate.acquire().await.expect("gate open").forget();
                Err::<usize, _>(error())
            })
            .await
        })
    };
    // One query in flight, two callers waiting: they share the next
    // query's "not found" (two queries), but each reads again after
    // another failure (three).
    let cases: [(fn() -> Error, usize); 2] =
        [(|| Error::NotFound("playground"), 2), (|| Error::Internal("connection reset".into()), 3)];
    for (error, expected_queries) in cases {
        queries.store(0, Ordering::SeqCst);
        let first = run(error);
        until("the first query", || queries.load(Ordering::SeqCst) == 1).await;
        let waiters = [run(error), run(error)];
        until("two waiters", || waiting(&c, 7) == 2).await;
        gate.add_permits(expected_queries);
        let expected = first.await.expect("join").expect_err("fails").to_string();
        for waiter in waiters {
            assert_eq!(waiter.await.expect("join").expect_err("fails").to_string(), expected);
        }
        assert_eq!(queries.load(Ordering::SeqCst), expected_queries);
    }
}

#[tokio::test]
async fn past_the_bound_callers_read_for_themselves() {
    let rig = Rig::new();
    let mut callers = vec![rig.leader().await];
    callers.extend((0..MAX_WAITING).map(|_| rig.spawn()));
    until("a full queue", || waiting(&rig.c, 7) == MAX_WAITING).await;
    // One more: it does not queue, it queries.
    callers.push(rig.spawn());
    until("the extra caller's own query", || rig.backend.count() == 2).await;
    assert_eq!(waiting(&rig.c, 7), MAX_WAITING);
    rig.gate.add_permits(3);
    for caller in callers {
        caller.await.expect("join");
    }
    assert_eq!(rig.backend.count(), 3);
}
