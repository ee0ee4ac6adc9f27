//! The runtime's scheduling, on tokio's paused clock with in-memory leases:
//! deterministic, and no timing assertions beyond the paused clock's own.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::runtime_probe::{Probe, Running, failure, quiet_config, reconciles, runtime, sample};
use futures::StreamExt;
use play_core::wake::{ChannelWaker, Wake, Waker};
use play_reconcilers::runtime::{Action, Backoff, Config, LeaseStore, MemoryLeases, Reconciler};
use tokio::time::{Instant, sleep};

const SEC: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn queued_requests_for_one_object_are_deduplicated() {
    let probe = Probe::ok(5 * SEC);
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), Config { concurrency: 1, ..quiet_config() });
    let handle = rt.handle();
    let running = Running::start(rt, metrics);
    handle.wake(2);
    sleep(SEC).await;
    // Object 2 holds the only slot: these all wait in the queue.
    for _ in 0..10 {
        handle.wake(1);
    }
    sleep(60 * SEC).await;
    running.stop().await;
    assert_eq!(probe.runs_of(2).len(), 1);
    assert_eq!(probe.runs_of(1).len(), 1, "ten queued wakes, one pass");
}

#[tokio::test(start_paused = true)]
async fn the_earliest_requested_run_wins() {
    let probe = Probe::ok(Duration::ZERO);
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), quiet_config());
    let handle = rt.handle();
    let t0 = Instant::now();
    handle.wake_after(1, 30 * SEC);
    handle.wake_after(1, 10 * SEC);
    handle.wake_after(1, 20 * SEC);
    let running = Running::start(rt, metrics);
    sleep(60 * SEC).await;
    running.stop().await;
    let runs = probe.runs_of(1);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].started - t0, 10 * SEC);
}

#[tokio::test(start_paused = true)]
async fn one_object_is_never_reconciled_twice_at_once() {
    let probe = Probe::ok(Duration::from_millis(150));
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), Config { concurrency: 8, ..quiet_config() });
    let handle = rt.handle();
    let running = Running::start(rt, metrics);
    for i in 0..1000_i64 {
        handle.wake(i % 5);
        if i % 3 == 0 {
            handle.wake_after((i + 1) % 5, Duration::from_millis(7));
        }
        sleep(Duration::from_millis(10)).await;
    }
    sleep(10 * SEC).await;
    running.stop().await;
    assert_eq!(probe.overlaps(), 0);
    for id in 0..5 {
        assert!(probe.runs_of(id).len() > 10, "object {id} ran {} times", probe.runs_of(id).len());
    }
}

#[tokio::test(start_paused = true)]
async fn a_wake_during_a_pass_reruns_it_once_right_after() {
    let probe = Probe::ok(10 * SEC);
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), quiet_config());
    let handle = rt.handle();
    let running = Running::start(rt, metrics);
    handle.wake(1);
    for _ in 0..5 {
        sleep(SEC).await;
        handle.wake(1);
    }
    sleep(120 * SEC).await;
    running.stop().await;
    let runs = probe.runs_of(1);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[1].started, runs[0].ended.unwrap(), "re-run right after the first pass");
}

#[tokio::test(start_paused = true)]
async fn failures_back_off_exponentially_within_bounds_and_reset_on_success() {
    const FAILURES: usize = 40;
    let probe = Probe::new(Duration::ZERO, |_, n| match n {
        n if n < FAILURES => Err(failure("host unreachable")),
        n if n == FAILURES => Ok(Action::requeue_after(10 * SEC)),
        n if n == FAILURES + 1 => Err(failure("again")),
        _ => Ok(Action::await_change()),
    });
    let backoff = Backoff::default();
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), Config { backoff, ..quiet_config() });
    let handle = rt.handle();
    let running = Running::start(rt, metrics);
    handle.wake(1);
    sleep(24 * 3600 * SEC).await;
    let metrics = running.stop().await;

    let runs = probe.runs_of(1);
    assert_eq!(runs.len(), FAILURES + 3, "{runs:?}");
    let gaps: Vec<Duration> = runs.windows(2).map(|w| w[1].started - w[0].started).collect();
    for (i, gap) in gaps[..FAILURES].iter().enumerate() {
        let attempt = u32::try_from(i + 1).unwrap();
        assert_eq!(runs[i + 1].attempt, attempt, "the pass sees its attempt");
        assert!(*gap >= backoff.initial && *gap <= backoff.ceiling(attempt), "gap {i}: {gap:?}");
    }
    assert!(gaps[..FAILURES].iter().all(|g| *g <= backoff.max));
    assert!(
        gaps[FAILURES / 2..FAILURES].iter().any(|g| *g > 60 * SEC),
        "the delay grows towards the maximum: {gaps:?}"
    );
    assert_eq!(gaps[FAILURES], 10 * SEC, "success: its own requeue, no backoff");
    assert!(gaps[FAILURES + 1] <= backoff.ceiling(1), "reset by the success: {:?}", gaps[FAILURES + 1]);
    assert_eq!(runs[FAILURES + 2].attempt, 1);
    assert_eq!(reconciles(&metrics, "error"), u64::try_from(FAILURES + 1).unwrap());
    assert_eq!(reconciles(&metrics, "requeue"), 1);
    assert_eq!(reconciles(&metrics, "ok"), 1);
}

