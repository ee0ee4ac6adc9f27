//! Sleep and wake (issue #32): when a Playground should sleep, from its
//! settings and the activity its edge saw, as plain data and pure rules.
//!
//! A Playground's *desired power* ([`Power`]) is awake or asleep. The API
//! (`POST .../sleep`, `.../wake`), the edge (a request to a sleeping URL)
//! and the Playground reconciler (no activity for `sleep_after`) change it;
//! the reconciler converges the host to it: asleep is every container
//! stopped (not removed), networks, volumes and pinned commits kept, status
//! `sleeping`; awake is the ordinary converged Playground.
//!
//! Invariants: a job-mode Playground never sleeps (its `sleep_after` is
//! refused at validation and [`Sleep::after`] is `None` for it); the idle
//! clock starts at the latest of its last activity, when it last became
//! `running` and when its power last changed, so a Playground that just
//! woke, or took long to create, gets its whole `sleep_after` before it
//! sleeps again.

use std::time::Duration;

use super::state::{Power, PowerReason};
use crate::time::Timestamp;

/// The longest `sleep_after` accepted: 30 days.
pub const MAX_SLEEP_AFTER: Duration = Duration::from_secs(30 * 86_400);
/// The shortest: 5 seconds (the edge samples activity every 2 s).
pub const MIN_SLEEP_AFTER: Duration = Duration::from_secs(5);

/// A Playground's sleep settings and what its edge and reconciler recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sleep {
    /// Its own `sleep_after` in seconds: `None` inherits (its Playspec's,
    /// then the operator's), `Some(0)` never sleeps.
    pub own_after: Option<i64>,
    /// Its Playspec's default, the same way.
    pub playspec_after: Option<i64>,
    pub power: Power,
    pub reason: Option<PowerReason>,
    pub power_changed_at: Option<Timestamp>,
    pub running_since: Option<Timestamp>,
    pub slept_at: Option<Timestamp>,
    pub last_active_at: Option<Timestamp>,
}

impl Sleep {
    /// How long without activity it sleeps after, `None` for never: its own
    /// setting, else its Playspec's, else `operator` (the installation's
    /// default, off unless set); never for a job.
    pub fn after(&self, job_mode: bool, operator: Option<Duration>) -> Option<Duration> {
        if job_mode {
            return None;
        }
        let secs = |s: i64| (s > 0).then(|| Duration::from_secs(s.unsigned_abs()));
        match (self.own_after, self.playspec_after) {
            (Some(own), _) => secs(own),
            (None, Some(spec)) => secs(spec),
            (None, None) => operator.filter(|d| !d.is_zero()),
        }
    }

    /// Where the idle clock starts: the latest of its last activity, when
    /// it last became running and when its power last changed.
    pub fn idle_since(&self) -> Option<Timestamp> {
        [self.last_active_at, self.running_since, self.power_changed_at].into_iter().flatten().max()
    }

    /// When it falls asleep if nothing happens before, given its
    /// effective `after`; `None` when it never sleeps or has no clock yet.
    pub fn sleeps_at(&self, after: Option<Duration>) -> Option<Timestamp> {
        let after = chrono::Duration::from_std(after?).ok()?;
        Some(self.idle_since()? + after)
    }
}

/// `sleep_after` as the API shows it (`30m`, `1h 30m`), `None` for never.
pub fn format_after(after: Option<Duration>) -> Option<String> {
    after.map(|d| humantime::format_duration(d).to_string())
}

/// Parses a `sleep_after` value: a duration (`30m`, `2h`) within
/// [`MIN_SLEEP_AFTER`]..=[`MAX_SLEEP_AFTER`], or `never`. Answers seconds
/// (0 for never) or what is wrong with it.
pub fn parse_after(text: &str) -> Result<i64, String> {
    let text = text.trim();
    if text == "never" {
        return Ok(0);
    }
    let d = humantime::parse_duration(text)
        .map_err(|e| format!("{e}: give a duration such as \"30m\" or \"2h\", or \"never\""))?;
    if d < MIN_SLEEP_AFTER || d > MAX_SLEEP_AFTER {
        return Err(format!(
            "must be between {} and {} (or \"never\")",
            humantime::format_duration(MIN_SLEEP_AFTER),
            humantime::format_duration(MAX_SLEEP_AFTER)
        ));
    }
    i64::try_from(d.as_secs()).map_err(|_| "too long".to_owned())
}

