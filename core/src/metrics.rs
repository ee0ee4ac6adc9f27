//! Process-wide metrics, exposed by the API at `/metrics` in Prometheus text
//! format.
//!
//! One `Metrics` value is built at start-up and shared (`Arc`) by the API and
//! every reconciler and host connection, so all series land in one registry.
//! Families are created here, in one place, so names and label sets cannot
//! drift between the code that records and the docs that describe them.

mod controller;

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub use controller::{ControllerLabels, ControllerMetrics, ControllerResultLabels, PassResult, Work};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    pub method: String,
    /// The matched route template (`/api/keys/{id}`), never the raw path, so
    /// the label set stays bounded.
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RemoteCallLabels {
    /// `playroom:<id>` or `local`.
    pub host: String,
    /// What was asked of the host: `ssh_connect`, `docker_ping`, ...
    pub operation: String,
    /// `ok`, `error` or `timeout`.
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    pub reconciler: String,
    /// `ok`, `requeue`, `error`, `terminal`, or `skipped_lease` when another
    /// replica holds the object's lease.
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcilerLabels {
    pub reconciler: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WakeLineLabels {
    /// What became of a wake listener's line in the edge's activity
    /// monitor: `ignored` (no sleeping Playground of that edge),
    /// `coalesced` (within the cooldown of the Playground's last wake, or
    /// one already pending), `over_rate` (over the monitor's rate, left for
    /// a later tick); or the store's answer to a line taken to it, or to
    /// the one recheck that follows coalesced and deferred lines: `woke`
    /// (a write woke the Playground), `awake` (found awake already: a read,
    /// no write) or `failed`.
    pub outcome: &'static str,
}

fn duration_histogram() -> Histogram {
    // 1 ms .. ~65 s
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

pub struct Metrics {
    registry: Mutex<Registry>,
    pub http_requests: Family<HttpLabels, Counter>,
    pub http_duration: Family<HttpLabels, Histogram, fn() -> Histogram>,
    pub remote_calls: Family<RemoteCallLabels, Counter>,
    pub remote_call_duration: Family<RemoteCallLabels, Histogram, fn() -> Histogram>,
    pub reconciles: Family<ReconcileLabels, Counter>,
    pub reconcile_duration: Family<ReconcilerLabels, Histogram, fn() -> Histogram>,
    pub queue_depth: Family<ReconcilerLabels, Gauge>,
    pub edge_wake_lines: Family<WakeLineLabels, Counter>,
    /// The loops' metrics under controller-runtime's names.
    pub controllers: ControllerMetrics,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("play");
        let http_requests = Family::<HttpLabels, Counter>::default();
        let http_duration = Family::<HttpLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram as fn() -> Histogram,
        );
        let remote_calls = Family::<RemoteCallLabels, Counter>::default();
        let remote_call_duration = Family::<RemoteCallLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram as fn() -> Histogram,
        );
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        let reconcile_duration = Family::<ReconcilerLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram as fn() -> Histogram,
        );
        let queue_depth = Family::<ReconcilerLabels, Gauge>::default();
        let edge_wake_lines = Family::<WakeLineLabels, Counter>::default();

        registry.register("http_requests", "HTTP requests by route and status", http_requests.clone());
        registry.register(
            "http_request_duration_seconds",
            "HTTP request duration by route and status",
            http_duration.clone(),
        );
        registry.register("remote_calls", "Calls to Playroom hosts (SSH, Docker) by outcome", remote_calls.clone());
        registry.register(
            "remote_call_duration_seconds",
            "Duration of calls to Playroom hosts",
            remote_call_duration.clone(),
        );
        registry.register("reconciles", "Reconcile passes by result", reconciles.clone());
        registry.register("reconcile_duration_seconds", "Duration of one reconcile pass", reconcile_duration.clone());
        registry.register("reconcile_queue_depth", "Objects waiting in a reconciler's queue", queue_depth.clone());
        registry.register(
            "edge_wake_lines",
            "Wake listener lines read by the edge activity monitors, by outcome",
            edge_wake_lines.clone(),
        );
        let controllers = ControllerMetrics::register(&mut registry);

        Metrics {
            registry: Mutex::new(registry),
            http_requests,
            http_duration,
            remote_calls,
            remote_call_duration,
            reconciles,
            reconcile_duration,
            queue_depth,
            edge_wake_lines,
            controllers,
        }
    }

    /// Records one remote call: its outcome counter and its duration.
    pub fn record_remote_call(&self, host: &str, operation: &str, outcome: &str, elapsed: Duration) {
        let labels =
            RemoteCallLabels { host: host.to_owned(), operation: operation.to_owned(), outcome: outcome.to_owned() };
        self.remote_calls.get_or_create(&labels).inc();
        self.remote_call_duration.get_or_create(&labels).observe(elapsed.as_secs_f64());
    }

    /// Exposes `store`'s count of write transactions
    /// (`play_store_write_transactions_total`): called once, where the
    /// process wires its store to its metrics (`play serve`).
    pub fn register_store(&self, store: &play_store::Store) {
        let mut registry = match self.registry.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        registry.register(
            "store_write_transactions",
            "Write transactions begun on the store (on SQLite each holds the single writer)",
            store.write_transactions().clone(),
        );
    }

    /// Exposes `metric` as `play_<name>`: for the metrics of a part of
    /// the process that is not core's (the scheduled backups), registered
    /// once where `play serve` wires it.
    pub fn register(&self, name: &str, help: &str, metric: impl prometheus_client::registry::Metric) {
        let mut registry = match self.registry.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        registry.register(name, help, metric);
    }

    /// The whole registry in Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = match self.registry.lock() {
            Ok(guard) => guard,
            // A panic while encoding leaves the registry itself intact.
            Err(poisoned) => poisoned.into_inner(),
        };
        if encode(&mut out, &registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_calls_are_rendered_with_their_labels() {
        let metrics = Metrics::new();
        metrics.record_remote_call("playroom:1", "docker_ping", "ok", Duration::from_millis(3));
        let text = metrics.render();
        assert!(
            text.contains(r#"play_remote_calls_total{host="playroom:1",operation="docker_ping",outcome="ok"} 1"#),
            "{text}"
        );
        assert!(text.contains("play_remote_call_duration_seconds_bucket"), "{text}");
    }

    #[tokio::test]
    async fn the_store_write_transactions_are_rendered_once_registered() {
        let db = play_store::testing::store().await;
        let metrics = Metrics::new();
        metrics.register_store(&db.store);
        let before = db.store.write_transactions().get();
        let tx = db.store.write().await.unwrap();
        tx.commit().await.unwrap();
        let text = metrics.render();
        assert!(text.contains(&format!("play_store_write_transactions_total {}", before + 1)), "{text}");
    }
}
