//! The per-group bound of the runtime (`Config::per_group`): one slow
//! Playroom holds only its own share of the workers. On tokio's paused
//! clock with in-memory leases: deterministic.

#![allow(clippy::unwrap_used, reason = "test fixtures: a panic is the failure report")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use play_core::metrics::Metrics;
use play_reconcilers::runtime::{Action, Config, Ctx, MemoryLeases, Reconciler, Runtime};
use play_reconcilers::{Error, Result};
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

const SEC: Duration = Duration::from_secs(1);

/// Objects `0..100` are on a slow host (group 0: a pass takes a minute),
/// `100..200` on a fast one (group 1: a second); the group of `id` is
/// `id / 100`.
#[derive(Default)]
struct Hosts {
    lookups: Mutex<HashMap<i64, usize>>,
    /// Lookups that fail before the first one answers.
    failing_lookups: AtomicUsize,
    running: Mutex<HashMap<i64, usize>>,
    most: Mutex<HashMap<i64, usize>>,
    most_overall: AtomicUsize,
    finished: Mutex<Vec<(i64, Instant)>>,
}

#[derive(Clone, Default)]
struct Grouped(Arc<Hosts>);

impl Reconciler for Grouped {
    const NAME: &'static str = "grouped";
    const KIND: play_core::wake::Kind = play_core::wake::Kind::Playground;
    const GROUPED: bool = true;
    type Id = play_model::ids::PlaygroundId;

    async fn reconcile(&self, id: Self::Id, _ctx: &Ctx) -> Result<Action> {
        let id = id.0;
        let hosts = &*self.0;
        let group = id / 100;
        {
            let mut running = hosts.running.lock().unwrap();
            *running.entry(group).or_default() += 1;
            let now = running[&group];
            let mut most = hosts.most.lock().unwrap();
            let best = most.entry(group).or_default();
            *best = (*best).max(now);
            hosts.most_overall.fetch_max(running.values().sum(), Ordering::SeqCst);
        }
        sleep(if group == 0 { 60 * SEC } else { SEC }).await;
        *hosts.running.lock().unwrap().get_mut(&group).unwrap() -= 1;
        hosts.finished.lock().unwrap().push((id, Instant::now()));
        Ok(Action::await_change())
    }

    async fn list(&self) -> Result<Vec<Self::Id>> {
        Ok(Vec::new())
    }

    async fn group(&self, id: Self::Id) -> Result<Option<i64>> {
        let id = id.0;
        let failing = &self.0.failing_lookups;
        if failing.load(Ordering::SeqCst) > 0 {
            failing.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::InvalidTarget("the store is down".to_owned()));
        }
        *self.0.lookups.lock().unwrap().entry(id).or_default() += 1;
        Ok(Some(id / 100))
    }
}

fn start(hosts: &Grouped, config: Config) -> (play_reconcilers::runtime::Handle, CancellationToken) {
    let config = Config { resync_every: 24 * 3600 * SEC, ..config };
    let runtime = Runtime::new(hosts.clone(), MemoryLeases::new(), Arc::new(Metrics::new())).with_config(config);
    let handle = runtime.handle();
    let shutdown = CancellationToken::new();
    tokio::spawn(runtime.run(shutdown.clone()));
    (handle, shutdown)
}

#[tokio::test(start_paused = true)]
async fn a_slow_host_holds_only_its_own_share_of_the_workers() {
    let hosts = Grouped::default();
    let (handle, shutdown) = start(&hosts, Config { concurrency: 8, per_group: 2, ..Config::default() });
    let t0 = Instant::now();
    // The slow host's work is asked for first: without the bound its 20
    // objects would take all 8 workers for minutes.
    for id in 0..20 {
        handle.wake(id);
    }
    for id in 100..120 {
        handle.wake(id);
    }
    sleep(30 * SEC).await;
    let finished = hosts.0.finished.lock().unwrap().clone();
    let fast: Vec<Instant> = finished.iter().filter(|(id, _)| *id >= 100).map(|(_, at)| *at).collect();
    assert_eq!(fast.len(), 20, "every object of the fast host is done while the slow one works: {finished:?}");
    assert!(fast.iter().all(|at| *at - t0 <= 10 * SEC + SEC), "two at a time, one second each: {fast:?}");
    sleep(20 * 60 * SEC).await;
    shutdown.cancel();
    assert_eq!(hosts.0.finished.lock().unwrap().len(), 40, "the slow host's parked objects all ran");
    let most = hosts.0.most.lock().unwrap().clone();
    assert_eq!((most[&0], most[&1]), (2, 2), "never more than per_group of one host at once");
    assert!(hosts.0.most_overall.load(Ordering::SeqCst) <= 8);
    let lookups = hosts.0.lookups.lock().unwrap().clone();
    assert!(lookups.values().all(|n| *n == 1), "a group is looked up once per object: {lookups:?}");
}

#[tokio::test(start_paused = true)]
async fn a_failed_group_lookup_is_retried_and_a_wake_while_parked_runs_once() {
    let hosts = Grouped::default();
    hosts.0.failing_lookups.store(3, Ordering::SeqCst);
    let (handle, shutdown) = start(&hosts, Config { concurrency: 4, per_group: 1, ..Config::default() });
    handle.wake(100);
    handle.wake(101);
    sleep(SEC / 2).await;
    // 101 waits for 100's pass; wakes meanwhile do not queue it twice.
    for _ in 0..5 {
        handle.wake(101);
    }
    sleep(10 * 60 * SEC).await;
    shutdown.cancel();
    let finished = hosts.0.finished.lock().unwrap().clone();
    let count = |id: i64| finished.iter().filter(|(f, _)| *f == id).count();
    assert_eq!((count(100), count(101)), (1, 1), "{finished:?}");
    assert_eq!(hosts.0.failing_lookups.load(Ordering::SeqCst), 0, "the failed lookups were retried");
}
