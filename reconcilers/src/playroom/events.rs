//! Docker event wake-ups: each Playroom's engine tells the Playground
//! runtime when a container of a Playground changed behind play's back.
//!
//! [`PlaygroundEvents::start`] returns a stream of Playground ids, to hand to
//! the Playground runtime with `Runtime::trigger`, a [`WatchHandle`] for the
//! Playground reconciler, and the task that feeds them:
//!
//! - A **supervisor** lists the Playrooms that have Playgrounds, starts a
//!   watcher for each new one, stops the watchers of Playrooms that are gone
//!   or have no Playground left, and restarts a watcher whose Playroom's
//!   connection settings changed. It does so every [`EventsConfig::refresh`]
//!   and, at once, whenever a pass asks for a Playroom it does not watch
//!   ([`WatchHandle::ensure`]): the Playground reconciler asks at the start
//!   of every pass, so a Playroom is watched from its first Playground's
//!   first pass, not up to a refresh later. The request only says "look
//!   now": the supervisor reads the list from the store either way.
//! - A **watcher** follows its Playroom's `/events` stream over the pooled
//!   connection, filtered by the engine to container events of this
//!   installation (`label=dev.play.installation=<id>`) that say a container
//!   changed state ([`ACTIONS`]), and sends the id in each event's
//!   `dev.play.playground` label. Healthcheck `exec_*` events are not asked
//!   for: they would wake a Playground every healthcheck interval. Wake-ups
//!   of one Playground are spaced by at least [`EventsConfig::cooldown`]
//!   (later ones are held back, not dropped).
//! - On **every** connect, the first included, the watcher reads the
//!   engine's clock, subscribes to events from that instant on (`since`),
//!   and sends every Playground id of the Playroom. So there is no window in
//!   which a change goes unseen: a change after that instant arrives as an
//!   event, and one before it (while the Playroom was not yet watched, or
//!   the stream was down) is found by the passes the wake-up starts, which
//!   observe the host after it. Playgrounds that were backing off because
//!   the host was down are retried at once.
//! - When the stream fails or ends (SSH dropped, engine restarted) the
//!   watcher reconnects, reloading the Playroom's settings each time: at
//!   once after a stream that stayed open [`EventsConfig::stable_after`],
//!   else after a jittered backoff ([`EventsConfig::backoff`]) that grows
//!   with each stream that ended sooner (each open wakes every Playground
//!   of the Playroom, so a stream that opens and drops in a loop must not
//!   do so at full speed). A host that cannot be reached at all is tried
//!   again every [`EventsConfig::probe_every`] (1 s), without backoff: an
//!   attempt that fails to connect wakes nothing, and the host's return
//!   is seen, and its Playgrounds' errors cleared, within about that.
//!
//! # Guarantees
//!
//! Events are only a latency optimisation. Nothing here is needed for
//! correctness: passes are level-triggered and the runtime's resync visits
//! every Playground anyway. Within that, a change is never left to the
//! resync while its Playroom's engine answers: one made while no stream was
//! open (before the Playroom was watched, or while the stream was down) is
//! followed by the wake-up of every Playground when a stream opens, and one
//! made after that by an event (`since`). A wake-up lost anyway (the runtime
//! gone, a watcher stopped mid-way) delays a repair until the next resync at
//! worst.
//! An id sent twice costs at most one extra (cheap) pass: the runtime's queue
//! merges requests for one id. The runtime's own passes cause events too
//! (starting a container): they wake the Playground once more, and that pass
//! finds nothing to do.
//!
//! # Caveats
//!
//! - Every replica watches every Playroom (one extra channel on the pooled
//!   SSH connection each); the lease decides which replica runs the pass.
//! - A stream that stays open but silent is only noticed as dead when the
//!   SSH keepalives fail (`HostConfig::keepalive_*`).
//!
//! Owns following the Playrooms' event streams and turning them into
//! Playground ids. It never reconciles anything itself nor writes the
//! store: what a wake-up leads to is the Playground reconciler's.

