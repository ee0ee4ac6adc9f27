//! One pass on a worker, under its lease: claim the object's lease, run
//! [`Reconciler::reconcile`] while renewing it every third of its
//! duration, drop the pass when the lease is lost or cannot be proven held
//! before it expires (cancelling [`Ctx::lease_lost`]), release the lease,
//! and report the [`Outcome`] to the loop (`controller`), which decides the
//! next run. This is where the runtime keeps its guarantee of never two
//! concurrent passes on one object across replicas (see [`super`]).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use play_model::model::lease::Lease;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::metrics::Recorder;
use super::{Action, Config, Ctx, Handle, LeaseStore, Reconciler, instant_at};
use crate::Error;

/// What every worker shares.
pub(super) struct Shared<R> {
    pub(super) reconciler: Arc<R>,
    pub(super) leases: Arc<dyn LeaseStore>,
    pub(super) config: Config,
    pub(super) owner: Arc<str>,
    pub(super) handle: Handle,
    pub(super) shutdown: CancellationToken,
    /// Leases held by running passes, for release after passes are dropped
    /// at shutdown.
    pub(super) held: Mutex<HashMap<i64, Lease>>,
    /// The runtime's metrics; `play_leases_held` is set under the `held`
    /// lock, so it is always the size of `held`.
    pub(super) recorder: Recorder,
}

impl<R> Shared<R> {
    fn held(&self) -> MutexGuard<'_, HashMap<i64, Lease>> {
        // Inserts and removes only: never half-updated.
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records that a pass holds `lease`, and the count in the metrics.
    fn hold(&self, id: i64, lease: Lease) {
        let mut held = self.held();
        held.insert(id, lease);
        self.recorder.leases_held(held.len());
    }

    /// Records that the pass of `id` no longer holds its lease.
    fn unhold(&self, id: i64) {
        let mut held = self.held();
        held.remove(&id);
        self.recorder.leases_held(held.len());
    }

    /// Takes every lease still held (passes dropped at shutdown), to
    /// release them.
    pub(super) fn take_held(&self) -> Vec<Lease> {
        let mut held = self.held();
        let taken = std::mem::take(&mut *held).into_values().collect();
        self.recorder.leases_held(0);
        taken
    }
}

/// How one started pass ended.
pub(super) enum Outcome {
    /// Another replica holds the lease (until the instant, when known):
    /// nothing ran.
    Busy(Option<Instant>),
    /// The lease could not be claimed (the store failed): nothing ran.
    ClaimFailed(play_core::Error),
    /// The pass was dropped because its lease was lost.
    LeaseLost(Duration),
    Finished(Duration, Result<Action, Error>),
    Panicked(Duration),
    /// No pass ran: the object's group was looked up ([`look_up_group`]).
    Grouped(Result<Option<i64>, Error>),
}

/// Looks up the group of `id` ([`Reconciler::group`]), bounded by the
/// lease duration like any store call of a pass.
pub(super) async fn look_up_group<R: Reconciler>(shared: &Shared<R>, id: i64) -> Outcome {
    let bound = shared.config.lease_duration;
    match tokio::time::timeout(bound, shared.reconciler.group(R::Id::from(id))).await {
        Ok(group) => Outcome::Grouped(group),
        Err(_) => {
            let message = format!("looking up the group of {} {id} took over {bound:?}", R::NAME);
            Outcome::Grouped(Err(Error::Store(play_core::Error::Internal(message))))
        }
    }
}

/// One pass over `id`: claim, reconcile while renewing, release.
pub(super) async fn run_pass<R: Reconciler>(shared: &Shared<R>, id: i64, attempt: u32) -> Outcome {
    let duration = shared.config.lease_duration;
    let asked = Instant::now();
    let lease = match shared.leases.claim(R::NAME, id, &shared.owner, duration).await {
        Ok(Some(lease)) => lease,
        Ok(None) => {
            // Best effort: without it, the plain retry delay applies.
            let until = shared.leases.expires_at(R::NAME, id).await.ok().flatten();
            return Outcome::Busy(until.map(instant_at));
        }
        Err(error) => return Outcome::ClaimFailed(error),
    };
    shared.hold(id, lease.clone());
    let lease_lost = CancellationToken::new();
    let ctx = Ctx {
        reconciler: R::NAME,
        id,
        owner: shared.owner.clone(),
        token: lease.token,
        attempt,
        lease_lost: lease_lost.clone(),
        shutdown: shared.shutdown.clone(),
        handle: shared.handle.clone(),
    };
    let started = Instant::now();
    let result = {
        let work = AssertUnwindSafe(shared.reconciler.reconcile(R::Id::from(id), &ctx)).catch_unwind();
        tokio::pin!(work);
        let renew_every = (duration / 3).max(Duration::from_millis(10));
        // Measured from before the claim was sent: never later than the
        // stored expiry.
        let mut valid_until = asked + duration;
        let mut next_renew = started + renew_every;
        loop {
            tokio::select! {
                done = &mut work => break Some(done),
                () = tokio::time::sleep_until(next_renew) => {
                    let sent = Instant::now();
                    match tokio::time::timeout(renew_every / 2, shared.leases.renew(&lease, duration)).await {
                        Ok(Ok(true)) => {
                            valid_until = sent + duration;
                            next_renew = sent + renew_every;
                        }
                        Ok(Ok(false)) => {
                            tracing::warn!(reconciler = R::NAME, id, "lease lost: dropping the pass");
                            break None;
                        }
                        failed => {
                            let now = Instant::now();
                            if now + renew_every / 2 >= valid_until {
                                tracing::warn!(
                                    reconciler = R::NAME,
                                    id,
                                    ?failed,
                                    "lease not renewed before it expires: dropping the pass"
                                );
                                break None;
                            }
                            tracing::debug!(reconciler = R::NAME, id, ?failed, "renewing the lease failed; retrying");
                            next_renew = now + renew_every / 4;
                        }
                    }
                }
            }
        }
    };
    let elapsed = started.elapsed();
    if result.is_none() {
        lease_lost.cancel();
    }
    // Harmless when the lease was lost: release only matches our token.
    if let Err(error) = shared.leases.release(&lease).await {
        tracing::warn!(reconciler = R::NAME, id, %error, "releasing the lease failed; it will expire");
    }
    shared.unhold(id);
    match result {
        None => Outcome::LeaseLost(elapsed),
        Some(Ok(result)) => Outcome::Finished(elapsed, result),
        Some(Err(_panic)) => Outcome::Panicked(elapsed),
    }
}
