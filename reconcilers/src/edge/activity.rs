//! The activity monitor of a Playroom's edge (issue #32): follows the edge
//! container's access log over the Playroom's connection and samples its
//! open upstream requests, so that
//! - a request that reaches a sleeping Playground wakes it at once (the
//!   wake listener's line, `play_model::edge::waking`), and
//! - requests through a watched Playground's routes, and connections still
//!   open to its containers (a WebSocket, a Server-Sent Events stream, a
//!   long download), are recorded as its activity (`last_active_at`),
//!   which its reconciler reads to decide when it sleeps. Quiet paths
//!   (health checks) are not activity.
//!
//! One task per Playroom, started and fed by the edge pass that attends
//! the Playroom ([`Monitors::ensure`], every `check_interval`); a task not
//! fed for [`STALE_AFTER_PASSES`] passes ends by itself, so only a replica
//! whose edge loop holds the Playroom keeps one (another replica's task,
//! for the moment a lease moves, only repeats idempotent writes: activity
//! moves `last_active_at` forward, a wake changes a sleeping Playground
//! once).
//!
//! Guarantees: no line is kept or logged (they hold request paths);
//! memory is bounded by the line length ([`MAX_LINE`]) and the Playroom's
//! Playground count; a broken stream is opened again after
//! [`RECONNECT`]. An open connection counts once it is seen in two
//! samples in a row ([`SAMPLE`] apart), so a health check caught in flight
//! once keeps nothing awake. Store writes are bounded whatever the lines:
//! activity is one transaction per [`SAMPLE`], and wake lines pass a
//! [`WakeLineGate`] (a cooldown per Playground, a rate per monitor) before a
//! store call, which writes only for a Playground it finds asleep (issue
//! #49, item 7: a flood at a sleeping URL, or a host printing wake lines,
//! was a write transaction per line).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bollard::query_parameters::LogsOptions;
use futures::StreamExt as _;
use play_core::metrics::{Metrics, WakeLineLabels};
use play_core::wake::{Wake, Waker};
use play_model::edge::waking::{ACCESS_LOGGER, WAKE_LOGGER, is_quiet};
use play_model::host::HostTarget;
use play_store::{Store, power};
use serde::Deserialize;
use tokio::sync::watch;

use super::admin::Admin;
use super::wake_lines::{Verdict, WakeLineGate};
use crate::host::DockerHostGateway;

/// How often open connections are sampled and activity is written.
pub const SAMPLE: Duration = Duration::from_secs(1);
/// How long a broken log stream waits before it is opened again.
const RECONNECT: Duration = Duration::from_millis(500);
/// A task not fed by an edge pass for this many check intervals ends.
const STALE_AFTER_PASSES: u32 = 5;
/// The longest access-log line read; longer ones are skipped.
const MAX_LINE: usize = 16 * 1024;
/// How far back a monitor reads when it starts: a request that reached a
/// sleeping Playground while no monitor followed the edge (play
/// restarting; the edge holds it meanwhile) still wakes it. Older lines
/// count for wakes only, never as activity, and only when written after
/// the Playground was asked to sleep (issue #51, item 4: a request that
/// woke it before a restart woke it again after).
const REPLAY: i64 = 15;

/// What the monitor of one Playroom needs to know, from the edge pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Watched host (without port) -> its Playground.
    pub hosts: HashMap<String, i64>,
    /// `container:port` of a watched route -> its Playground.
    pub upstreams: HashMap<String, i64>,
    /// Playgrounds whose routes are waking ones: the only ids a wake line
    /// may wake.
    pub sleeping: HashSet<i64>,
    /// When each of `sleeping` was asked to sleep (or woken), in
    /// microseconds since the epoch: its wake lines written before are
    /// stale.
    pub power_changed: HashMap<i64, i64>,
}

/// Where the monitor reads from.
#[derive(Clone, Debug)]
pub struct Source {
    pub target: HostTarget,
    /// The edge container's name.
    pub container: String,
    /// The admin socket's path on the host.
    pub socket: String,
}

/// The running monitors of this replica, by Playroom.
#[derive(Clone, Debug, Default)]
pub struct Monitors {
    inner: Arc<Mutex<HashMap<i64, Entry>>>,
}

#[derive(Debug)]
struct Entry {
    snapshot: watch::Sender<Arc<Snapshot>>,
    fed: Arc<Mutex<Instant>>,
    source: Source,
}

/// What a monitor task shares with the edge reconciler.
#[derive(Clone, Debug)]
pub struct Context {
    pub store: Store,
    pub gateway: DockerHostGateway,
    /// Wakes the Playground reconciler of a Playground a request woke.
    pub playgrounds: Option<Arc<dyn Waker>>,
    /// The edge loop's check interval (how often it feeds the monitor).
    pub check_interval: Duration,
    /// Where wake lines are counted by outcome
    /// (`play_edge_wake_lines_total`).
    pub metrics: Arc<Metrics>,
}