#[tokio::test(start_paused = true)]
async fn terminal_errors_are_not_retried_until_woken() {
    let probe =
        Probe::new(
            Duration::ZERO,
            |_, n| {
                if n == 0 { Err(failure("invalid spec")) } else { Ok(Action::await_change()) }
            },
        )
        .terminal();
    probe.set_listed(&[1]);
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), Config { resync_every: 10 * SEC, ..quiet_config() });
    let handle = rt.handle();
    let running = Running::start(rt, metrics);
    // Between resyncs (every 10 s), so the next one cannot add a pass.
    sleep(3605 * SEC).await;
    assert_eq!(probe.runs_of(1).len(), 1, "neither backoff nor resync retries a terminal error");
    handle.wake(1);
    sleep(SEC).await;
    let metrics = running.stop().await;
    assert_eq!(probe.runs_of(1).len(), 2, "a wake (a change) runs it again");
    assert_eq!(reconciles(&metrics, "terminal"), 1);
    assert_eq!(reconciles(&metrics, "ok"), 1);
}

/// A Playground that keeps failing must still expire on time: its error
/// policy caps the retry at its expiry. A terminal error then runs again at
/// that instant instead of waiting for a change, and a backoff of minutes
/// comes back by it.
#[tokio::test(start_paused = true)]
async fn a_failing_object_is_retried_no_later_than_its_deadline() {
    for terminal in [true, false] {
        let probe =
            Probe::new(
                Duration::ZERO,
                |_, n| if n == 0 { Err(failure("failing")) } else { Ok(Action::await_change()) },
            );
        let probe = if terminal { probe.terminal() } else { probe };
        probe.retry_by(play_model::time::now() + chrono::Duration::seconds(90));
        let backoff = Backoff { initial: 600 * SEC, max: 600 * SEC };
        let (rt, metrics) = runtime(&probe, MemoryLeases::new(), Config { backoff, ..quiet_config() });
        let handle = rt.handle();
        let t0 = Instant::now();
        handle.wake(1);
        let running = Running::start(rt, metrics);
        sleep(3600 * SEC).await;
        running.stop().await;
        let starts: Vec<Duration> = probe.runs_of(1).iter().map(|r| r.started - t0).collect();
        assert_eq!(starts.len(), 2, "terminal: {terminal}: {starts:?}");
        // The wall clock moves on while tokio's is paused: allow for it.
        assert!(starts[1] > 89 * SEC && starts[1] <= 90 * SEC, "terminal: {terminal}: {starts:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn requeue_after_requeue_at_and_wake_at_fire_on_time() {
    let probe = Probe::new(Duration::ZERO, |id, n| match (id, n) {
        (1, 0) => Ok(Action::requeue_after(30 * SEC)),
        (2, 0) => Ok(Action::requeue_at(play_model::time::now() + chrono::Duration::seconds(90))),
        _ => Ok(Action::await_change()),
    });
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), quiet_config());
    let handle = rt.handle();
    let t0 = Instant::now();
    handle.wake(1);
    handle.wake(2);
    handle.wake_at(3, play_model::time::now() + chrono::Duration::seconds(45));
    let running = Running::start(rt, metrics);
    sleep(3600 * SEC).await;
    running.stop().await;
    let starts = |id| probe.runs_of(id).iter().map(|r| r.started - t0).collect::<Vec<_>>();
    assert_eq!(starts(1), [Duration::ZERO, 30 * SEC]);
    let two = starts(2);
    assert_eq!(two.len(), 2);
    // The wall clock moves on while tokio's is paused: allow for it.
    assert!(two[1] > 89 * SEC && two[1] <= 90 * SEC, "{two:?}");
    let three = starts(3);
    assert_eq!(three.len(), 1);
    assert!(three[0] > 44 * SEC && three[0] <= 45 * SEC, "{three:?}");
}

