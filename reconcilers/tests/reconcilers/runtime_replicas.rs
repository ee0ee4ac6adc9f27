//! Wakes between replicas on PostgreSQL (issue #50, item 6;
//! `play_core::wake`, `play_reconcilers::wake_relay`): two runtimes on one
//! database, each with its own waker relayed as `play serve` relays it.
//! A change woken on replica `B` while replica `A` holds the object's lease
//! in a pass is run by `A` right after that pass. Before, `B`'s claim
//! found the lease busy and `B` retried at the lease's expiry (60 s here),
//! and `A` never heard of the change. On SQLite it returns at once.

use std::time::{Duration, Instant};

use crate::runtime_probe::{Probe, Running, quiet_config, runtime};
use play_core::wake::{ChannelWaker, Kind, Wake, Waker};
use play_reconcilers::runtime::Config;
use play_store::{Backend, testing};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Polls `done` every 50 ms for up to `limit`.
async fn within(limit: Duration, what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_change_woken_on_one_replica_during_the_others_pass_runs_right_after_it() {
    let t = testing::store().await;
    if t.store.backend() != Backend::Postgres {
        eprintln!("skipped: wakes are relayed between replicas on PostgreSQL only");
        return;
    }
    let probe = Probe::ok(Duration::from_secs(3));
    let config =
        Config { lease_duration: Duration::from_secs(60), lease_busy_retry: Duration::from_secs(60), ..quiet_config() };
    let (stop, tasks) = (CancellationToken::new(), TaskTracker::new());
    let mut replicas = Vec::new();
    let mut wakers = Vec::new();
    for name in ["A", "B"] {
        let waker = ChannelWaker::new();
        let (rt, metrics) = runtime(&probe, t.store.clone(), config.clone());
        let rt = rt
            .with_replica_id(name)
            .wake_from(waker.subscribe(Kind::Playground))
            .remote_wakes_from(waker.subscribe_remote(Kind::Playground));
        play_reconcilers::wake_relay::start(&t.store, &waker, name, &stop, &tasks);
        replicas.push(Running::start(rt, metrics));
        wakers.push(waker);
    }
    let (a, b) = (&wakers[0], &wakers[1]);
    // The relay is up once one of B's wakes (of a kind nobody runs) reaches A.
    let mut ready = a.subscribe_remote(Kind::Edge);
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < Duration::from_secs(20), "no wake relayed from B to A");
        b.wake(Wake::Edge(0.into()));
        if tokio::time::timeout(Duration::from_millis(300), ready.recv()).await.is_ok() {
            break;
        }
    }

    a.wake(Wake::Playground(1.into()));
    within(Duration::from_secs(20), "A's first pass", || !probe.runs_of(1).is_empty()).await;
    // A holds the lease for 3 s: B's own pass finds it busy.
    b.wake(Wake::Playground(1.into()));
    within(Duration::from_secs(30), "a second pass, long before B's retry at 60 s", || probe.runs_of(1).len() >= 2)
        .await;
    let runs = probe.runs_of(1);
    assert_eq!((runs[0].owner.as_str(), runs[1].owner.as_str()), ("A", "A"), "the holder ran the change: {runs:?}");
    assert!(runs[1].started >= runs[0].ended.unwrap(), "after the pass, never beside it");
    assert_eq!(probe.overlaps(), 0);
    for replica in replicas {
        replica.stop().await;
    }
    stop.cancel();
    tasks.close();
    tasks.wait().await;
}
