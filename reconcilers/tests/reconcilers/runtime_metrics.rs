//! controller-runtime's metrics of a running runtime (issue #54, item 1),
//! read from what `/metrics` serves (`Metrics::render`), on tokio's paused
//! clock with in-memory leases.

use std::time::Duration;

use crate::runtime_probe::{Probe, Running, failure, quiet_config, reconciles, runtime, sample};
use play_core::metrics::Metrics;
use play_reconcilers::runtime::{Action, MemoryLeases};
use tokio::time::sleep;

const SEC: Duration = Duration::from_secs(1);

/// Every sample of the new families, labelled with the probe's `NAME`.
const SERIES: [&str; 14] = [
    r#"play_reconcile_total{controller="probe",result="success"}"#,
    r#"play_reconcile_total{controller="probe",result="error"}"#,
    r#"play_reconcile_total{controller="probe",result="requeue"}"#,
    r#"play_reconcile_errors_total{controller="probe"}"#,
    r#"play_reconcile_time_seconds_count{controller="probe"}"#,
    r#"play_workqueue_depth{controller="probe"}"#,
    r#"play_workqueue_adds_total{controller="probe"}"#,
    r#"play_workqueue_queue_duration_seconds_count{controller="probe"}"#,
    r#"play_workqueue_work_duration_seconds_count{controller="probe"}"#,
    r#"play_workqueue_retries_total{controller="probe"}"#,
    r#"play_workqueue_unfinished_work_seconds{controller="probe"}"#,
    r#"play_workqueue_longest_running_processor_seconds{controller="probe"}"#,
    r#"play_leases_held{controller="probe"}"#,
    r#"play_leases_lost_total{controller="probe"}"#,
];

fn value(metrics: &Metrics, series: &str) -> f64 {
    sample(metrics, series).unwrap_or_else(|| panic!("{series} missing from:\n{}", metrics.render()))
}

#[tokio::test(start_paused = true)]
async fn passes_that_succeed_fail_and_requeue_are_counted_per_controller() {
    // 1 succeeds; 2 fails once, then succeeds; 3 asks to run again in an hour.
    let probe = Probe::new(SEC / 10, |id, n| match (id, n) {
        (2, 0) => Err(failure("once")),
        (3, _) => Ok(Action::requeue_after(3600 * SEC)),
        _ => Ok(Action::await_change()),
    });
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), quiet_config());
    let handle = rt.handle();
    let running = Running::start(rt, metrics.clone());
    sleep(SEC / 100).await;
    for series in SERIES {
        assert_eq!(sample(&metrics, series), Some(0.0), "{series}: exists at zero once the runtime started");
    }

    for id in 1..=3 {
        handle.wake(id);
    }
    // The passes take 100 ms; 2's retry waits a backoff of at least 1 s.
    sleep(SEC / 2).await;
    let v = |series: &str| value(&metrics, series);
    for series in SERIES {
        assert!(sample(&metrics, series).is_some(), "{series} missing");
    }
    assert_eq!(v(r#"play_reconcile_total{controller="probe",result="success"}"#), 1.0);
    assert_eq!(v(r#"play_reconcile_total{controller="probe",result="error"}"#), 1.0);
    assert_eq!(v(r#"play_reconcile_total{controller="probe",result="requeue"}"#), 1.0);
    assert_eq!(v(r#"play_reconcile_errors_total{controller="probe"}"#), 1.0);
    assert_eq!(v(r#"play_workqueue_retries_total{controller="probe"}"#), 1.0, "2's backoff");
    // Three wakes, 2's retry and 3's timer.
    assert_eq!(v(r#"play_workqueue_adds_total{controller="probe"}"#), 5.0);
    assert_eq!(v(r#"play_reconcile_time_seconds_count{controller="probe"}"#), 3.0);
    assert!(v(r#"play_reconcile_time_seconds_sum{controller="probe"}"#) >= 0.3, "three passes of 100 ms");
    assert_eq!(v(r#"play_workqueue_work_duration_seconds_count{controller="probe"}"#), 3.0);
    assert_eq!(v(r#"play_workqueue_queue_duration_seconds_count{controller="probe"}"#), 3.0);
    assert_eq!(v(r#"play_workqueue_depth{controller="probe"}"#), 0.0);
    assert_eq!(v(r#"play_workqueue_longest_running_processor_seconds{controller="probe"}"#), 0.0, "none running");
    assert_eq!(v(r#"play_leases_held{controller="probe"}"#), 0.0, "released after each pass");
    assert_eq!(v(r#"play_leases_lost_total{controller="probe"}"#), 0.0);

    sleep(5 * SEC).await;
    assert_eq!(v(r#"play_reconcile_total{controller="probe",result="success"}"#), 2.0, "2's retry succeeded");
    assert_eq!(v(r#"play_reconcile_errors_total{controller="probe"}"#), 1.0);
    let metrics = running.stop().await;
    // The older series count the same passes.
    assert_eq!((reconciles(&metrics, "ok"), reconciles(&metrics, "error"), reconciles(&metrics, "requeue")), (2, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_blocked_pass_shows_a_growing_longest_running_processor() {
    let probe = Probe::ok(3600 * SEC);
    let (rt, metrics) = runtime(&probe, MemoryLeases::new(), quiet_config());
    let handle = rt.handle();
    let running = Running::start(rt, metrics.clone());
    handle.wake(1);
    sleep(SEC).await;
    let longest = || value(&metrics, r#"play_workqueue_longest_running_processor_seconds{controller="probe"}"#);
    let unfinished = || value(&metrics, r#"play_workqueue_unfinished_work_seconds{controller="probe"}"#);
    let first = longest();
    assert!(first > 0.0, "{first}");
    assert!(unfinished() > 0.0);
    assert_eq!(value(&metrics, r#"play_leases_held{controller="probe"}"#), 1.0, "the blocked pass holds its lease");

    sleep(60 * SEC).await;
    let later = longest();
    assert!(later >= first + 60.0, "grows while the pass is stuck: {first} then {later}");
    assert!(unfinished() >= later);
    assert_eq!(value(&metrics, r#"play_reconcile_time_seconds_count{controller="probe"}"#), 0.0, "not finished");

    let metrics = running.stop().await;
    assert_eq!(value(&metrics, r#"play_workqueue_longest_running_processor_seconds{controller="probe"}"#), 0.0);
    assert_eq!(value(&metrics, r#"play_leases_held{controller="probe"}"#), 0.0, "released at shutdown");
}
