//! The gate between the edge's wake listener lines and the store, one per
//! activity monitor (issue #49, item 7). Not the Playground's
//! `wake_gate`, which holds a woken route until its services listen.
//!
//! Every request that reaches a sleeping Playground's URL is one line, and
//! a hostile host can print any number of them: taken one by one to the
//! store, a flood at a sleeping URL kept SQLite's single writer busy with
//! a transaction per request. The gate turns any number of lines into a
//! bounded number of store calls, without losing a wake:
//! - **cooldown**: once a wake of a Playground reached the store, further
//!   lines for it are coalesced for [`COOLDOWN`]; one recheck follows the
//!   cooldown if any came (a Playground put to sleep again meanwhile still
//!   wakes, at most [`COOLDOWN`] plus a tick later);
//! - **rate**: a token bucket ([`RATE`] a second, [`BURST`] at once) bounds
//!   the store calls of one monitor, whatever the number of Playgrounds a
//!   host prints lines for; a line over it leaves its Playground pending
//!   for a later tick, and is counted and reported (never its content:
//!   lines hold request paths);
//! - only Playgrounds in the edge's current `sleeping` set pass at all.
//!
//! Invariants: memory is bounded by the Playroom's sleeping Playgrounds
//! (marks and pending ids of others are dropped at every [`WakeLineGate::due`]);
//! a Playground with a line admitted (or pending) and still sleeping
//! reaches the store within [`COOLDOWN`] plus the bucket's delay; store
//! calls per monitor never exceed [`BURST`] plus [`RATE`] a second. The
//! store call itself writes only for a Playground it finds asleep
//! (`play_store::power::wake_on_request`).
//!
//! Time is tokio's, so tests drive it with `tokio::time::pause()`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;

use tokio::time::Instant;

/// How long lines for a Playground are coalesced after a wake of it
/// reached the store: longer than a flood's burst, shorter than a client's
/// patience (a Playground put to sleep again within it waits that much
/// longer for its wake).
pub const COOLDOWN: Duration = Duration::from_secs(2);
/// Store calls a monitor makes per second, sustained.
pub const RATE: f64 = 10.0;
/// Store calls a monitor may make at once (the first request to each of
/// this many sleeping Playgrounds wakes it without delay).
pub const BURST: f64 = 20.0;
/// Lines over the rate are reported at most this often.
pub const REPORT_EVERY: Duration = Duration::from_secs(60);

/// What [`WakeLineGate::admit`] decided for one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not a sleeping Playground of this edge: dropped.
    Ignored,
    /// Within the cooldown of the Playground's last wake, or already
    /// pending: folded into one later recheck.
    Coalesced,
    /// Over the monitor's rate: pending for a later tick.
    OverRate,
    /// To the store now; report the outcome with [`WakeLineGate::stored`] or
    /// [`WakeLineGate::failed`].
    Store,
}

/// See the [module documentation](self).
#[derive(Debug)]
pub struct WakeLineGate {
    /// Playground id -> when a wake of it last reached the store.
    marks: HashMap<i64, Instant>,
    /// Playgrounds with a line not taken to the store yet (coalesced or
    /// over the rate): each is one store call once due.
    pending: BTreeSet<i64>,
    bucket: Bucket,
    /// Lines over the rate since the last report.
    over_rate: u64,
    reported: Option<Instant>,
}

impl WakeLineGate {
    pub fn new(now: Instant) -> Self {
        WakeLineGate {
            marks: HashMap::new(),
            pending: BTreeSet::new(),
            bucket: Bucket { tokens: BURST, at: now },
            over_rate: 0,
            reported: None,
        }
    }

    /// One wake line for Playground `id`, given the edge's current
    /// `sleeping` set.
    pub fn admit(&mut self, id: i64, sleeping: &HashSet<i64>, now: Instant) -> Verdict {
        if !sleeping.contains(&id) {
            return Verdict::Ignored;
        }
        if self.pending.contains(&id) || self.marked(id, now) {
            self.pending.insert(id);
            return Verdict::Coalesced;
        }
        if self.bucket.take(now) {
            return Verdict::Store;
        }
        self.pending.insert(id);
        self.over_rate += 1;
        Verdict::OverRate
    }

    /// The store answered a wake of `id` (whatever it found): its lines
    /// are coalesced for [`COOLDOWN`] from `now`.
    pub fn stored(&mut self, id: i64, now: Instant) {
        self.marks.insert(id, now);
    }

    /// The store failed a wake of `id`: it is tried again once the
    /// cooldown from `now` is over, line or not.
    pub fn failed(&mut self, id: i64, now: Instant) {
        self.marks.insert(id, now);
        self.pending.insert(id);
    }

    /// The pending Playgrounds to take to the store now (each answered
    /// with [`WakeLineGate::stored`] or [`WakeLineGate::failed`]): those still in
    /// `sleeping`, out of their cooldown, as far as the bucket allows.
    /// Forgets whatever is not in `sleeping` any more.
    pub fn due(&mut self, sleeping: &HashSet<i64>, now: Instant) -> Vec<i64> {
        self.marks.retain(|id, at| sleeping.contains(id) && now.saturating_duration_since(*at) < COOLDOWN);
        self.pending.retain(|id| sleeping.contains(id));
        let mut due = Vec::new();
        for id in &self.pending {
            if self.marks.contains_key(id) {
                continue;
            }
            if !self.bucket.take(now) {
                break;
            }
            due.push(*id);
        }
        for id in &due {
            self.pending.remove(id);
        }
        due
    }

    /// How many lines went over the rate since the last report, when there
    /// were some and the last report is [`REPORT_EVERY`] old.
    pub fn report(&mut self, now: Instant) -> Option<u64> {
        let quiet = self.reported.is_some_and(|at| now.saturating_duration_since(at) < REPORT_EVERY);
        if self.over_rate == 0 || quiet {
            return None;
        }
        self.reported = Some(now);
        Some(std::mem::take(&mut self.over_rate))
    }

    fn marked(&self, id: i64, now: Instant) -> bool {
        self.marks.get(&id).is_some_and(|at| now.saturating_duration_since(*at) < COOLDOWN)
    }
}

/// A token bucket: [`RATE`] tokens a second, at most [`BURST`] kept.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn take(&mut self, now: Instant) -> bool {
        let refill = now.saturating_duration_since(self.at).as_secs_f64() * RATE;
        self.tokens = (self.tokens + refill).min(BURST);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
#[path = "wake_lines_tests.rs"]
mod tests;