mod throttle;
mod watcher;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use play_model::model::playroom::WatchedPlayroom;
use play_model::secrets::SecretBox;
use play_store::Store;
use play_store::sweep;
use throttle::{Spacing, Wake};
use tokio::sync::mpsc;
use tokio::task::{Id, JoinSet};
use tokio_util::sync::CancellationToken;
use watcher::Watcher;
pub use watcher::playground_of;

use crate::host::DockerHostGateway;
use crate::runtime::Backoff;

/// Container events that may mean a Playground's containers are no longer
/// what its last pass left: the engine's names (`health_status` matches
/// `health_status: healthy` and the like).
pub const ACTIONS: &[&str] =
    &["start", "restart", "die", "kill", "oom", "stop", "pause", "unpause", "destroy", "health_status"];

/// Tuning of the event watchers.
#[derive(Clone, Debug)]
pub struct EventsConfig {
    /// How often the list of Playrooms to watch is refreshed.
    pub refresh: Duration,
    /// Delay before reconnecting a failed stream; grows with consecutive
    /// failures.
    pub backoff: Backoff,
    /// How often a host that could not be reached is tried again (a
    /// connect attempt: the probe), whatever the backoff: when it is back,
    /// its stream opens and every Playground of it is woken within this.
    pub probe_every: Duration,
    /// A stream open at least this long counts as healthy: when it ends,
    /// the watcher reconnects at once, and the next failure backs off from
    /// the start again (`watcher::Reconnects`).
    pub stable_after: Duration,
    /// Events wake one Playground at most once per this long; later ones
    /// are held back to its end (so a crash-looping container does not keep
    /// its Playground's pass running back to back). Short enough that a
    /// dependency's `health_status` event, which follows its start within
    /// a healthcheck interval, is not held back long (docs/decisions/hosts.md,
    /// "Orphan sweep and Docker events").
    pub cooldown: Duration,
    /// The spacing of a `health_status` event's wake-up instead: what a
    /// rollout waits for goes on within this of the last wake-up, not the
    /// rest of the cooldown (`throttle`'s documentation).
    pub health_cooldown: Duration,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            refresh: Duration::from_secs(10),
            // Attempts that fail to connect wake nothing, so they may start
            // soon: a restarted sshd listens again within a fraction of a
            // second.
            backoff: Backoff { initial: Duration::from_millis(250), max: Duration::from_secs(60) },
            probe_every: Duration::from_secs(1),
            stable_after: Duration::from_secs(10),
            cooldown: Duration::from_millis(500),
            health_cooldown: Duration::from_millis(100),
        }
    }
}

/// See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct PlaygroundEvents {
    store: Store,
    secrets: SecretBox,
    gateway: DockerHostGateway,
    config: EventsConfig,
}

/// How many ids may wait for the runtime before watchers pause reading.
const BUFFER: usize = 1024;

/// Asks the event supervisor to watch a Playroom now (see the
/// [module documentation](self)). Cheap and non-blocking: the supervisor
/// answers a request for a Playroom it already watches with a map lookup.
#[derive(Clone, Debug)]
pub struct WatchHandle {
    tx: mpsc::UnboundedSender<i64>,
}

impl WatchHandle {
    /// Makes sure Playroom `playroom` is watched, if it has Playgrounds. A
    /// hint: once the supervisor is gone it is dropped.
    pub fn ensure(&self, playroom: i64) {
        // Fails only when the supervisor has stopped (shutdown).
        let _ = self.tx.send(playroom);
    }
}

impl PlaygroundEvents {
    pub fn new(store: Store, secrets: SecretBox, gateway: DockerHostGateway) -> Self {
        PlaygroundEvents { store, secrets, gateway, config: EventsConfig::default() }
    }

    pub fn with_config(mut self, config: EventsConfig) -> Self {
        self.config = config;
        self
    }

