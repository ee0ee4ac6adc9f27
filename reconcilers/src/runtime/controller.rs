//! The run loop: triggers feed the queue, due objects start on workers
//! (each under its lease: `pass`), outcomes decide the next run, and the
//! periodic resync spreads its visits over the period. What it guarantees
//! is listed in [`super`]; its tuning is [`Config`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::{self, BoxStream, Stream, StreamExt};
use play_core::metrics::Metrics;
use play_core::wake::WakeReceiver;
use rand::Rng;
use tokio::sync::mpsc;
use tokio::task::{Id, JoinError, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::groups::{Admission, Groups};
use super::metrics::{Recorder, Settled};
use super::pass::{Outcome, Shared, look_up_group, run_pass};
use super::queue::{Lane, Queue};
use super::{Config, Handle, LeaseStore, Next, Reconciler, Request, instant_after, instant_at, replica_id};
use crate::Error;

/// After a busy lease's expiry, how long a claimant waits before it claims.
const BUSY_MARGIN: Duration = Duration::from_millis(50);

/// Runs one [`Reconciler`]; see the [module documentation](super) for what
/// it guarantees.
pub struct Runtime<R: Reconciler> {
    reconciler: Arc<R>,
    leases: Arc<dyn LeaseStore>,
    metrics: Arc<Metrics>,
    config: Config,
    owner: Arc<str>,
    triggers: Vec<BoxStream<'static, (i64, Lane)>>,
    /// Ids another replica was asked to run ([`Runtime::remote_wakes_from`]).
    remote: Vec<BoxStream<'static, i64>>,
    tx: mpsc::UnboundedSender<Request>,
    rx: mpsc::UnboundedReceiver<Request>,
}

impl<R: Reconciler> std::fmt::Debug for Runtime<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("reconciler", &R::NAME)
            .field("owner", &self.owner)
            .field("config", &self.config)
            .field("leases", &self.leases)
            .field("triggers", &self.triggers.len())
            .finish_non_exhaustive()
    }
}

impl<R: Reconciler> Runtime<R> {
    /// A runtime for `reconciler`, claiming leases in `leases` (the
    /// [`Store`](play_store::Store) in every deployment) as this
    /// process's [`replica_id`].
    pub fn new(reconciler: R, leases: impl LeaseStore, metrics: Arc<Metrics>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Runtime {
            reconciler: Arc::new(reconciler),
            leases: Arc::new(leases),
            metrics,
            config: Config::default(),
            owner: Arc::from(replica_id()),
            triggers: Vec::new(),
            remote: Vec::new(),
            tx,
            rx,
        }
    }

    pub fn with_config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Claims leases as `replica` instead of this process's random id.
    pub fn with_replica_id(mut self, replica: impl Into<String>) -> Self {
        self.owner = Arc::from(replica.into());
        self
    }

    /// Runs every id woken through the waker this receiver subscribed to
    /// (by convention under `R::NAME`).
    /// These are changes someone asked for: they start before anything
    /// else that is due.
    pub fn wake_from(mut self, mut wakes: WakeReceiver) -> Self {
        let ids = stream::poll_fn(move |cx| wakes.poll_recv(cx)).map(|id| (id, Lane::Urgent));
        self.triggers.push(ids.boxed());
        self
    }

    /// Reruns, right after its pass, every id woken on another replica
    /// that is running here (see `play_core::wake`: the replica that
    /// accepted a change runs it itself; when this one holds the lease in
    /// a pass, the other's claim waits for it, and without this the change
    /// waited for a busy retry or a resync). Ids not running here are left
    /// to the other replica.
    pub fn remote_wakes_from(mut self, mut wakes: WakeReceiver) -> Self {
        self.remote.push(stream::poll_fn(move |cx| wakes.poll_recv(cx)).boxed());
        self
    }

    /// Runs every id the stream yields, as soon as possible (e.g. objects
    /// named by a Playroom's Docker events), after due wakes and before due
    /// routine visits. A stream that ends is dropped.
    pub fn trigger(mut self, ids: impl Stream<Item = i64> + Send + 'static) -> Self {
        self.triggers.push(ids.map(|id| (id, Lane::Observed)).boxed());
        self
    }

    /// A handle to wake objects of this runtime, usable before and while it
    /// runs.
    pub fn handle(&self) -> Handle {
        Handle { tx: self.tx.clone() }
    }