#[tokio::test(start_paused = true)]
async fn resync_visits_every_listed_object_and_skips_failing_ones() {
    let probe =
        Probe::new(Duration::ZERO, |id, _| if id == 3 { Err(failure("down")) } else { Ok(Action::await_change()) })
            .terminal();
    probe.set_listed(&[1, 2, 3]);
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), Config { resync_every: 10 * SEC, ..quiet_config() });
    let t0 = Instant::now();
    let running = Running::start(rt, metrics);
    // Start-up (at once: 3 objects at 250/s), then once in each 10 s period
    // (each object at its own offset in it): [10, 20) and [20, 30).
    sleep(30 * SEC).await;
    running.stop().await;
    for id in [1, 2] {
        let starts: Vec<Duration> = probe.runs_of(id).iter().map(|r| r.started - t0).collect();
        assert_eq!(starts.len(), 3, "{id}: {starts:?}");
        assert!(starts[0] < SEC / 10, "{id}: {starts:?}");
        assert!(starts[1] >= 10 * SEC && starts[1] < 20 * SEC + SEC / 10, "{id}: {starts:?}");
        assert!(starts[2] >= 20 * SEC && starts[2] < 30 * SEC, "{id}: {starts:?}");
    }
    assert_eq!(probe.runs_of(3).len(), 1, "parked by its terminal error");
    assert!(probe.runs_of(4).is_empty());
}

#[tokio::test(start_paused = true)]
async fn external_streams_and_the_waker_trigger_passes() {
    let probe = Probe::ok(Duration::ZERO);
    let waker = ChannelWaker::new();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<i64>();
    let events = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|id| (id, rx)) });
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), quiet_config());
    let rt = rt.wake_from(waker.subscribe(Probe::KIND)).trigger(events).trigger(futures::stream::iter([9]).boxed());
    let running = Running::start(rt, metrics);
    let api: Arc<dyn Waker> = Arc::new(waker.clone());
    api.wake(Wake::Playground(7.into()));
    api.wake(Wake::Playroom(8.into()));
    tx.send(5).unwrap();
    sleep(SEC).await;
    drop(tx);
    api.wake(Wake::Playground(6.into()));
    sleep(SEC).await;
    running.stop().await;
    let mut ids: Vec<i64> = probe.runs().iter().map(|r| r.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, [5, 6, 7, 9], "an ended stream does not stop the others");
}

