//! One pass over one Playground, shaped like a Kubernetes controller's:
//! read the inputs once ([`snapshot`]), classify the Playground's
//! lifecycle ([`lifecycle::classify`], pure), and run that one arm:
//! [`expire`], [`asleep`] (falling asleep, kept asleep), [`converge`] or
//! [`destroy`] (clean the host, a released job). An arm that changes the
//! Playground's state in the store (the expiry recorded, put to sleep, a
//! job's completion) ends the pass with "requeue now": the next pass reads
//! the new state instead of this one reloading the row in place. When to
//! look again is [`lifecycle::next_visit`] for a live Playground (see the
//! [parent module](super) for the whole contract).
//!
//! Owns the order of a pass and its fenced store writes. What the host
//! holds is `observe`'s, what to do is `plan`'s (pure), how a step reaches
//! the engine is `apply`'s and the job rules are `job`'s: these modules
//! call them, and must not grow engine calls or plan rules of their own.

mod asleep;
mod converge;
mod destroy;
mod expire;
pub(super) mod lifecycle;
mod snapshot;

use play_model::playground::CreationStep;
use play_model::time;
use play_store::playground_status::Fence;

use super::{PlaygroundReconciler, sleep};
use crate::Result;
use crate::runtime::Action;
use lifecycle::Lifecycle;
use snapshot::{Host, Row};

/// One pass over one Playground; `step` is where it is, for error reports.
pub(super) struct Pass<'a> {
    r: &'a PlaygroundReconciler,
    fence: Fence<'a>,
    id: i64,
    step: CreationStep,
    /// Whether the Playground's Playroom is trusted (its builds may fetch
    /// remote sources and use any registry), once the pass read it.
    trusted: bool,
}

impl<'a> Pass<'a> {
    pub(super) fn new(r: &'a PlaygroundReconciler, fence: Fence<'a>, id: i64) -> Self {
        Pass { r, fence, id, step: CreationStep::Queued, trusted: false }
    }

    /// Where the pass is, for an error report.
    pub(super) fn step(&self) -> CreationStep {
        self.step
    }

    /// The pass: read, classify, run one arm.
    pub(super) async fn run(&mut self) -> Result<Action> {
        let Some(Row { p, host_released }) = Row::read(self).await? else {
            self.r.expiries.forget(self.id);
            return Ok(Action::await_change());
        };
        // Known to the error policy: a Playground that keeps failing still
        // expires on time.
        self.r.expiries.note(&p);
        let now = time::now();
        let arm = lifecycle::classify(&p, now, host_released, sleep::idle_cutoff(self.r, &p, now));
        if p.desired_state == play_model::playground::DesiredState::Running {
            // An error before any step of this pass (the host unreachable,
            // a corrupt row) is reported at the step the Playground is at.
            self.step = p.creation_step.unwrap_or(CreationStep::Queued);
        }
        match arm {
            Lifecycle::Expire => self.expire(now).await,
            Lifecycle::Released => self.released(&p).await,
            Lifecycle::FallAsleep { cutoff } => {
                if self.fall_asleep(cutoff).await? {
                    return Ok(Action::requeue_now());
                }
                let host = Host::read(self, &p).await?;
                self.converge_running(&p, &host).await
            }
            Lifecycle::Asleep => {
                let host = Host::read(self, &p).await?;
                self.keep_asleep(&p, &host).await
            }
            Lifecycle::Converge => {
                let host = Host::read(self, &p).await?;
                self.converge_running(&p, &host).await
            }
            Lifecycle::Clean => {
                let host = Host::read(self, &p).await?;
                self.clean(&p, &host).await
            }
        }
    }
}
