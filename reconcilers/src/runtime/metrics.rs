//! What one runtime records in the process's metrics: the older
//! `play_reconciles_total` / `play_reconcile_duration_seconds` /
//! `play_reconcile_queue_depth` (label `reconciler`), kept for the
//! dashboards that read them, and controller-runtime's families
//! (`play_core::metrics::ControllerMetrics`, label `controller`). Both are
//! written here, from the same events, so the two can never disagree.
//! Every label is the reconciler's `NAME` (and a result): never an object
//! id.

use std::sync::Arc;
use std::time::Duration;

use play_core::metrics::{ControllerLabels, Metrics, PassResult, ReconcileLabels, ReconcilerLabels, Work};

/// The metrics of the runtime of the reconciler `name`.
pub(super) struct Recorder {
    metrics: Arc<Metrics>,
    name: &'static str,
}

/// The old `result` label of a settled pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Settled {
    /// Done, waits for a change.
    Ok,
    /// Done for now, asked to run again.
    Requeue,
    /// Failed, or the lease was lost or could not be claimed.
    Error,
    /// Failed, not retried until woken.
    Terminal,
    /// Another replica held the lease: no pass ran.
    SkippedLease,
}

impl Settled {
    fn label(self) -> &'static str {
        match self {
            Settled::Ok => "ok",
            Settled::Requeue => "requeue",
            Settled::Error => "error",
            Settled::Terminal => "terminal",
            Settled::SkippedLease => "skipped_lease",
        }
    }

    /// controller-runtime's result: a skipped lease ran nothing, so it is
    /// not a reconcile (it counts as a retry).
    fn pass_result(self) -> Option<PassResult> {
        match self {
            Settled::Ok => Some(PassResult::Success),
            Settled::Requeue => Some(PassResult::Requeue),
            Settled::Error | Settled::Terminal => Some(PassResult::Error),
            Settled::SkippedLease => None,
        }
    }
}

impl Recorder {
    /// Makes the runtime's series exist (at zero) from its start.
    pub(super) fn new(metrics: Arc<Metrics>, name: &'static str) -> Self {
        metrics.controllers.controller_started(name);
        Recorder { metrics, name }
    }

    fn labels(&self) -> ControllerLabels {
        ControllerLabels { controller: self.name }
    }

    /// Objects due and waiting for a worker (or parked for their group's
    /// share), and how many entered the queue since the last call.
    pub(super) fn queue(&self, depth: usize, added: u64) {
        let depth = i64::try_from(depth).unwrap_or(i64::MAX);
        self.metrics.queue_depth.get_or_create(&ReconcilerLabels { reconciler: self.name.to_owned() }).set(depth);
        self.metrics.controllers.workqueue_depth.get_or_create(&self.labels()).set(depth);
        if added > 0 {
            self.metrics.controllers.workqueue_adds.get_or_create(&self.labels()).inc_by(added);
        }
    }

    /// A pass starts after waiting `waited` since it was due; it is in
    /// flight until the returned guard is dropped.
    pub(super) fn started(&self, waited: Duration) -> Work {
        self.metrics.controllers.workqueue_queue_duration.get_or_create(&self.labels()).observe(waited.as_secs_f64());
        self.metrics.controllers.work_started(self.name)
    }

    /// A pass that ran for `elapsed`.
    pub(super) fn ran(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        self.metrics
            .reconcile_duration
            .get_or_create(&ReconcilerLabels { reconciler: self.name.to_owned() })
            .observe(secs);
        self.metrics.controllers.reconcile_time.get_or_create(&self.labels()).observe(secs);
    }

    /// Counts how a pass (or an attempt to start one) ended, in both the
    /// older and controller-runtime's families.
    pub(super) fn settled(&self, settled: Settled) {
        let labels = ReconcileLabels { reconciler: self.name.to_owned(), result: settled.label().to_owned() };
        self.metrics.reconciles.get_or_create(&labels).inc();
        if let Some(result) = settled.pass_result() {
            self.metrics.controllers.reconciled(self.name, result);
        }
    }

    /// The object runs again after a backoff or a busy lease's retry
    /// (controller-runtime's rate-limited requeue).
    pub(super) fn retried(&self) {
        self.metrics.controllers.workqueue_retries.get_or_create(&self.labels()).inc();
    }

    pub(super) fn lease_lost(&self) {
        self.metrics.controllers.leases_lost.get_or_create(&self.labels()).inc();
    }

    /// How many leases this replica's passes hold now.
    pub(super) fn leases_held(&self, held: usize) {
        let held = i64::try_from(held).unwrap_or(i64::MAX);
        self.metrics.controllers.leases_held.get_or_create(&self.labels()).set(held);
    }
}