    /// Runs until `shutdown` is cancelled, then lets running passes finish
    /// (within `Config::shutdown_grace`) and releases every lease.
    pub async fn run(self, shutdown: CancellationToken) {
        let Runtime { reconciler, leases, metrics, config, owner, triggers, remote, tx, mut rx } = self;
        let config = Config { concurrency: config.concurrency.max(1), ..config };
        let shared = Arc::new(Shared {
            reconciler,
            leases,
            owner,
            handle: Handle { tx },
            shutdown: shutdown.clone(),
            held: Mutex::new(HashMap::new()),
            recorder: Recorder::new(metrics, R::NAME),
            config,
        });
        let mut state = State {
            groups: Groups::new(shared.config.per_group),
            shared: shared.clone(),
            queue: Queue::default(),
            failures: HashMap::new(),
            workers: JoinSet::new(),
            tasks: HashMap::new(),
        };
        let mut triggers = stream::select_all(triggers);
        let mut triggers_open = !triggers.is_empty();
        let mut remote = stream::select_all(remote);
        let mut remote_open = !remote.is_empty();
        // The first listing runs at once; each one sets when the next runs.
        let mut next_resync = Some(Instant::now());
        let mut first_resync = true;
        let mut listing: Option<tokio::task::JoinHandle<()>> = None;
        tracing::info!(reconciler = R::NAME, owner = %shared.owner, "reconcile runtime started");

        loop {
            let next = state.start_due();
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                Some(joined) = state.workers.join_next_with_id() => state.joined(joined),
                Some(request) = rx.recv() => match request {
                    Request::At(id, at, lane) => state.queue.schedule(id, at, lane),
                    Request::Resync(listed) => {
                        listing = None;
                        let period = match listed {
                            Some(listed) => state.resync(&listed, std::mem::take(&mut first_resync)),
                            None => shared.config.resync_every,
                        };
                        next_resync = Some(Instant::now() + period);
                    }
                },
                id = triggers.next(), if triggers_open => match id {
                    Some((id, lane)) => state.queue.schedule(id, Instant::now(), lane),
                    None => triggers_open = false,
                },
                id = remote.next(), if remote_open => match id {
                    Some(id) => state.queue.schedule_if_running(id, Instant::now(), Lane::Urgent),
                    None => remote_open = false,
                },
                () = tokio::time::sleep_until(next_resync.unwrap_or_else(Instant::now)), if next_resync.is_some() => {
                    next_resync = None;
                    listing = Some(spawn_list(&shared));
                }
                () = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {}
            }
        }

        if let Some(listing) = listing {
            listing.abort();
        }
        state.drain().await;
        tracing::info!(reconciler = R::NAME, "reconcile runtime stopped");
    }
}

/// Runs `list()` off the loop, bounded by the resync period, and sends the
/// ids back (`None` when it failed).
fn spawn_list<R: Reconciler>(shared: &Arc<Shared<R>>) -> tokio::task::JoinHandle<()> {
    let shared = shared.clone();
    tokio::spawn(async move {
        let listed = match tokio::time::timeout(shared.config.resync_every, shared.reconciler.list()).await {
            Ok(Ok(ids)) => Some(ids.into_iter().map(Into::into).collect::<Vec<i64>>()),
            Ok(Err(error)) => {
                tracing::warn!(reconciler = R::NAME, %error, "resync: listing objects failed");
                None
            }
            Err(_) => {
                tracing::warn!(reconciler = R::NAME, "resync: listing objects timed out");
                None
            }
        };
        let _ = shared.handle.tx.send(Request::Resync(listed));
    })
}

/// Consecutive failures of one object. Present only while it is failing.
#[derive(Clone, Copy, Debug, Default)]
struct Failure {
    attempt: u32,
    /// The error policy parked it: not retried until woken.
    terminal: bool,
}

/// The loop's own state (only the loop task touches it).
struct State<R: Reconciler> {
    shared: Arc<Shared<R>>,
    queue: Queue,
    failures: HashMap<i64, Failure>,
    workers: JoinSet<(i64, Outcome)>,
    /// Object id and lane of each worker task, to settle a worker that
    /// panicked outside the pass and to requeue a group lookup.
    tasks: HashMap<Id, (i64, Lane)>,
    /// The per-group bound (`Config::per_group`) of a grouped reconciler.
    groups: Groups,
}

