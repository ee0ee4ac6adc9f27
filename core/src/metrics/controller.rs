//! The reconcile loops' metrics under controller-runtime's names
//! (`controller_runtime_reconcile_*`, `workqueue_*`), prefixed `play_`
//! instead, so dashboards written for Kubernetes controllers read play's
//! loops: one series per loop (`controller` is `Reconciler::NAME`), never
//! per object, so the label sets are bounded by the number of loops.
//!
//! The older `play_reconciles_total`, `play_reconcile_duration_seconds` and
//! `play_reconcile_queue_depth` (labelled `reconciler`) stay beside these:
//! dashboards use them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The loop's `Reconciler::NAME` (`playground`, `edge`, ...).
    pub controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerResultLabels {
    pub controller: &'static str,
    /// [`PassResult::label`].
    pub result: &'static str,
}

/// How a pass ended, in controller-runtime's `result` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassResult {
    /// Done: waits for a change.
    Success,
    /// Failed (retried with backoff, or terminal), or its lease was lost
    /// or could not be claimed.
    Error,
    /// Done for now, asked to run again (a timer, a backoff while waiting).
    Requeue,
}

impl PassResult {
    pub const ALL: [PassResult; 3] = [PassResult::Success, PassResult::Error, PassResult::Requeue];

    pub fn label(self) -> &'static str {
        match self {
            PassResult::Success => "success",
            PassResult::Error => "error",
            PassResult::Requeue => "requeue",
        }
    }
}

/// controller-runtime's reconcile-time buckets: 5 ms to 60 s.
fn reconcile_time_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5,
        1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

/// controller-runtime's workqueue buckets: 10 ns to 1,000 s.
fn workqueue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

type Histograms = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// The passes running now, per controller, with their start instants: the
/// two stuck-thread gauges are computed from them at scrape time, so they
/// grow while a pass hangs even though nothing records anything.
#[derive(Debug, Default)]
struct InFlight {
    next: AtomicU64,
    /// Every controller started in this process has an entry, empty when
    /// idle, so its gauges read 0 rather than vanish.
    passes: Mutex<BTreeMap<&'static str, HashMap<u64, Instant>>>,
}

