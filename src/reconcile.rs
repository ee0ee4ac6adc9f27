//! The reconcile loops `play serve` runs: one runtime per reconciler, each
//! woken by the API through the shared waker for the reconciler's `KIND`
//! (`play_core::wake::Kind`),
//! by its own timers, by a periodic resync, and by whatever extra triggers
//! its registration adds (the Playground runtime: the Playrooms' Docker
//! events).

use std::sync::Arc;

use play_core::metrics::Metrics;
use play_core::repository::RepositoryGateway;
use play_core::secrets::SecretBox;
use play_core::store::{Backend, Store};
use play_core::wake::{ChannelWaker, Kind};
use play_core::webhook::UrlPolicy;
use play_reconcilers::edge::{EdgeConfig, EdgeReconciler};
use play_reconcilers::host::DockerHostGateway;
use play_reconcilers::playground::{PlaygroundConfig, PlaygroundReconciler};
use play_reconcilers::playroom::events::{EventsConfig, PlaygroundEvents};
use play_reconcilers::playroom::sweep::{PlayroomSweep, SweepConfig};
use play_reconcilers::playzone::{PlayzoneSync, SyncConfig};
use play_reconcilers::runtime::{self, Config, Reconciler, Runtime};
use play_reconcilers::webhooks::{Dispatcher, WebhooksConfig};
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
    /// Where webhooks may be sent: the policy the API checks endpoint
    /// URLs with, so the two never disagree.
    pub webhook_urls: UrlPolicy,
    /// Access to Playzones' repositories (the sync loop, builds).
    pub repositories: Arc<dyn RepositoryGateway>,
}

/// The loops' settings from the command line.
#[derive(Clone, Debug)]
pub struct Loops {
    /// The runtime settings every reconciler shares.
    pub runtime: Config,
    /// How often each Playroom is swept: the sweep runtime's resync period.
    pub sweep_interval: std::time::Duration,
    /// How often the list of Playrooms whose Docker events are followed is
    /// refreshed (passes also ask for their Playroom at once).
    pub events_refresh: std::time::Duration,
    /// The edge reconciler's installation-wide settings.
    pub edge: EdgeConfig,
    /// The Playground reconciler's settings.
    pub playground: PlaygroundConfig,
    /// The webhook dispatcher's settings.
    pub webhooks: WebhooksConfig,
    /// The Playzone sync loop's settings.
    pub playzone_sync: SyncConfig,
}

pub fn config(args: &ServeArgs) -> anyhow::Result<Loops> {
    Ok(Loops {
        runtime: Config {
            concurrency: args.reconcile_concurrency.max(1),
            resync_every: args.resync_interval.into(),
            resync_rate: args.resync_rate.max(1),
            startup_rate: args.startup_resync_rate.max(1),
            lease_duration: args.lease_duration.into(),
            ..Config::default()
        },
        sweep_interval: args.sweep_interval.into(),
        events_refresh: args.events_refresh.into(),
        playground: PlaygroundConfig {
            drain: args.rollout_drain.into(),
            build_timeout: args.build_timeout.into(),
            slots: play_reconcilers::playground::SlotsConfig {
                per_replica: args.build_concurrency.max(1),
                per_playroom: args.builds_per_playroom.max(1),
                bytes_per_account: args.build_bytes_per_account,
            },
            registry_policy: UrlPolicy {
                allow_http: true,
                allowlist: UrlPolicy::parse_allowlist(&args.registry_allowlist)
                    .map_err(|e| anyhow::anyhow!("--registry-allowlist: {e}"))?,
            },
            build_network: Some(args.build_network.trim().to_owned()).filter(|n| !n.is_empty()),
            ..PlaygroundConfig::default()
        },
        edge: EdgeConfig {
            image: args.edge_image.clone(),
            admin_dir: args.edge_admin_dir.clone(),
            check_interval: args.edge_check_interval.into(),
            acme_directory: args.edge_acme_directory.clone(),
            acme_root: args.edge_acme_root.clone(),
            ..EdgeConfig::default()
        },
        playzone_sync: SyncConfig { interval: args.playzone_sync_interval.into(), ..SyncConfig::default() },
        webhooks: WebhooksConfig {
            timeout: args.webhook_timeout.into(),
            poll_interval: args.webhook_poll_interval.into(),
            concurrency: args.webhook_concurrency.max(1),
            per_endpoint: args.webhook_per_endpoint.max(1),
            retry_schedule: crate::args::parse_schedule(&args.webhook_retry_schedule)?,
            ..WebhooksConfig::default()
        },
    })
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

/// Where the loops run: the replica they claim leases as, the token that
/// stops them, the tracker `play serve` waits on at shutdown.
struct Spawner<'a> {
    shared: &'a Shared,
    replica: &'a str,
    shutdown: &'a CancellationToken,
    tasks: &'a TaskTracker,
}