impl Monitors {
    /// Feeds Playroom `playroom`'s monitor `snapshot`, starting one (or a
    /// new one, when its source changed) if none runs. Without anything to
    /// watch, a running monitor is left to end by itself.
    pub fn ensure(&self, cx: &Context, playroom: i64, source: Source, snapshot: Snapshot) {
        let mut map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = map.get(&playroom)
            && entry.source.container == source.container
            && entry.source.target == source.target
            && !entry.snapshot.is_closed()
        {
            *entry.fed.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
            entry.snapshot.send_if_modified(|old| {
                let changed = **old != snapshot;
                if changed {
                    *old = Arc::new(snapshot.clone());
                }
                changed
            });
            return;
        }
        if snapshot.hosts.is_empty() && snapshot.sleeping.is_empty() {
            map.remove(&playroom);
            return;
        }
        let (tx, rx) = watch::channel(Arc::new(snapshot));
        let fed = Arc::new(Mutex::new(Instant::now()));
        let task = Task { cx: cx.clone(), source: source.clone(), snapshot: rx, fed: fed.clone(), playroom };
        tokio::spawn(task.run());
        map.insert(playroom, Entry { snapshot: tx, fed, source });
    }
}

struct Task {
    cx: Context,
    source: Source,
    snapshot: watch::Receiver<Arc<Snapshot>>,
    fed: Arc<Mutex<Instant>>,
    playroom: i64,
}

#[derive(Deserialize)]
struct Line {
    logger: String,
    /// When Caddy wrote it (seconds since the epoch).
    ts: f64,
    request: Request,
}

#[derive(Deserialize)]
struct Request {
    host: String,
    uri: String,
}

impl Task {
    fn stale(&self) -> bool {
        let fed = *self.fed.lock().unwrap_or_else(|p| p.into_inner());
        fed.elapsed() > self.cx.check_interval * STALE_AFTER_PASSES
    }