impl<R: Reconciler> State<R> {
    /// Starts due objects while slots are free; returns when the loop must
    /// wake for the next one (`None`: no slot, or nothing scheduled).
    fn start_due(&mut self) -> Option<Instant> {
        let now = Instant::now();
        let slots = self.shared.config.concurrency;
        while self.queue.running() < slots {
            let Some((id, lane, due)) = self.queue.pop_due_since(now) else { break };
            let admission = if R::GROUPED { self.groups.admit(id, lane) } else { Admission::Run };
            let shared = self.shared.clone();
            let task = match admission {
                Admission::Parked => {
                    self.queue.finish(id, None);
                    continue;
                }
                Admission::LookUp => self.workers.spawn(async move { (id, look_up_group(&shared, id).await) }),
                Admission::Run => {
                    let attempt = self.failures.get(&id).map_or(0, |f| f.attempt);
                    let work = shared.recorder.started(now.saturating_duration_since(due));
                    self.workers.spawn(async move {
                        let _work = work;
                        (id, run_pass(&shared, id, attempt).await)
                    })
                }
            };
            self.tasks.insert(task.id(), (id, lane));
        }
        let added = self.queue.take_added();
        self.shared.recorder.queue(self.queue.due(now) + self.groups.parked(), added);
        if self.queue.running() < slots { self.queue.next_at() } else { None }
    }

    fn joined(&mut self, joined: Result<(Id, (i64, Outcome)), JoinError>) {
        let (task, id, outcome) = match joined {
            Ok((task, (id, outcome))) => (task, id, outcome),
            Err(error) => {
                let Some(&(id, _)) = self.tasks.get(&error.id()) else { return };
                tracing::error!(reconciler = R::NAME, id, %error, "reconcile worker failed");
                (error.id(), id, Outcome::Panicked(Duration::ZERO))
            }
        };
        let lane = self.tasks.remove(&task).map_or(Lane::Routine, |(_, lane)| lane);
        if let Outcome::Grouped(group) = outcome {
            // No pass ran: the id starts again at once, in its lane, now
            // that its group is known (or after a backoff when the lookup
            // failed, as a failed lease claim would).
            let next = match group {
                Ok(group) => {
                    self.groups.learn(id, group);
                    None
                }
                Err(error) => {
                    tracing::warn!(reconciler = R::NAME, id, %error, "looking up the object's group failed");
                    Some(self.backoff(id))
                }
            };
            self.queue.finish(id, next);
            if next.is_none() {
                self.queue.schedule(id, Instant::now(), lane);
            }
            return;
        }
        let next = self.settle(id, outcome);
        self.queue.finish(id, next);
        let now = Instant::now();
        for (freed, lane) in self.groups.finished(id) {
            self.queue.schedule(freed, now, lane);
        }
    }

    /// Counts the outcome and decides the object's next run.
    fn settle(&mut self, id: i64, outcome: Outcome) -> Option<Instant> {
        let (result, next) = match outcome {
            Outcome::Busy(until) => {
                let retry = self.shared.config.lease_busy_retry;
                let mut at = instant_after(retry.mul_f64(rand::thread_rng().gen_range(0.5..1.5)));
                // A holder that stopped renewing (crashed) is taken over when
                // its lease ends, not up to a retry delay later; never sooner
                // than a moment from now, so a clock disagreement cannot spin.
                if let Some(until) = until {
                    at = at.min((until + BUSY_MARGIN).max(Instant::now() + BUSY_MARGIN));
                }
                self.shared.recorder.retried();
                (Settled::SkippedLease, Some(at))
            }
            Outcome::ClaimFailed(error) => {
                tracing::warn!(reconciler = R::NAME, id, %error, "claiming the lease failed");
                (Settled::Error, Some(self.backoff(id)))
            }
            Outcome::LeaseLost(elapsed) => {
                self.shared.recorder.ran(elapsed);
                self.shared.recorder.lease_lost();
                self.shared.recorder.retried();
                (Settled::Error, Some(instant_after(self.shared.config.lease_busy_retry)))
            }
            Outcome::Panicked(elapsed) => {
                self.shared.recorder.ran(elapsed);
                tracing::error!(reconciler = R::NAME, id, "reconcile panicked");
                (Settled::Error, Some(self.backoff(id)))
            }
            Outcome::Finished(elapsed, Ok(action)) => {
                self.shared.recorder.ran(elapsed);
                match action.0 {
                    Next::Backoff => (Settled::Requeue, Some(self.backoff(id))),
                    Next::BackoffUntil(at) => (Settled::Requeue, Some(self.backoff(id).min(instant_at(at)))),
                    next => {
                        self.failures.remove(&id);
                        match next {
                            Next::After(delay) => (Settled::Requeue, Some(instant_after(delay))),
                            Next::At(at) => (Settled::Requeue, Some(instant_at(at))),
                            Next::AwaitChange | Next::Backoff | Next::BackoffUntil(_) => (Settled::Ok, None),
                        }
                    }
                }
            }
            Outcome::Finished(elapsed, Err(error)) => {
                self.shared.recorder.ran(elapsed);
                self.settle_error(id, &error)
            }
            // Handled by `joined` before a pass is settled.
            Outcome::Grouped(_) => return None,
        };
        self.shared.recorder.settled(result);
        next
    }

