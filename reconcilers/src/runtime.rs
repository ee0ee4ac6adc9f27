//! The reconcile runtime: runs a [`Reconciler`] over the objects it owns,
//! one pass per object at a time, until desired state is true.
//!
//! Modelled on kube-runtime's `Controller`. A reconciler is two functions,
//! [`Reconciler::reconcile`] and [`Reconciler::error_policy`], plus
//! [`Reconciler::list`] for the periodic resync; [`Runtime`] decides when each
//! object's pass runs.
//!
//! # Expected flow
//!
//! 1. Something asks for object `id`: the API through the [`Waker`] seam
//!    (`play_core::wake`), an extra trigger stream (a Playroom's Docker
//!    events), a timer a pass asked for, or the periodic resync.
//! 2. The request enters a keyed queue: one entry per id, the earliest
//!    requested run-at wins.
//! 3. When the entry is due and a worker slot is free, the runtime claims the
//!    object's lease for this replica, runs one pass with a [`Ctx`] carrying
//!    the lease's fencing token, renews the lease while the pass runs, and
//!    releases it when the pass ends.
//! 4. The pass's [`Action`] (or, on error, the error policy's) says when to
//!    run again: after a delay, at an instant, after a backoff, or not until
//!    something changes.
//!
//! # Guarantees
//!
//! - **Never two concurrent passes on one object in this process**: an id is
//!   either queued or running, never both, and a request that arrives while
//!   it runs is held back (the id is marked dirty).
//! - **Never two concurrent passes on one object across replicas sharing a
//!   database**, under the assumptions below: a pass starts only after its
//!   replica claimed the object's lease; the lease is renewed every third of
//!   its duration while the pass runs; a pass whose lease is lost, or cannot
//!   be proven held before it expires, is dropped at its next `.await` (like
//!   a crash at that line) and its [`Ctx::lease_lost`] token is cancelled.
//! - **A change is never missed by a running pass**: a request that arrives
//!   during a pass re-runs the object right after it, once, however many
//!   requests arrived.
//! - **Eventual visit**: every id [`Reconciler::list`] returns is queued
//!   once per resync period (when `list` succeeds within the period), at a
//!   fixed offset of its own within the period, except ids currently failing
//!   (they follow their backoff) and ids parked after a terminal error (they
//!   wait for a wake). The period is `Config::resync_every`, stretched when
//!   more ids are listed than `Config::resync_rate` visits a second allow.
//!   The first resync runs at start-up, spread at `Config::startup_rate`, so
//!   a restarted process revisits everything and rebuilds its timers.
//! - **Changes first**: of the ids due, ones woken through the API start
//!   first, then ones a host event named, then routine ones (resync
//!   visits, timers, retries).
//! - **Bounded work**: at most `Config::concurrency` passes run at once, and
//!   of a grouped reconciler ([`Reconciler::GROUPED`]) at most
//!   `Config::per_group` of one group (a Playroom), so a slow host holds
//!   only its own share of the workers; the queue holds at most one entry
//!   per object, and an object waiting for its group is parked once.
//! - **Backoff**: consecutive failures of an object are retried after a
//!   jittered delay whose ceiling doubles from `Backoff::initial` to
//!   `Backoff::max`; one successful pass resets it.
//! - **Terminal errors are not retried**: when the error policy returns
//!   [`Action::await_change`], the object runs again only when woken (the API
//!   wakes on every change of desired state) or after a restart.
//! - **Graceful shutdown**: once the shutdown token is cancelled no pass
//!   starts; running passes get `Config::shutdown_grace` to finish; every
//!   lease still held is released before [`Runtime::run`] returns.
//!
//! # Assumptions
//!
//! - Passes are level-triggered and idempotent (the one rule of
//!   ARCHITECTURE.md): a pass may run twice for one change, may be dropped at
//!   any `.await`, and never learns which event woke it.
//! - Replicas' wall clocks agree to well within a lease duration (leases
//!   expire by stored timestamps), and a process is not paused for longer
//!   than about a sixth of the lease duration between polls of a pass.
//! - One runtime per reconciler name per replica id: the owner of a lease is
//!   the replica, so two runtimes for one reconciler sharing a replica id
//!   would not exclude each other.
//!
//! # Caveats
//!
//! - Exclusion across replicas ends where the pass's own effects escape it:
//!   work the reconciler spawned onto other tasks is not dropped with the
//!   pass, and a pass stuck inside one long remote call only notices a lost
//!   lease when the call returns. Writes that must not happen after a
//!   takeover are fenced with the token: the store's fenced writes start
//!   their transaction with `play_store::leases::begin_fenced` under
//!   [`Ctx::fence`], which checks the lease inside that transaction.
//! - Timers live in memory. They are rebuilt by the start-up resync, so each
//!   pass must return the timer it needs (e.g. `requeue_at(expires_at)`)
//!   every time, not only when the deadline is first set.
//! - A wake is a hint that can be lost (a crash between commit and wake); the
//!   resync period bounds how late such a change is picked up.
//! - With several replicas every replica's resync visits every object, and a
//!   replica that finds an object leased elsewhere retries it after
//!   `Config::lease_busy_retry`, so an object can be reconciled once per
//!   replica per period. Passes must be cheap when nothing changed.
//!
//! [`Waker`]: play_core::wake::Waker

