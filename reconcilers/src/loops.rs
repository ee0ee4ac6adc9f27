//! The reconcile loops a `play` process runs, listed once: [`start_all`]
//! is what `play serve` starts, and the end-to-end harness builds its
//! loops with the same [`Shared`] constructors, so a loop wired one way in
//! production cannot be wired another way in the tests.
//!
//! Each keyed reconciler runs under its own [`Runtime`], woken by the API
//! through the shared waker for the reconciler's `KIND`
//! (`play_core::wake::Kind`), by its own timers, by a periodic resync, and
//! by whatever extra triggers its registration adds (the Playground
//! runtime: the Playrooms' Docker events).

use std::sync::Arc;
use std::time::Duration;

use play_core::metrics::Metrics;
use play_core::wake::{ChannelWaker, Kind};
use play_model::playground::LifePolicy;
use play_model::repository::RepositoryGateway;
use play_model::secrets::SecretBox;
use play_model::webhook::UrlPolicy;
use play_store::Store;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::edge::{EdgeConfig, EdgeReconciler};
use crate::heartbeat::Heartbeat;
use crate::host::DockerHostGateway;
use crate::playground::{PlaygroundConfig, PlaygroundReconciler};
use crate::playroom::events::{EventsConfig, PlaygroundEvents};
use crate::playroom::sweep::{PlayroomSweep, SweepConfig};
use crate::playzone::{PlayzoneSync, SyncConfig};
use crate::runtime::{Config, Handle, Reconciler, Runtime};
use crate::schedule::{ScheduleLoop, ScheduleLoopConfig};
use crate::trigger::{TriggerLoop, TriggerLoopConfig};
use crate::wake_relay::start as relay_wakes;
use crate::webhooks::{Dispatcher, WebhooksConfig};

/// Everything a reconciler may need, built once per process.
#[derive(Clone)]
pub struct Shared {
    pub store: Store,
    pub secrets: SecretBox,
    pub gateway: DockerHostGateway,
    pub metrics: Arc<Metrics>,
    /// The API wakes the loops through it, and the Playground reconciler
    /// wakes the edge.
    pub waker: ChannelWaker,
    /// Where webhooks may be sent: the policy the API checks endpoint
    /// URLs with, so the two never disagree.
    pub webhook_urls: UrlPolicy,
    /// Access to Playzones' repositories (the sync loop, builds).
    pub repositories: Arc<dyn RepositoryGateway>,
    /// How long Playgrounds live and when those that inherit their
    /// `sleep_after` sleep: the value the API was given, so the loops
    /// and the API agree (`play_model::playground::policy`).
    pub life: LifePolicy,
}

/// The loops' settings.
#[derive(Clone, Debug)]
pub struct Loops {
    /// The runtime settings every reconciler shares.
    pub runtime: Config,
    /// How often each Playroom is swept: the sweep runtime's resync period.
    pub sweep_interval: Duration,
    /// How often the list of Playrooms whose Docker events are followed is
    /// refreshed (passes also ask for their Playroom at once).
    pub events_refresh: Duration,
    /// The edge reconciler's installation-wide settings.
    pub edge: EdgeConfig,
    /// The Playground reconciler's settings.
    pub playground: PlaygroundConfig,
    /// The webhook dispatcher's settings.
    pub webhooks: WebhooksConfig,
    /// The Playzone sync loop's settings.
    pub playzone_sync: SyncConfig,
    /// The schedule loop's settings (`play serve` gives it the API's
    /// bounds of a launch).
    pub schedules: ScheduleLoopConfig,
    /// The trigger loop's settings (`play serve` gives it the API's
    /// bounds of a launch).
    pub triggers: TriggerLoopConfig,
}

/// The handles without the metrics registry (which has no `Debug`).
impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("store", &self.store)
            .field("gateway", &self.gateway)
            .field("waker", &self.waker)
            .field("webhook_urls", &self.webhook_urls)
            .field("repositories", &self.repositories)
            .field("life", &self.life)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// The Playground reconciler: builds read repositories through
    /// [`Shared::repositories`], and a pass that changes what the edge
    /// routes wakes the edge through [`Shared::waker`].
    pub fn playgrounds(&self, config: PlaygroundConfig) -> PlaygroundReconciler {
        PlaygroundReconciler::new(self.store.clone(), self.secrets.clone(), self.gateway.clone())
            .with_config(config)
            .with_life(self.life)
            .with_repositories(self.repositories.clone())
            .waking_edge(Arc::new(self.waker.clone()))
    }

    /// The edge reconciler of every Playroom.
    pub fn edges(&self, config: EdgeConfig) -> EdgeReconciler {
        EdgeReconciler::new(self.store.clone(), self.secrets.clone(), self.gateway.clone())
            .with_config(config)
            .with_life(self.life)
            .waking_playgrounds(Arc::new(self.waker.clone()))
    }

    /// The schedule loop: its runs live as [`Shared::life`] says.
    pub fn schedules(&self, config: ScheduleLoopConfig) -> ScheduleLoop {
        ScheduleLoop::new(self.store.clone(), self.secrets.clone(), Arc::new(self.waker.clone()))
            .with_config(config)
            .with_life(self.life)
    }

    /// The trigger loop: its Playgrounds live as [`Shared::life`] says.
    pub fn triggers(&self, config: TriggerLoopConfig) -> TriggerLoop {
        TriggerLoop::new(self.store.clone(), self.secrets.clone()).with_config(config).with_life(self.life)
    }

    /// The Playzone sync loop.
    pub fn playzone_sync(&self, config: SyncConfig) -> PlayzoneSync {
        // A sync's commit wakes the triggers that follow the Playzone
        // (`play_store::playzone_branches::record_sync`).
        PlayzoneSync::new(self.store.clone(), self.secrets.clone(), self.repositories.clone()).with_config(config)
    }

    /// `reconciler` under `config` as `replica`, woken through
    /// [`Shared::waker`] for its `KIND`.
    pub fn runtime<R: Reconciler>(&self, reconciler: R, config: Config, replica: &str) -> Runtime<R> {
        Runtime::new(reconciler, self.store.clone(), self.metrics.clone())
            .with_config(config)
            .with_replica_id(replica)
            .wake_from(self.waker.subscribe(R::KIND))
            .remote_wakes_from(self.waker.subscribe_remote(R::KIND))
    }
}