#[tokio::test(start_paused = true)]
async fn shutdown_lets_the_running_pass_finish_starts_nothing_and_releases() {
    let probe = Probe::ok(10 * SEC);
    let leases = MemoryLeases::new();
    let (rt, metrics) = runtime(&probe, leases.clone(), Config { concurrency: 1, ..quiet_config() });
    let handle = rt.handle();
    let running = Running::start(rt, metrics);
    handle.wake(1);
    handle.wake(2);
    sleep(SEC).await;
    let t_stop = Instant::now();
    running.stop().await;
    let runs = probe.runs();
    assert_eq!(runs.len(), 1, "object 2 never started: {runs:?}");
    assert!(runs[0].ended.unwrap() > t_stop, "the running pass finished after the stop was asked");
    assert!(leases.claim("probe", 1, "another", 60 * SEC).await.unwrap().is_some(), "released");
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_a_pass_after_the_grace_period_and_releases_its_lease() {
    let probe = Probe::ok(3600 * SEC);
    let leases = MemoryLeases::new();
    let config = Config { shutdown_grace: 30 * SEC, ..quiet_config() };
    let (rt, metrics) = runtime(&probe, leases.clone(), config);
    let handle = rt.handle();
    let running = Running::start(rt, metrics);
    handle.wake(1);
    sleep(SEC).await;
    let t_stop = Instant::now();
    running.stop().await;
    assert_eq!(Instant::now() - t_stop, 30 * SEC);
    assert!(leases.claim("probe", 1, "another", 60 * SEC).await.unwrap().is_some(), "released");
}

#[tokio::test(start_paused = true)]
async fn two_replicas_never_reconcile_one_object_at_once_and_renew_long_passes() {
    // Passes longer than the lease: only renewal keeps the other replica out.
    let probe = Probe::ok(150 * SEC);
    let leases = MemoryLeases::new();
    let config = Config { lease_duration: 60 * SEC, lease_busy_retry: SEC, ..quiet_config() };
    let (a, metrics_a) = runtime(&probe, leases.clone(), config.clone());
    let (b, metrics_b) = runtime(&probe, leases.clone(), config);
    let (a, b) = (a.with_replica_id("a"), b.with_replica_id("b"));
    let (ha, hb) = (a.handle(), b.handle());
    let (a, b) = (Running::start(a, metrics_a), Running::start(b, metrics_b));
    for round in 0..20 {
        for id in 0..3 {
            ha.wake(id);
            hb.wake(id);
        }
        sleep(if round % 2 == 0 { 7 * SEC } else { 31 * SEC }).await;
    }
    sleep(600 * SEC).await;
    let (ma, mb) = (a.stop().await, b.stop().await);
    assert_eq!(probe.overlaps(), 0);
    let owners: std::collections::HashSet<String> = probe.runs().iter().map(|r| r.owner.clone()).collect();
    assert_eq!(owners.len(), 2, "both replicas did work");
    assert!(reconciles(&ma, "skipped_lease") + reconciles(&mb, "skipped_lease") > 0);
    for id in 0..3 {
        let tokens: Vec<i64> = probe.runs_of(id).iter().map(|r| r.token).collect();
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens grow: {tokens:?}");
    }
}

/// Leases whose renewal always reports the lease lost.
#[derive(Debug, Clone, Default)]
struct Stolen {
    inner: MemoryLeases,
}

#[async_trait::async_trait]
impl LeaseStore for Stolen {
    async fn claim(
        &self,
        reconciler: &'static str,
        id: i64,
        owner: &str,
        duration: Duration,
    ) -> play_core::Result<Option<play_model::model::lease::Lease>> {
        self.inner.claim(reconciler, id, owner, duration).await
    }
    async fn renew(&self, _: &play_model::model::lease::Lease, _: Duration) -> play_core::Result<bool> {
        Ok(false)
    }
    async fn release(&self, lease: &play_model::model::lease::Lease) -> play_core::Result<()> {
        self.inner.release(lease).await
    }
    async fn expires_at(
        &self,
        reconciler: &'static str,
        id: i64,
    ) -> play_core::Result<Option<play_model::time::Timestamp>> {
        self.inner.expires_at(reconciler, id).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_pass_whose_lease_is_lost_is_dropped() {
    let finished = Arc::new(AtomicBool::new(false));
    let done = finished.clone();
    let probe = Probe::new(600 * SEC, move |_, _| {
        done.store(true, Ordering::SeqCst);
        Ok(Action::await_change())
    });
    let config = Config { lease_duration: 60 * SEC, lease_busy_retry: 3600 * SEC, ..quiet_config() };
    let (rt, metrics) = runtime(&probe, Stolen::default(), config);
    let handle = rt.handle();
    let running = Running::start(rt, metrics);
    handle.wake(1);
    sleep(300 * SEC).await;
    let runs = probe.runs_of(1);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].ended.map(|e| e - runs[0].started), Some(20 * SEC), "dropped at the first renewal");
    let metrics = running.stop().await;
    assert!(!finished.load(Ordering::SeqCst));
    assert_eq!(reconciles(&metrics, "error"), 1);
    assert_eq!(sample(&metrics, r#"play_leases_lost_total{controller="probe"}"#), Some(1.0));
    assert_eq!(sample(&metrics, r#"play_reconcile_errors_total{controller="probe"}"#), Some(1.0));
    assert_eq!(sample(&metrics, r#"play_leases_held{controller="probe"}"#), Some(0.0));
}

#[tokio::test(start_paused = true)]
async fn queue_depth_counts_due_objects_waiting_for_a_worker() {
    let probe = Probe::ok(10 * SEC);
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), Config { concurrency: 1, ..quiet_config() });
    let handle = rt.handle();
    let running = Running::start(rt, metrics.clone());
    handle.wake(1);
    handle.wake(2);
    handle.wake(3);
    handle.wake_after(4, 3600 * SEC);
    sleep(SEC).await;
    let depth = |m: &play_core::metrics::Metrics| {
        m.render()
            .lines()
            .find_map(|l| l.strip_prefix("play_reconcile_queue_depth{reconciler=\"probe\"} "))
            .map(str::to_owned)
    };
    let new_depth = || sample(&metrics, r#"play_workqueue_depth{controller="probe"}"#);
    assert_eq!(depth(&metrics).as_deref(), Some("2"), "1 runs, 2 and 3 wait, 4 is not due");
    assert_eq!(new_depth(), Some(2.0), "controller-runtime's name for the same depth");
    sleep(60 * SEC).await;
    assert_eq!(depth(&metrics).as_deref(), Some("0"));
    assert_eq!(new_depth(), Some(0.0));
    running.stop().await;
}

/// Issue #16: resync visits are spread over the period at a bounded rate,
/// the period stretches to fit the rate, and the first resync after start
/// revisits everything at the start-up rate.
#[tokio::test(start_paused = true)]
async fn resync_visits_are_spread_at_a_bounded_rate() {
    let probe = Probe::ok(Duration::ZERO);
    let ids: Vec<i64> = (1..=200).collect();
    probe.set_listed(&ids);
    // 200 objects at 5/s: a 40 s period (not 10 s); start-up at 100/s: 2 s.
    let config = Config { resync_every: 10 * SEC, resync_rate: 5, startup_rate: 100, concurrency: 8, ..quiet_config() };
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), config);
    let t0 = Instant::now();
    let running = Running::start(rt, metrics);
    sleep(82 * SEC).await;
    running.stop().await;
    let starts: Vec<Duration> = probe.runs().iter().map(|r| r.started - t0).collect();
    let within = |from: Duration, to: Duration| starts.iter().filter(|s| **s >= from && **s < to).count();
    assert_eq!(within(Duration::ZERO, 2 * SEC + SEC / 10), 200, "every object revisited within 2 s of start");
    for id in &ids {
        let runs: Vec<Duration> = probe.runs_of(*id).iter().map(|r| r.started - t0).collect();
        // Start-up, once in [40 s, 80 s), then exactly a period later.
        assert!(runs.len() == 2 || runs.len() == 3, "{id}: {runs:?}");
        assert!(runs[1] >= 40 * SEC && runs[1] < 80 * SEC, "{id}: {runs:?}");
        if let Some(third) = runs.get(2) {
            let gap = *third - runs[1];
            assert!(gap >= 40 * SEC && gap < 40 * SEC + SEC / 10, "{id}: {runs:?}");
        }
    }
    // Steady state: no second holds much more than the rate's share.
    let busiest = (3..80).map(|s| within(s * SEC, (s + 1) * SEC)).max().unwrap_or(0);
    assert!(busiest <= 15, "{busiest} visits in one second at a rate of 5/s");
}

/// Issue #16: a change (a wake) runs before a due backlog of resync visits.
#[tokio::test(start_paused = true)]
async fn a_wake_runs_ahead_of_the_resync_backlog() {
    let probe = Probe::ok(Duration::from_millis(100));
    let ids: Vec<i64> = (1..=1000).collect();
    probe.set_listed(&ids);
    // One slot, 100 ms a pass, 1,000 objects due at once: a 100 s backlog.
    let config = Config { concurrency: 1, startup_rate: 1_000_000, ..quiet_config() };
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), config);
    let handle = rt.handle();
    let running = Running::start(rt, metrics);
    sleep(5 * SEC).await;
    let woken = Instant::now();
    handle.wake(5000);
    sleep(2 * SEC).await;
    running.stop().await;
    let runs = probe.runs_of(5000);
    assert_eq!(runs.len(), 1, "the woken object ran");
    assert!(runs[0].started - woken <= Duration::from_millis(200), "{:?} after the wake", runs[0].started - woken);
    assert!(probe.runs().len() < 100, "the backlog was still there: {}", probe.runs().len());
}

/// Issue #16: a replica that finds an object's lease held by one that
/// crashed (it never renews nor releases) takes the object over when the
/// lease ends, not up to a retry delay after.
#[tokio::test(start_paused = true)]
async fn a_crashed_holders_object_is_taken_over_when_its_lease_ends() {
    let probe = Probe::ok(Duration::ZERO);
    let leases = MemoryLeases::new();
    let t0 = Instant::now();
    // The crashed replica's lease: claimed, never renewed, never released.
    assert!(leases.claim("probe", 1, "crashed", 60 * SEC).await.unwrap().is_some());
    let config = Config { lease_duration: 60 * SEC, lease_busy_retry: 5 * SEC, ..quiet_config() };
    let (rt, metrics) = runtime(&probe, leases.clone(), config);
    let rt = rt.with_replica_id("survivor");
    let handle = rt.handle();
    let running = Running::start(rt, metrics);
    handle.wake(1);
    sleep(90 * SEC).await;
    let metrics = running.stop().await;
    let runs = probe.runs_of(1);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let after = runs[0].started - t0;
    assert!(after >= 60 * SEC && after < 60 * SEC + SEC / 2, "taken over {after:?} after the crash");
    assert!(reconciles(&metrics, "skipped_lease") >= 1);
}