    /// The ids to wake (for `Runtime::trigger`), the handle through which
    /// passes ask for their Playroom to be watched (for
    /// `PlaygroundReconciler::with_watch`), and the task that follows the
    /// engines until `shutdown` (spawn it). The task also ends when the
    /// stream is dropped.
    pub fn start(
        self,
        shutdown: CancellationToken,
    ) -> (impl Stream<Item = i64> + Send + 'static, WatchHandle, impl Future<Output = ()> + Send + 'static) {
        let (tx, rx) = mpsc::channel(BUFFER);
        let (requests_tx, requests) = mpsc::unbounded_channel();
        let spacing = Spacing { cooldown: self.config.cooldown, health_cooldown: self.config.health_cooldown };
        let ids = throttle::throttle(rx, spacing);
        (ids, WatchHandle { tx: requests_tx }, supervise(Arc::new(self), tx, requests, shutdown))
    }
}

/// One running watcher.
struct Watching {
    room: WatchedPlayroom,
    stop: CancellationToken,
    task: Id,
}

async fn supervise(
    events: Arc<PlaygroundEvents>,
    tx: mpsc::Sender<Wake>,
    mut requests: mpsc::UnboundedReceiver<i64>,
    shutdown: CancellationToken,
) {
    let mut watching: HashMap<i64, Watching> = HashMap::new();
    let mut tasks = JoinSet::new();
    // Which Playroom each watcher task follows, to forget a watcher that
    // ended on its own (it is started again on the next refresh).
    let mut task_rooms: HashMap<Id, i64> = HashMap::new();
    let mut tick = tokio::time::interval(events.config.refresh.max(Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut installation: Option<String> = None;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tx.closed() => break,
            Some(joined) = tasks.join_next_with_id() => {
                let task = match joined {
                    Ok((task, ())) => task,
                    Err(error) => {
                        tracing::error!(%error, "an event watcher failed");
                        error.id()
                    }
                };
                if let Some(room) = task_rooms.remove(&task)
                    && watching.get(&room).is_some_and(|w| w.task == task)
                {
                    watching.remove(&room);
                }
                continue;
            }
            Some(room) = requests.recv() => {
                // Coalesce a burst of requests (every pass sends one) into
                // one look at the store, and none when all are watched.
                let mut unwatched = !watching.contains_key(&room);
                while let Ok(room) = requests.try_recv() {
                    unwatched |= !watching.contains_key(&room);
                }
                if !unwatched {
                    continue;
                }
            }
            _ = tick.tick() => {}
        }
        if installation.is_none() {
            match events.store.installation().await {
                Ok(id) => installation = Some(id),
                Err(error) => tracing::warn!(%error, "event watchers: reading the installation id failed"),
            }
        }
        let Some(installation) = installation.as_deref() else { continue };
        let rooms = match sweep::watched_playrooms(&events.store).await {
            Ok(rooms) => rooms,
            Err(error) => {
                tracing::warn!(%error, "event watchers: listing Playrooms failed; keeping the current watchers");
                continue;
            }
        };
        let wanted: HashMap<i64, WatchedPlayroom> = rooms.into_iter().map(|r| (r.id, r)).collect();
        watching.retain(|id, w| {
            let keep = wanted.get(id) == Some(&w.room);
            if !keep {
                w.stop.cancel();
            }
            keep
        });
        for (id, room) in wanted {
            if watching.contains_key(&id) {
                continue;
            }
            let stop = shutdown.child_token();
            let watcher = Watcher {
                events: events.clone(),
                room: room.clone(),
                installation: installation.to_owned(),
                tx: tx.clone(),
                stop: stop.clone(),
            };
            let task = tasks.spawn(watcher.run()).id();
            task_rooms.insert(task, id);
            watching.insert(id, Watching { room, stop, task });
        }
    }
    for w in watching.values() {
        w.stop.cancel();
    }
    while tasks.join_next().await.is_some() {}
}
