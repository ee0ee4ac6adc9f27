//! Schedules (issue #30): a template's `svc.schedule_config` read as a
//! plan of runs. Pure: no store, no clock of its own (every function takes
//! "now"), so the rules below are tested here without waiting.
//!
//! - **The pattern** is 5 cron fields, or 6 with a leading seconds field
//!   (croner, Vixie-cron semantics: a day of month and a day of week both
//!   given match either), in `time_zone` (IANA, default UTC). A pattern
//!   that never fires (the 30th of February) is refused.
//! - **Due times** are handled in order from the schedule's cursor (the
//!   first time not handled yet). Of the times that passed, only the
//!   latest may start, and only within `starting_deadline_seconds` of it;
//!   every other one is recorded as missed ([`plan`]). So a play that was
//!   down starts at most one catch-up run, and never a burst.
//! - **Concurrency** ([`Policy`], as Kubernetes CronJob): `forbid` skips a
//!   run while the previous one is still going, `allow` starts it anyway,
//!   `replace` destroys the previous one first.

use std::fmt;
use std::str::FromStr;

use chrono::Duration;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use crate::time::Timestamp;

/// The starting deadline when the config gives none.
pub const DEFAULT_STARTING_DEADLINE: Duration = Duration::minutes(10);
/// The most missed times one pass records one by one; more are counted in
/// its event only.
pub const MAX_MISSED_RECORDED: usize = 100;
/// How many coming fire times the shortest-interval check looks at.
const GAP_SAMPLE: usize = 500;

/// What a run does while the previous one of its schedule still runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Skip the new run (recorded as skipped, with the reason).
    #[default]
    Forbid,
    /// Start it anyway.
    Allow,
    /// Destroy the previous run's Playground, then start.
    Replace,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Forbid => "forbid",
            Policy::Allow => "allow",
            Policy::Replace => "replace",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "forbid" => Ok(Policy::Forbid),
            "allow" => Ok(Policy::Allow),
            "replace" => Ok(Policy::Replace),
            other => Err(format!("concurrency_policy `{other}` must be forbid, allow or replace")),
        }
    }
}

/// A schedule's timing, checked.
#[derive(Clone, Debug)]
pub struct Spec {
    cron: Cron,
    pub pattern: String,
    pub time_zone: chrono_tz::Tz,
    pub policy: Policy,
    pub starting_deadline: Duration,
}

impl PartialEq for Spec {
    fn eq(&self, other: &Spec) -> bool {
        self.pattern == other.pattern
            && self.time_zone == other.time_zone
            && self.policy == other.policy
            && self.starting_deadline == other.starting_deadline
    }
}

/// Parses a cron pattern as schedules read it: why not, when it is not one.
pub fn parse_cron(pattern: &str) -> Result<Cron, String> {
    let fields = pattern.split_whitespace().count();
    if !(5..=6).contains(&fields) {
        return Err(format!(
            "`{pattern}` has {fields} fields: a cron pattern has 5 (minute hour day-of-month month day-of-week), \
             or 6 with a leading seconds field"
        ));
    }
    let parser = CronParser::builder().seconds(Seconds::Optional).year(Year::Disallowed).build();
    parser.parse(pattern).map_err(|e| format!("`{pattern}` is not a cron pattern: {e}"))
}

/// Parses an IANA time zone name (`Europe/Paris`, `UTC`).
pub fn parse_time_zone(name: &str) -> Result<chrono_tz::Tz, String> {
    name.parse::<chrono_tz::Tz>()
        .map_err(|_| format!("`{name}` is not an IANA time zone name (such as UTC or Europe/Paris)"))
}

impl Spec {
    /// The spec of `pattern` in `time_zone`; `Err` names the field and why.
    pub fn new(
        pattern: &str,
        time_zone: Option<&str>,
        policy: Policy,
        starting_deadline: Option<Duration>,
        now: Timestamp,
    ) -> Result<Spec, (&'static str, String)> {
        let cron = parse_cron(pattern).map_err(|m| ("cron", m))?;
        let time_zone = parse_time_zone(time_zone.unwrap_or("UTC")).map_err(|m| ("time_zone", m))?;
        let starting_deadline = starting_deadline.unwrap_or(DEFAULT_STARTING_DEADLINE);
        if starting_deadline < Duration::zero() {
            return Err(("starting_deadline_seconds", "must not be negative".into()));
        }
        let spec = Spec { cron, pattern: pattern.trim().to_owned(), time_zone, policy, starting_deadline };
        if spec.next_after(now).is_none() {
            return Err(("cron", format!("`{pattern}` never fires (no date matches it)")));
        }
        Ok(spec)
    }