/// Where the loops run: the replica they claim leases as, the token that
/// stops them, the tracker the process waits on at shutdown.
struct Spawner<'a> {
    shared: &'a Shared,
    replica: &'a str,
    shutdown: &'a CancellationToken,
    tasks: &'a TaskTracker,
}

impl Spawner<'_> {
    /// Runs `reconciler` under `config`, woken by the API and by whatever
    /// `extra` adds (`Runtime::trigger`).
    fn spawn<R: Reconciler>(
        &self,
        reconciler: R,
        config: Config,
        extra: impl FnOnce(Runtime<R>) -> Runtime<R>,
    ) -> Handle {
        let runtime = self.shared.runtime(reconciler, config, self.replica);
        let handle = runtime.handle();
        self.tasks.spawn(extra(runtime).run(self.shutdown.child_token()));
        tracing::info!(reconciler = R::NAME, kind = R::KIND.as_str(), replica = self.replica, "reconcile loop started");
        handle
    }
}

/// Starts every reconciler and what feeds them, as `replica`, until
/// `shutdown`; their tasks go to `tasks`. Add new loops here.
///
/// # Errors
/// When the webhook dispatcher cannot be built (its HTTP client).
pub fn start_all(
    shared: &Shared,
    loops: &Loops,
    replica: &str,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) -> crate::Result<()> {
    let spawner = Spawner { shared, replica, shutdown, tasks };
    let s = shared;
    // Wakes to and from the other replicas (PostgreSQL only).
    relay_wakes(&s.store, &s.waker, replica, shutdown, tasks);

    // Playgrounds, also woken by their Playrooms' Docker events.
    // Each pass asks for its Playroom to be watched, so a new Playroom's
    // events are followed from its first pass, not a refresh later.
    let events = PlaygroundEvents::new(s.store.clone(), s.secrets.clone(), s.gateway.clone())
        .with_config(EventsConfig { refresh: loops.events_refresh, ..EventsConfig::default() });
    let (playground_events, watch, watchers) = events.start(shutdown.child_token());
    tasks.spawn(watchers);
    let playgrounds =
        spawner.spawn(s.playgrounds(loops.playground.clone()).with_watch(watch), loops.runtime.clone(), |runtime| {
            runtime.trigger(playground_events)
        });

    // This replica's heartbeat; the Playgrounds a silent replica left
    // unconverged are woken here (crate::heartbeat).
    let heartbeat = Heartbeat::new(s.store.clone(), replica, loops.runtime.lease_duration);
    tasks.spawn(heartbeat.run(move |id| playgrounds.wake(id), shutdown.child_token()));

    // The sweep visits every Playroom once per sweep interval: its resync.
    spawner.spawn(
        PlayroomSweep::new(s.store.clone(), s.secrets.clone(), s.gateway.clone())
            .with_config(SweepConfig { interval: loops.sweep_interval }),
        Config { resync_every: loops.sweep_interval, ..loops.runtime.clone() },
        |runtime| runtime,
    );

    // The edge of every Playroom: woken by the API and the Playground
    // reconciler, and it asks to look again every check interval.
    spawner.spawn(s.edges(loops.edge.clone()), loops.runtime.clone(), |runtime| runtime);

    // Playzones: synced when the API asks and on their own schedule (each
    // pass says when the next is due; the resync only catches missed
    // wakes, and a pass that is not due returns at once).
    spawner.spawn(s.playzone_sync(loops.playzone_sync.clone()), loops.runtime.clone(), |runtime| runtime);

    // Schedules: each pass asks for the next fire time (or a poll while a
    // run is open); the API wakes one whose settings changed.
    spawner.spawn(s.schedules(loops.schedules.clone()), loops.runtime.clone(), |runtime| runtime);

    // Triggers: woken by their template's changes and their Playzone's
    // syncs; each pass asks to run again at the trigger interval.
    spawner.spawn(s.triggers(loops.triggers.clone()), loops.runtime.clone(), |runtime| runtime);

    // Webhook deliveries: not a keyed reconciler but a loop over the
    // outbox and the due deliveries (crate::webhooks).
    let dispatcher =
        Dispatcher::new(s.store.clone(), s.secrets.clone(), s.webhook_urls.clone(), loops.webhooks.clone(), replica)?
            .with_wakes(s.waker.subscribe(Kind::Webhooks))
            .with_metrics(s.metrics.clone());
    tasks.spawn(dispatcher.run(shutdown.child_token()));
    tracing::info!(replica, "webhook dispatcher started");
    Ok(())
}