mod backoff;
mod config;
mod controller;
mod groups;
mod lease;
mod metrics;
mod pass;
mod queue;

use std::sync::Arc;
use std::time::Duration;

use play_model::ids::ObjectId;
use play_model::time::Timestamp;
use play_store::fence::Fence;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use backoff::Backoff;
pub use config::{Config, lease_owner, replica_id};
pub use controller::Runtime;
pub use lease::{LeaseStore, MemoryLeases};

use play_core::wake::Kind;

use crate::{Error, Result};

/// One kind of object made true by passes of [`Reconciler::reconcile`].
///
/// The reconciler value holds the shared handles its passes need (store,
/// host gateway, metrics, waker); the runtime hands each pass a [`Ctx`] with
/// what is specific to that pass (the lease's fencing token, the attempt).
pub trait Reconciler: Send + Sync + 'static {
    /// Names the reconciler in metrics (`controller` label, and
    /// `reconciler` on the older series: `docs/metrics.md`), lease rows and
    /// logs.
    const NAME: &'static str;

    /// The kind of object it reconciles: the wakes of that kind
    /// (`play_core::wake`) are the ones it subscribes to.
    const KIND: Kind;

    /// The typed id of what it reconciles (`play_model::ids`): the
    /// runtime keys its queue, leases and metrics by the row id, and hands
    /// the reconciler this type, so an object's id cannot be taken for
    /// another kind's.
    type Id: ObjectId;

    /// Makes object `id` a step closer to its desired state and says when to
    /// look again. Must be idempotent: it may run again at any time, and may
    /// be dropped at any `.await`.
    fn reconcile(&self, id: Self::Id, ctx: &Ctx) -> impl Future<Output = Result<Action>> + Send;

    /// What to do after `reconcile` failed: by default retry with the
    /// runtime's exponential backoff. `attempt` counts consecutive failed
    /// passes of this object, this one included (1 on the first failure).
    ///
    /// Return [`Action::await_change`] for a **terminal** error (an invalid
    /// spec, a refused image): it is not retried, by backoff or by the
    /// resync, until the object is woken. The reconciler writes terminal
    /// errors to the object's status itself, before returning them.
    fn error_policy(&self, id: Self::Id, error: &Error, attempt: u32) -> Action {
        let _ = (id, error, attempt);
        Action::backoff()
    }

    /// The ids the periodic resync visits: every object that exists and may
    /// need work (including ones being destroyed).
    fn list(&self) -> impl Future<Output = Result<Vec<Self::Id>>> + Send;

    /// Whether objects belong to groups ([`Reconciler::group`]) whose passes
    /// are bounded by `Config::per_group`.
    const GROUPED: bool = false;

    /// The group of object `id` (a Playground's Playroom), `None` when it
    /// has none (e.g. it no longer exists). Asked once per object per
    /// process, before its first pass, so a group must never change.
    fn group(&self, id: Self::Id) -> impl Future<Output = Result<Option<i64>>> + Send {
        let _ = id;
        std::future::ready(Ok(None))
    }
}

/// When to run an object's next pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action(pub(crate) Next);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    AwaitChange,
    After(Duration),
    At(Timestamp),
    Backoff,
    /// The backoff, but no later than this instant (a Playground that
    /// keeps failing still expires on time).
    BackoffUntil(Timestamp),
}

impl Action {
    /// Run again only when woken (or by the periodic resync). From the
    /// error policy: the error is terminal, see [`Reconciler::error_policy`].
    pub fn await_change() -> Action {
        Action(Next::AwaitChange)
    }

    /// Run again at once: the pass changed the object's state in the
    /// store and ends there, so the next pass reads the new state instead
    /// of this one reloading it in place.
    pub fn requeue_now() -> Action {
        Action(Next::After(Duration::ZERO))
    }

    /// Run again after `delay` (or sooner if woken).
    pub fn requeue_after(delay: Duration) -> Action {
        Action(Next::After(delay))
    }

    /// Run again at the wall-clock instant `at`, e.g. a Playground's
    /// `expires_at` (or sooner if woken). An instant in the past runs at once.
    pub fn requeue_at(at: Timestamp) -> Action {
        Action(Next::At(at))
    }