impl InFlight {
    fn passes(&self) -> MutexGuard<'_, BTreeMap<&'static str, HashMap<u64, Instant>>> {
        // Inserts and removes only: never half-updated.
        self.passes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A stuck-thread gauge: its name, its help, and its value from the ages
/// (seconds) of the passes in flight.
type StuckGauge = (&'static str, &'static str, fn(&[f64]) -> f64);

/// Encodes the two stuck-thread gauges from [`InFlight`] at each scrape.
#[derive(Debug)]
struct StuckGauges(Arc<InFlight>);

impl Collector for StuckGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now = Instant::now();
        let ages: Vec<(&'static str, Vec<f64>)> = self
            .0
            .passes()
            .iter()
            .map(|(&controller, passes)| {
                (controller, passes.values().map(|&started| (now - started).as_secs_f64()).collect())
            })
            .collect();
        let gauges: [StuckGauge; 2] = [
            (
                "workqueue_unfinished_work_seconds",
                "Seconds of work done by passes still running (large values indicate stuck threads)",
                |ages| ages.iter().sum(),
            ),
            (
                "workqueue_longest_running_processor_seconds",
                "Seconds the longest-running pass has been running (large values indicate stuck threads)",
                |ages| ages.iter().copied().fold(0.0, f64::max),
            ),
        ];
        for (name, help, value) in gauges {
            let mut family = encoder.encode_descriptor(name, help, None, ConstGauge::new(0.0).metric_type())?;
            for (controller, ages) in &ages {
                let labels = ControllerLabels { controller };
                ConstGauge::new(value(ages)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// One pass of a controller, from its start on a worker until it is
/// dropped (finished, panicked or aborted alike): it counts in the
/// stuck-thread gauges meanwhile, and its life is observed in
/// `play_workqueue_work_duration_seconds` when it ends.
#[derive(Debug)]
pub struct Work {
    controller: &'static str,
    key: u64,
    started: Instant,
    in_flight: Arc<InFlight>,
    durations: Histograms,
}

impl Drop for Work {
    fn drop(&mut self) {
        if let Some(passes) = self.in_flight.passes().get_mut(self.controller) {
            passes.remove(&self.key);
        }
        let labels = ControllerLabels { controller: self.controller };
        self.durations.get_or_create(&labels).observe(self.started.elapsed().as_secs_f64());
    }
}

/// The families, registered once in the process's registry by
/// [`super::Metrics::new`]; each field is the family of the same name
/// (`play_` + field, counters with `_total`), whose meaning
/// `docs/metrics.md` gives. Recorded by the reconcile runtime
/// (`play_reconcilers::runtime`) and the webhook dispatcher.
#[derive(Debug)]
pub struct ControllerMetrics {
    pub reconcile_total: Family<ControllerResultLabels, Counter>,
    pub reconcile_errors: Family<ControllerLabels, Counter>,
    pub reconcile_time: Histograms,
    pub workqueue_depth: Family<ControllerLabels, Gauge>,
    pub workqueue_adds: Family<ControllerLabels, Counter>,
    pub workqueue_queue_duration: Histograms,
    pub workqueue_work_duration: Histograms,
    pub workqueue_retries: Family<ControllerLabels, Counter>,
    pub leases_held: Family<ControllerLabels, Gauge>,
    pub leases_lost: Family<ControllerLabels, Counter>,
    in_flight: Arc<InFlight>,
}

impl ControllerMetrics {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let histograms = |constructor: fn() -> Histogram| Histograms::new_with_constructor(constructor);
        let metrics = ControllerMetrics {
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: histograms(reconcile_time_histogram),
            workqueue_depth: Family::default(),
            workqueue_adds: Family::default(),
            workqueue_queue_duration: histograms(workqueue_histogram),
            workqueue_work_duration: histograms(workqueue_histogram),
            workqueue_retries: Family::default(),
            leases_held: Family::default(),
            leases_lost: Family::default(),
            in_flight: Arc::default(),
        };
        let r = registry;
        r.register("reconcile", "Reconcile passes per controller and result", metrics.reconcile_total.clone());
        r.register("reconcile_errors", "Reconcile passes that failed", metrics.reconcile_errors.clone());
        r.register("reconcile_time_seconds", "Duration of one reconcile pass", metrics.reconcile_time.clone());
        r.register("workqueue_depth", "Objects due and waiting for a worker", metrics.workqueue_depth.clone());
        r.register("workqueue_adds", "Objects added to the queue", metrics.workqueue_adds.clone());
        r.register(
            "workqueue_queue_duration_seconds",
            "How long an object waited in the queue, from due to started",
            metrics.workqueue_queue_duration.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "How long one pass's work took on its worker, lease claim and release included",
            metrics.workqueue_work_duration.clone(),
        );
        r.register(
            "workqueue_retries",
            "Objects requeued after a backoff or a busy lease",
            metrics.workqueue_retries.clone(),
        );
        r.register("leases_held", "Object leases this replica holds now", metrics.leases_held.clone());
        r.register("leases_lost", "Passes dropped because their lease was lost", metrics.leases_lost.clone());
        r.register_collector(Box::new(StuckGauges(metrics.in_flight.clone())));
        metrics
    }

    /// Makes every series of `controller` exist, at zero, so a dashboard
    /// sees a loop that has not run a pass yet. Called when its runtime
    /// starts.
    pub fn controller_started(&self, controller: &'static str) {
        self.passes_started(controller);
        // `get_or_create` creates the series; its read guard is dropped at once.
        let labels = ControllerLabels { controller };
        drop(self.workqueue_depth.get_or_create(&labels));
        drop(self.workqueue_adds.get_or_create(&labels));
        drop(self.workqueue_queue_duration.get_or_create(&labels));
        drop(self.workqueue_retries.get_or_create(&labels));
        drop(self.leases_held.get_or_create(&labels));
        drop(self.leases_lost.get_or_create(&labels));
    }

    /// [`ControllerMetrics::controller_started`] for a loop that runs
    /// passes but has neither this process's queue nor leases (the webhook
    /// dispatcher, whose deliveries are claimed rows in the store): only
    /// the `reconcile_*` series, the work duration and the stuck-thread
    /// gauges, so the others are not shown as a constant 0.
    pub fn passes_started(&self, controller: &'static str) {
        let labels = ControllerLabels { controller };
        for result in PassResult::ALL {
            drop(self.reconcile_total.get_or_create(&ControllerResultLabels { controller, result: result.label() }));
        }
        drop(self.reconcile_errors.get_or_create(&labels));
        drop(self.reconcile_time.get_or_create(&labels));
        drop(self.workqueue_work_duration.get_or_create(&labels));
        self.in_flight.passes().entry(controller).or_default();
    }

    /// Counts one pass's result (also when no pass ran because its lease
    /// could not be claimed: an error).
    pub fn reconciled(&self, controller: &'static str, result: PassResult) {
        self.reconcile_total.get_or_create(&ControllerResultLabels { controller, result: result.label() }).inc();
        if result == PassResult::Error {
            self.reconcile_errors.get_or_create(&ControllerLabels { controller }).inc();
        }
    }

    /// A pass of `controller` starts on a worker now: it is in flight
    /// until the returned [`Work`] is dropped.
    pub fn work_started(&self, controller: &'static str) -> Work {
        let key = self.in_flight.next.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        self.in_flight.passes().entry(controller).or_default().insert(key, started);
        Work {
            controller,
            key,
            started,
            in_flight: self.in_flight.clone(),
            durations: self.workqueue_work_duration.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Metrics;
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_pass_in_flight_shows_in_the_stuck_thread_gauges_until_dropped() {
        let metrics = Metrics::new();
        metrics.controllers.controller_started("edge");
        let work = metrics.controllers.work_started("edge");
        tokio::time::advance(std::time::Duration::from_secs(3)).await;
        let text = metrics.render();
        assert!(text.contains("# TYPE play_workqueue_longest_running_processor_seconds gauge"), "{text}");
        assert!(text.contains(r#"play_workqueue_longest_running_processor_seconds{controller="edge"} 3.0"#), "{text}");
        assert!(text.contains(r#"play_workqueue_unfinished_work_seconds{controller="edge"} 3.0"#), "{text}");
        drop(work);
        let text = metrics.render();
        assert!(text.contains(r#"play_workqueue_longest_running_processor_seconds{controller="edge"} 0.0"#), "{text}");
        assert!(text.contains(r#"play_workqueue_work_duration_seconds_count{controller="edge"} 1"#), "{text}");
    }

    #[test]
    fn an_error_counts_in_both_reconcile_families() {
        let metrics = Metrics::new();
        metrics.controllers.reconciled("schedule", PassResult::Error);
        let text = metrics.render();
        assert!(text.contains(r#"play_reconcile_total{controller="schedule",result="error"} 1"#), "{text}");
        assert!(text.contains(r#"play_reconcile_errors_total{controller="schedule"} 1"#), "{text}");
    }
}
