//! Which arm a pass runs, and when the next one comes: pure functions of
//! the Playground as the pass read it ([`classify`], [`next_visit`]).

use std::time::Duration;

use play_model::playground::{DesiredState, Playground, PlaygroundStatus, Power};
use play_model::time::Timestamp;

use crate::runtime::Action;

/// Where a Playground is in its life, as one pass sees it: each is one
/// arm of the pass (`super::Pass::run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lifecycle {
    /// Past `expires_at` and not yet destroyed: record the expiry (the
    /// next pass cleans the host).
    Expire,
    /// A completed job whose host objects are gone: wait for its
    /// retention's end, or (destroyed) delete the row. It never reaches
    /// its host again.
    Released,
    /// Awake, `running` and idle since before `cutoff`: put it to sleep if
    /// the store still finds it idle (the next pass stops it), else
    /// converge it.
    FallAsleep { cutoff: Timestamp },
    /// Asked to sleep: every container stopped, and kept.
    Asleep,
    /// Asked to run: observe, plan and apply until converged.
    Converge,
    /// Destroyed or complete: nothing may stay on the host.
    Clean,
}

/// The arm for `p` at `now`. `host_released`: a completed job's result
/// says its host objects are gone. `idle_cutoff`: when it was due to sleep
/// (`sleep::idle_cutoff`), the instant before which activity no longer
/// keeps it awake.
pub(super) fn classify(
    p: &Playground,
    now: Timestamp,
    host_released: bool,
    idle_cutoff: Option<Timestamp>,
) -> Lifecycle {
    let running = p.desired_state == DesiredState::Running;
    if p.desired_state != DesiredState::Destroyed && p.expires_at.is_some_and(|at| at <= now) {
        return Lifecycle::Expire;
    }
    if p.job_mode && !running && host_released {
        return Lifecycle::Released;
    }
    if !running {
        return Lifecycle::Clean;
    }
    if p.sleep.power == Power::Asleep {
        return Lifecycle::Asleep;
    }
    match idle_cutoff {
        Some(cutoff) if p.status == PlaygroundStatus::Running => Lifecycle::FallAsleep { cutoff },
        _ => Lifecycle::Converge,
    }
}

/// When to look at a live Playground again: after `poll` (waiting on the
/// host), or when woken, and never later than its expiry or the moment it
/// falls asleep (`sleep_deadline`). The one place a pass's next visit is
/// computed.
pub(in crate::playground) fn next_visit(
    p: &Playground,
    sleep_deadline: Option<Timestamp>,
    poll: Option<Duration>,
) -> Action {
    poll.map_or_else(Action::await_change, Action::requeue_after).or_at(p.expires_at).or_at(sleep_deadline)
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