    /// The first fire time strictly after `t`; `None` when there is none.
    /// Fire times are whole seconds.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let local = whole_second(t).with_timezone(&self.time_zone);
        self.cron.find_next_occurrence(&local, false).ok().map(|at| at.with_timezone(&chrono::Utc))
    }

    /// The last fire time at or before `t`.
    fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        let local = whole_second(t).with_timezone(&self.time_zone);
        self.cron.find_previous_occurrence(&local, true).ok().map(|at| at.with_timezone(&chrono::Utc))
    }

    /// The shortest time between two consecutive fire times among the next
    /// few hundred after `from`: what the operator's minimum interval is
    /// checked against.
    pub fn shortest_gap(&self, from: Timestamp) -> Option<Duration> {
        let mut previous = self.next_after(from)?;
        let mut shortest: Option<Duration> = None;
        for _ in 0..GAP_SAMPLE {
            let Some(next) = self.next_after(previous) else { break };
            let gap = next - previous;
            shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
            previous = next;
        }
        shortest
    }
}

/// `t` without its fraction of a second (croner keeps it, and a fire time
/// with one would never equal the pattern's times).
fn whole_second(t: Timestamp) -> Timestamp {
    t - Duration::nanoseconds(i64::from(chrono::Timelike::nanosecond(&t)))
}

/// Why `spec` fires too often for an operator's `minimum` interval
/// between two runs, if it does (refused at template validation).
pub fn too_frequent(spec: &Spec, minimum: Duration, now: Timestamp) -> Option<String> {
    let gap = spec.shortest_gap(now)?;
    (gap < minimum).then(|| {
        format!(
            "`{}` fires every {} s at times; this play allows a schedule at most every {} s (the operator's \
             PLAY_SCHEDULE_MIN_INTERVAL)",
            spec.pattern,
            gap.num_seconds(),
            minimum.num_seconds()
        )
    })
}

/// What a pass does with the times that came due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The time to start a run for (the latest due one, within the
    /// starting deadline).
    pub start: Option<Timestamp>,
    /// Due times recorded as missed, oldest first (at most
    /// [`MAX_MISSED_RECORDED`]).
    pub missed: Vec<Timestamp>,
    /// More times were missed than `missed` holds.
    pub more_missed: bool,
    /// The schedule's next cursor: the first fire time after `now`.
    pub next: Option<Timestamp>,
}

/// The plan for a schedule whose first unhandled time is `cursor`, at
/// `now` (see the [module documentation](self)).
pub fn plan(spec: &Spec, cursor: Timestamp, now: Timestamp) -> Plan {
    let next = spec.next_after(now);
    if cursor > now {
        return Plan { start: None, missed: Vec::new(), more_missed: false, next: Some(cursor) };
    }
    let Some(latest) = spec.last_at_or_before(now).filter(|t| *t >= cursor) else {
        return Plan { start: None, missed: Vec::new(), more_missed: false, next };
    };
    let start = (now - latest <= spec.starting_deadline).then_some(latest);
    let mut missed = Vec::new();
    let mut more_missed = false;
    // The cursor is a fire time itself (or the time the schedule began).
    let mut at = if spec.last_at_or_before(cursor) == Some(cursor) { Some(cursor) } else { spec.next_after(cursor) };
    while let Some(t) = at.filter(|t| *t <= latest) {
        if t == latest && start.is_some() {
            break;
        }
        if missed.len() == MAX_MISSED_RECORDED {
            more_missed = true;
            break;
        }
        missed.push(t);
        at = spec.next_after(t);
    }
    Plan { start, missed, more_missed, next }
}

#[cfg(test)]
mod tests;
