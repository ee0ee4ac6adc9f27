//! The reconcile loops `play serve` runs: one runtime per reconciler, each
//! woken by the API through the shared waker under the reconciler's `NAME`,
//! by its own timers, and by a periodic resync.

use std::sync::Arc;

use play_core::metrics::Metrics;
use play_core::secrets::SecretBox;
use play_core::store::{Backend, Store};
use play_core::wake::ChannelWaker;
use play_reconcilers::host::DockerHostGateway;
use play_reconcilers::playground::PlaygroundReconciler;
use play_reconcilers::runtime::{self, Config, Reconciler, Runtime};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::args::ServeArgs;

/// Everything a reconciler may need, built once by `play serve`.
pub struct Shared {
    pub store: Store,
    pub secrets: SecretBox,
    pub gateway: DockerHostGateway,
    pub metrics: Arc<Metrics>,
    pub waker: ChannelWaker,
}

/// The runtime settings from the command line.
pub fn config(args: &ServeArgs) -> Config {
    Config {
        concurrency: args.reconcile_concurrency.max(1),
        resync_every: args.resync_interval,
        lease_duration: args.lease_duration,
        ..Config::default()
    }
}

/// This process's lease owner. SQLite runs one replica, so a fixed id lets a
/// restarted process take its own leases back at once instead of waiting for
/// them to expire; PostgreSQL replicas each get a random one.
pub fn replica_id(args: &ServeArgs, backend: Backend) -> String {
    match (&args.replica_id, backend) {
        (Some(id), _) => id.clone(),
        (None, Backend::Sqlite) => "local".to_owned(),
        (None, Backend::Postgres) => runtime::replica_id().to_owned(),
    }
}

fn spawn<R: Reconciler>(
    reconciler: R,
    shared: &Shared,
    config: &Config,
    replica: &str,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) {
    let runtime = Runtime::new(reconciler, shared.store.clone(), shared.metrics.clone())
        .with_config(config.clone())
        .with_replica_id(replica)
        .wake_from(shared.waker.subscribe(R::NAME));
    tasks.spawn(runtime.run(shutdown.child_token()));
    tracing::info!(reconciler = R::NAME, replica, "reconcile loop started");
}

/// Starts every reconciler. Add new ones here.
pub fn start_all(shared: &Shared, config: &Config, replica: &str, shutdown: &CancellationToken, tasks: &TaskTracker) {
    spawn(
        PlaygroundReconciler::new(shared.store.clone(), shared.secrets.clone(), shared.gateway.clone()),
        shared,
        config,
        replica,
        shutdown,
        tasks,
    );
}