/// A change of a stored `sleep_after` setting (a rollout's, a Playspec's):
/// absent keeps it (`None`), `null` clears it to inherit (`Some(None)`), a
/// value sets it ([`parse_after`]).
pub fn parse_change(value: Option<Option<&str>>) -> Result<Option<Option<i64>>, String> {
    value.map(|v| v.map(parse_after).transpose()).transpose()
}

/// A stored own setting as the API shows it: `never` for 0, `None` when
/// it inherits.
pub fn format_own(secs: Option<i64>) -> Option<String> {
    secs.map(|secs| match secs {
        0 => "never".to_owned(),
        secs => humantime::format_duration(Duration::from_secs(secs.unsigned_abs())).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        chrono::DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    #[test]
    fn the_own_setting_wins_then_the_playspec_then_the_operator() {
        let hour = Some(Duration::from_secs(3600));
        let s = |own, spec| Sleep { own_after: own, playspec_after: spec, ..Sleep::default() };
        assert_eq!(s(Some(60), Some(600)).after(false, hour), Some(Duration::from_secs(60)));
        assert_eq!(s(Some(0), Some(600)).after(false, hour), None, "0 is never, not inherit");
        assert_eq!(s(None, Some(600)).after(false, hour), Some(Duration::from_secs(600)));
        assert_eq!(s(None, Some(0)).after(false, hour), None);
        assert_eq!(s(None, None).after(false, hour), hour);
        assert_eq!(s(None, None).after(false, None), None, "off unless the operator sets it");
        assert_eq!(s(Some(60), None).after(true, hour), None, "a job never sleeps");
    }

    #[test]
    fn the_idle_clock_starts_at_the_latest_of_activity_running_and_power() {
        let s = Sleep {
            last_active_at: Some(at(10)),
            running_since: Some(at(30)),
            power_changed_at: Some(at(20)),
            ..Sleep::default()
        };
        assert_eq!(s.idle_since(), Some(at(30)));
        assert_eq!(s.sleeps_at(Some(Duration::from_secs(5))), Some(at(35)));
        assert_eq!(s.sleeps_at(None), None);
        assert_eq!(Sleep::default().sleeps_at(Some(Duration::from_secs(5))), None, "no clock yet");
    }

    #[test]
    fn sleep_after_values() {
        assert_eq!(parse_after("30m"), Ok(1800));
        assert_eq!(parse_after("never"), Ok(0));
        assert!(parse_after("1s").unwrap_err().contains("between 5s and 30days"));
        assert!(parse_after("90days").is_err());
        assert!(parse_after("soon").unwrap_err().contains("\"never\""));
        assert_eq!(format_after(Some(Duration::from_secs(5400))).as_deref(), Some("1h 30m"));
        assert_eq!(parse_change(None), Ok(None));
        assert_eq!(parse_change(Some(None)), Ok(Some(None)));
        assert_eq!(parse_change(Some(Some("1h"))), Ok(Some(Some(3600))));
        assert!(parse_change(Some(Some("2s"))).is_err());
        assert_eq!(
            (format_own(Some(0)), format_own(Some(60)), format_own(None)),
            (Some("never".into()), Some("1m".into()), None)
        );
    }

    #[test]
    fn every_value_the_documents_pattern_allows_is_accepted() {
        let pattern = regex::Regex::new(crate::validate::patterns::SLEEP_AFTER).unwrap();
        let mut allowed = vec!["never".to_owned()];
        for (unit, max) in [("s", 999_999), ("m", 9_999), ("h", 720), ("d", 30)] {
            for n in (1..=max).step_by(if max > 1000 { 997 } else { 1 }).chain([max]) {
                allowed.push(format!("{n}{unit}"));
            }
        }
        let mut checked = 0;
        for text in allowed.iter().filter(|t| pattern.is_match(t)) {
            assert!(parse_after(text).is_ok(), "{text} matches the pattern but is refused");
            checked += 1;
        }
        assert!(checked > 1000, "{checked}");
        for refused in ["4s", "0m", "721h", "31d", "1000000s", "30m ", "soon"] {
            assert!(!pattern.is_match(refused), "{refused}");
        }
    }
}