impl Spawner<'_> {
    /// Runs `reconciler` under `config`, woken by the API and by whatever
    /// `extra` adds (`Runtime::trigger`).
    fn spawn<R: Reconciler>(&self, reconciler: R, config: Config, extra: impl FnOnce(Runtime<R>) -> Runtime<R>) {
        let runtime = Runtime::new(reconciler, self.shared.store.clone(), self.shared.metrics.clone())
            .with_config(config)
            .with_replica_id(self.replica)
            .wake_from(self.shared.waker.subscribe(R::KIND));
        self.tasks.spawn(extra(runtime).run(self.shutdown.child_token()));
        tracing::info!(reconciler = R::NAME, kind = R::KIND.as_str(), replica = self.replica, "reconcile loop started");
    }
}

/// Starts every reconciler and what feeds them. Add new ones here.
pub fn start_all(
    shared: &Shared,
    loops: &Loops,
    replica: &str,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) -> anyhow::Result<()> {
    let spawner = Spawner { shared, replica, shutdown, tasks };
    let s = shared;

    // Playgrounds, also woken by their Playrooms' Docker events.
    // Each pass asks for its Playroom to be watched, so a new Playroom's
    // events are followed from its first pass, not a refresh later.
    let events = PlaygroundEvents::new(s.store.clone(), s.secrets.clone(), s.gateway.clone())
        .with_config(EventsConfig { refresh: loops.events_refresh, ..EventsConfig::default() });
    let (playground_events, watch, watchers) = events.start(shutdown.child_token());
    tasks.spawn(watchers);
    spawner.spawn(
        PlaygroundReconciler::new(s.store.clone(), s.secrets.clone(), s.gateway.clone())
            .with_config(loops.playground.clone())
            .with_watch(watch)
            .with_repositories(s.repositories.clone())
            .waking_edge(Arc::new(s.waker.clone())),
        loops.runtime.clone(),
        |runtime| runtime.trigger(playground_events),
    );

    // The sweep visits every Playroom once per sweep interval: its resync.
    spawner.spawn(
        PlayroomSweep::new(s.store.clone(), s.secrets.clone(), s.gateway.clone())
            .with_config(SweepConfig { interval: loops.sweep_interval }),
        Config { resync_every: loops.sweep_interval, ..loops.runtime.clone() },
        |runtime| runtime,
    );

    // The edge of every Playroom: woken by the API and the Playground
    // reconciler, and it asks to look again every check interval.
    spawner.spawn(
        EdgeReconciler::new(s.store.clone(), s.secrets.clone(), s.gateway.clone()).with_config(loops.edge.clone()),
        loops.runtime.clone(),
        |runtime| runtime,
    );

    // Playzones: synced when the API asks and on their own schedule (each
    // pass says when the next is due; the resync only catches missed
    // wakes, and a pass that is not due returns at once).
    spawner.spawn(
        PlayzoneSync::new(s.store.clone(), s.secrets.clone(), s.repositories.clone())
            .with_config(loops.playzone_sync.clone()),
        loops.runtime.clone(),
        |runtime| runtime,
    );

    // Webhook deliveries: not a keyed reconciler but a loop over the
    // outbox and the due deliveries (play_reconcilers::webhooks).
    let dispatcher =
        Dispatcher::new(s.store.clone(), s.secrets.clone(), s.webhook_urls.clone(), loops.webhooks.clone(), replica)?
            .with_wakes(s.waker.subscribe(Kind::Webhooks));
    tasks.spawn(dispatcher.run(shutdown.child_token()));
    tracing::info!(replica, "webhook dispatcher started");
    Ok(())
}