    fn settle_error(&mut self, id: i64, error: &Error) -> (Settled, Option<Instant>) {
        let failure = self.failures.entry(id).or_default();
        failure.attempt = failure.attempt.saturating_add(1);
        let attempt = failure.attempt;
        let action = self.shared.reconciler.error_policy(R::Id::from(id), error, attempt);
        failure.terminal = action.is_await_change();
        let label = error.metric_label();
        if failure.terminal {
            tracing::warn!(reconciler = R::NAME, id, attempt, error = %error, kind = label, "terminal error: waiting for a change");
            return (Settled::Terminal, None);
        }
        tracing::warn!(reconciler = R::NAME, id, attempt, error = %error, kind = label, "reconcile failed");
        let backoff = || instant_after(self.shared.config.backoff.delay(attempt));
        let next = match action.0 {
            Next::After(delay) => instant_after(delay),
            Next::At(at) => instant_at(at),
            Next::Backoff | Next::AwaitChange => backoff(),
            Next::BackoffUntil(at) => backoff().min(instant_at(at)),
        };
        self.shared.recorder.retried();
        (Settled::Error, Some(next))
    }

    /// Counts one more failure of `id` and returns when to retry.
    fn backoff(&mut self, id: i64) -> Instant {
        let failure = self.failures.entry(id).or_default();
        failure.attempt = failure.attempt.saturating_add(1);
        failure.terminal = false;
        self.shared.recorder.retried();
        instant_after(self.shared.config.backoff.delay(failure.attempt))
    }

    /// Visits every listed object that is neither running nor failing (those
    /// follow their backoff, or wait for a wake when terminal), each at its
    /// own offset within the period, and forgets the failures of objects
    /// that no longer exist. Returns the period: `resync_every`, stretched
    /// so that no more than the rate's visits a second are asked for.
    fn resync(&mut self, listed: &[i64], first: bool) -> Duration {
        let config = &self.shared.config;
        let count = u32::try_from(listed.len()).unwrap_or(u32::MAX);
        let period = config.resync_every.max(Duration::from_secs(1) * count / config.resync_rate.max(1));
        // The first visits after start-up are spread only as much as the
        // start-up rate needs: a small installation is revisited at once.
        let spread = if first { Duration::from_secs(1) * count / config.startup_rate.max(1) } else { period };
        let now = Instant::now();
        for &id in listed {
            if !self.queue.is_running(id) && !self.failures.contains_key(&id) {
                self.queue.schedule(id, now + offset(id, spread), Lane::Routine);
            }
        }
        let listed: HashSet<i64> = listed.iter().copied().collect();
        let (queue, groups) = (&self.queue, &self.groups);
        let known = |id: i64| listed.contains(&id) || queue.is_running(id) || queue.is_scheduled(id);
        self.failures.retain(|id, _| known(*id) || groups.is_parked(*id));
        self.groups.retain(known);
        period
    }

    /// After shutdown: waits for running passes within the grace period,
    /// drops the rest, releases every lease still held.
    async fn drain(&mut self) {
        let grace = tokio::time::sleep(self.shared.config.shutdown_grace);
        tokio::pin!(grace);
        while !self.workers.is_empty() {
            tokio::select! {
                Some(joined) = self.workers.join_next_with_id() => self.joined(joined),
                () = &mut grace => {
                    tracing::warn!(
                        reconciler = R::NAME,
                        running = self.workers.len(),
                        "shutdown grace period over: dropping running passes"
                    );
                    self.workers.abort_all();
                    while self.workers.join_next().await.is_some() {}
                }
            }
        }
        for lease in self.shared.take_held() {
            if let Err(error) = self.shared.leases.release(&lease).await {
                tracing::warn!(reconciler = R::NAME, id = lease.object_id, %error, "releasing a lease failed");
            }
        }
        self.shared.recorder.queue(0, self.queue.take_added());
    }
}

/// Where in `spread` object `id`'s resync visit falls: fixed per id (so each
/// object is visited once a period, not at random gaps) and spread evenly
/// over ids (a multiplicative hash, so consecutive ids do not bunch up).
fn offset(id: i64, spread: Duration) -> Duration {
    let millis = u64::try_from(spread.as_millis()).unwrap_or(u64::MAX);
    if millis == 0 {
        return Duration::ZERO;
    }
    let hashed = (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    Duration::from_millis(hashed % millis)
}