    async fn run(self) {
        let started = chrono::Utc::now().timestamp();
        let mut since = started - REPLAY;
        let mut active: HashSet<i64> = HashSet::new();
        let mut open_before: HashSet<i64> = HashSet::new();
        let mut gate = WakeLineGate::new(tokio::time::Instant::now());
        let mut tick = tokio::time::interval(SAMPLE);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        'connect: while !self.stale() {
            let docker = match self.cx.gateway.docker(&self.source.target).await {
                Ok(docker) => docker,
                Err(error) => {
                    tracing::debug!(playroom = self.playroom, %error, "edge activity: no connection yet");
                    tokio::time::sleep(RECONNECT).await;
                    continue;
                }
            };
            // A stream opened again reads from the second of the last line
            // read (lines of that second are read twice: a wake is
            // idempotent and stale ones are dropped, activity only moves
            // forward).
            let from = i32::try_from(since).unwrap_or(0);
            let options =
                LogsOptions { follow: true, stdout: true, stderr: false, since: from, ..LogsOptions::default() };
            let mut logs = docker.logs(&self.source.container, Some(options));
            let mut partial: Vec<u8> = Vec::new();
            loop {
                tokio::select! {
                    chunk = logs.next() => match chunk {
                        Some(Ok(chunk)) => {
                            partial.extend_from_slice(&chunk.into_bytes());
                            while let Some(end) = partial.iter().position(|b| *b == b'\n') {
                                let line: Vec<u8> = partial.drain(..=end).collect();
                                if let Some(written) = self.line(&line, started, &mut active, &mut gate).await {
                                    since = since.max(written as i64);
                                }
                            }
                            if partial.len() > MAX_LINE {
                                partial.clear();
                            }
                        }
                        Some(Err(error)) => {
                            tracing::debug!(playroom = self.playroom, %error, "edge activity: the log stream broke");
                            tokio::time::sleep(RECONNECT).await;
                            continue 'connect;
                        }
                        None => {
                            tokio::time::sleep(RECONNECT).await;
                            continue 'connect;
                        }
                    },
                    _ = tick.tick() => {
                        if self.stale() {
                            break 'connect;
                        }
                        self.sample(&mut open_before, &mut active).await;
                        self.pending_wakes(&mut gate).await;
                        let ids: Vec<i64> = active.drain().collect();
                        if let Err(error) = power::touch(&self.cx.store, &ids, play_model::time::now()).await {
                            tracing::warn!(playroom = self.playroom, %error, "edge activity: could not record activity");
                        }
                    }
                }
            }
        }
        tracing::debug!(playroom = self.playroom, "edge activity monitor ended");
    }

    /// One access-log line: a wake (through `gate`, unless it is stale), or
    /// activity (unless it is older than the monitor, `started`). Answers
    /// when Caddy wrote it, for a line it could read.
    ///
    /// A wake line is stale when written no later than its Playground was
    /// asked to sleep (or woken): the edge's clock against play's, so a
    /// skew between the two hosts larger than the time between a sleep and
    /// the next request drops that request's line; the waiting page asks
    /// again, and NTP keeps skews far below that.
    async fn line(&self, line: &[u8], started: i64, active: &mut HashSet<i64>, gate: &mut WakeLineGate) -> Option<f64> {
        if line.len() > MAX_LINE {
            return None;
        }
        let line = serde_json::from_slice::<Line>(line).ok()?;
        let snapshot = self.snapshot.borrow().clone();
        if line.logger == WAKE_LOGGER {
            let Some(id) = line.request.uri.strip_prefix("/wake/").and_then(|id| id.parse::<i64>().ok()) else {
                self.count("ignored");
                return Some(line.ts);
            };
            if snapshot.power_changed.get(&id).is_some_and(|at| line.ts * 1e6 <= *at as f64) {
                self.count("stale");
                return Some(line.ts);
            }
            match gate.admit(id, &snapshot.sleeping, tokio::time::Instant::now()) {
                Verdict::Store => self.wake(id, gate).await,
                Verdict::Ignored => self.count("ignored"),
                Verdict::Coalesced => self.count("coalesced"),
                Verdict::OverRate => self.count("over_rate"),
            }
        } else if line.logger == ACCESS_LOGGER && line.ts >= started as f64 {
            let host = line.request.host.rsplit_once(':').map_or(line.request.host.as_str(), |(h, _)| h);
            let path = line.request.uri.split('?').next().unwrap_or_default();
            if let Some(id) = snapshot.hosts.get(&host.to_ascii_lowercase())
                && !is_quiet(path)
            {
                active.insert(*id);
            }
        }
        Some(line.ts)
    }

    /// Takes a request's wake of Playground `id` to the store (a read, and
    /// a write only when it is asleep) and to its reconciler (so a wake
    /// whose pass failed is tried again at once), and tells `gate` the
    /// store's answer.
    async fn wake(&self, id: i64, gate: &mut WakeLineGate) {
        let outcome = match power::wake_on_request(&self.cx.store, id).await {
            Ok(woken) => {
                gate.stored(id, tokio::time::Instant::now());
                if woken {
                    tracing::info!(playground = id, "a request woke the Playground");
                }
                if let Some(waker) = &self.cx.playgrounds {
                    waker.wake(Wake::Playground(id.into()));
                }
                if woken { "woke" } else { "awake" }
            }
            Err(error) => {
                gate.failed(id, tokio::time::Instant::now());
                tracing::warn!(playground = id, %error, "could not record a wake");
                "failed"
            }
        };
        self.count(outcome);
    }

    /// The wakes `gate` left for later (coalesced in a cooldown, or over
    /// the rate) that are due, against the current snapshot: a Playground
    /// no longer sleeping costs nothing. Reports lines over the rate, at
    /// most once a minute, without their content.
    async fn pending_wakes(&self, gate: &mut WakeLineGate) {
        let now = tokio::time::Instant::now();
        let snapshot = self.snapshot.borrow().clone();
        for id in gate.due(&snapshot.sleeping, now) {
            self.wake(id, gate).await;
        }
        if let Some(lines) = gate.report(now) {
            tracing::warn!(
                playroom = self.playroom,
                lines,
                "edge activity: wake lines over this monitor's rate, their wakes left for a later tick"
            );
        }
    }

    /// Counts a wake line's `outcome`, or the store's answer to it.
    fn count(&self, outcome: &'static str) {
        self.cx.metrics.edge_wake_lines.get_or_create(&WakeLineLabels { outcome }).inc();
    }

    /// Samples the requests open to each watched upstream: a Playground
    /// with one open in this sample and the last is active.
    async fn sample(&self, open_before: &mut HashSet<i64>, active: &mut HashSet<i64>) {
        let snapshot = self.snapshot.borrow().clone();
        if snapshot.upstreams.is_empty() {
            open_before.clear();
            return;
        }
        let admin = Admin { gateway: &self.cx.gateway, target: &self.source.target, socket: &self.source.socket };
        let Ok(upstreams) = admin.upstreams().await else { return };
        let open: HashSet<i64> = upstreams
            .into_iter()
            .filter(|(_, requests)| *requests > 0)
            .filter_map(|(address, _)| snapshot.upstreams.get(&address).copied())
            .collect();
        active.extend(open.intersection(open_before).copied());
        *open_before = open;
    }
}