    /// Run again after the runtime's jittered exponential backoff for this
    /// object. From `reconcile` (a pass that is not failing but waiting, e.g.
    /// for a healthcheck) the attempt count keeps growing until a pass returns
    /// something else.
    pub fn backoff() -> Action {
        Action(Next::Backoff)
    }

    /// This action, or a pass at `at` if that comes first (a Playground's
    /// idle deadline beside its expiry). A backoff stays a backoff, no
    /// later than `at`.
    pub fn or_at(self, at: Option<Timestamp>) -> Action {
        let Some(at) = at else { return self };
        match self.0 {
            Next::AwaitChange => Action::requeue_at(at),
            Next::At(t) => Action::requeue_at(t.min(at)),
            Next::After(d) => {
                let then = chrono::Duration::from_std(d).ok().map(|d| play_model::time::now() + d);
                if then.is_some_and(|then| then <= at) { self } else { Action::requeue_at(at) }
            }
            Next::Backoff => Action(Next::BackoffUntil(at)),
            Next::BackoffUntil(t) => Action(Next::BackoffUntil(t.min(at))),
        }
    }

    /// Whether this action parks the object until it is woken.
    pub fn is_await_change(&self) -> bool {
        self.0 == Next::AwaitChange
    }
}

/// What a pass needs from the runtime: its lease and a way to wake objects.
#[derive(Clone, Debug)]
pub struct Ctx {
    reconciler: &'static str,
    id: i64,
    owner: Arc<str>,
    token: i64,
    attempt: u32,
    lease_lost: CancellationToken,
    shutdown: CancellationToken,
    handle: Handle,
}

impl Ctx {
    /// The lease's fencing token: higher for every later claim of this
    /// object, by any replica.
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// The replica holding the lease (this process).
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Consecutive failed passes of this object before this one.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Cancelled when this pass's lease is lost; the runtime then drops the
    /// pass. Tasks the pass spawned should stop on it.
    pub fn lease_lost(&self) -> &CancellationToken {
        &self.lease_lost
    }

    /// Cancelled when the runtime is shutting down. A long pass may stop
    /// early at a safe point; otherwise it gets the shutdown grace period.
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Wakes objects of this reconciler, this one included.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The id of the object this pass reconciles.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The lease this pass holds, for the store's fenced writes
    /// (`play_store::leases::begin_fenced`): a write under it after
    /// the lease was lost writes nothing.
    pub fn fence(&self) -> Fence<'_> {
        Fence { reconciler: self.reconciler, owner: &self.owner, token: self.token }
    }
}

pub(crate) enum Request {
    /// Run at this instant, or earlier if already due earlier, in this lane.
    At(i64, Instant, queue::Lane),
    /// The ids a resync's `list()` returned (`None`: it failed, logged).
    Resync(Option<Vec<i64>>),
}

/// Asks a running [`Runtime`] to run objects. Cheap to clone; requests to a
/// runtime that has stopped are dropped.
#[derive(Clone, Debug)]
pub struct Handle {
    tx: mpsc::UnboundedSender<Request>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Request::At(id, at, lane) => f.debug_tuple("At").field(id).field(at).field(lane).finish(),
            Request::Resync(ids) => f.debug_tuple("Resync").field(&ids.as_ref().map(Vec::len)).finish(),
        }
    }
}

/// The longest delay a timer is kept for; later ones are cut to it (the pass
/// that runs then asks again).
const MAX_DELAY: Duration = Duration::from_secs(7 * 24 * 3600);

pub(crate) fn instant_after(delay: Duration) -> Instant {
    Instant::now() + delay.min(MAX_DELAY)
}

pub(crate) fn instant_at(at: Timestamp) -> Instant {
    let delay = (at - play_model::time::now()).to_std().unwrap_or(Duration::ZERO);
    instant_after(delay)
}

impl Handle {
    /// Runs `id` as soon as possible: something about it changed.
    /// It runs ahead of resync visits and timers that are due.
    pub fn wake(&self, id: i64) {
        let _ = self.tx.send(Request::At(id, Instant::now(), queue::Lane::Urgent));
    }

    /// Runs `id` after `delay`, unless it is due sooner.
    pub fn wake_after(&self, id: i64, delay: Duration) {
        let _ = self.tx.send(Request::At(id, instant_after(delay), queue::Lane::Routine));
    }

    /// Runs `id` at the wall-clock instant `at`, unless it is due sooner.
    pub fn wake_at(&self, id: i64, at: Timestamp) {
        let _ = self.tx.send(Request::At(id, instant_at(at), queue::Lane::Routine));
    }
}
