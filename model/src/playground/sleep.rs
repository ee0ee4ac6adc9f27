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

/// A `sleep_after` setting (a Playground's own, a Playspec's default, a
/// template's `svc.sleep_after`): inherit the next one out (the
/// Playspec's, then the operator's `PLAY_SLEEP_AFTER`), never sleep, or
/// sleep after this long without activity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SleepAfter {
    #[default]
    Inherit,
    Never,
    After(Duration),
}

impl SleepAfter {
    /// As stored: `NULL` inherits, 0 is never, else seconds.
    pub fn from_db(secs: Option<i64>) -> SleepAfter {
        match secs {
            None => SleepAfter::Inherit,
            Some(secs) if secs <= 0 => SleepAfter::Never,
            Some(secs) => SleepAfter::After(Duration::from_secs(secs.unsigned_abs())),
        }
    }

    /// What [`SleepAfter::from_db`] reads back.
    pub fn to_db(self) -> Option<i64> {
        match self {
            SleepAfter::Inherit => None,
            SleepAfter::Never => Some(0),
            SleepAfter::After(d) => Some(i64::try_from(d.as_secs()).unwrap_or(i64::MAX).max(1)),
        }
    }

    /// How long without activity it sleeps after; `None` when it does not
    /// say (never, or inherit).
    pub fn duration(self) -> Option<Duration> {
        match self {
            SleepAfter::After(d) => Some(d),
            SleepAfter::Inherit | SleepAfter::Never => None,
        }
    }

    /// Whether it makes a Playground sleep (a job-mode one may not).
    pub fn sleeps(self) -> bool {
        matches!(self, SleepAfter::After(_))
    }

    /// As the API shows a stored setting: `never`, a duration (`30m`),
    /// `None` when it inherits.
    pub fn shown(self) -> Option<String> {
        match self {
            SleepAfter::Inherit => None,
            SleepAfter::Never => Some("never".to_owned()),
            SleepAfter::After(d) => Some(humantime::format_duration(d).to_string()),
        }
    }
}

/// Serialized as stored (seconds, 0 for never, `null` to inherit), as the
/// template checks have always shown `svc.sleep_after`.
impl serde::Serialize for SleepAfter {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_db().serialize(serializer)
    }
}

/// A Playground's sleep settings and what its edge and reconciler recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sleep {
    /// Its own `sleep_after`.
    pub own_after: SleepAfter,
    /// Its Playspec's default.
    pub playspec_after: SleepAfter,
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
        let setting = match (self.own_after, self.playspec_after) {
            (SleepAfter::Inherit, SleepAfter::Inherit) => return operator.filter(|d| !d.is_zero()),
            (SleepAfter::Inherit, spec) => spec,
            (own, _) => own,
        };
        setting.duration()
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
/// [`MIN_SLEEP_AFTER`]..=[`MAX_SLEEP_AFTER`], or `never`; or what is wrong
/// with it.
pub fn parse_after(text: &str) -> Result<SleepAfter, String> {
    let text = text.trim();
    if text == "never" {
        return Ok(SleepAfter::Never);
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
    Ok(SleepAfter::After(d))
}

/// Parses the operator's default `sleep_after` (`PLAY_SLEEP_AFTER`): empty
/// or `never` never sleeps, else a duration as [`parse_after`] takes it.
pub fn parse_default(text: &str) -> Result<SleepAfter, String> {
    if text.trim().is_empty() {
        return Ok(SleepAfter::Never);
    }
    parse_after(text)
}

/// A change of a stored `sleep_after` setting (a rollout's, a Playspec's):
/// absent keeps it (`None`), `null` clears it to inherit, a value sets it
/// ([`parse_after`]).
pub fn parse_change(value: Option<Option<&str>>) -> Result<Option<SleepAfter>, String> {
    value.map(|v| v.map_or(Ok(SleepAfter::Inherit), parse_after)).transpose()
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
        let s = |own: Option<i64>, spec: Option<i64>| Sleep {
            own_after: SleepAfter::from_db(own),
            playspec_after: SleepAfter::from_db(spec),
            ..Sleep::default()
        };
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
        assert_eq!(parse_after("30m"), Ok(SleepAfter::After(Duration::from_secs(1800))));
        assert_eq!(parse_after("never"), Ok(SleepAfter::Never));
        assert!(parse_after("1s").unwrap_err().contains("between 5s and 30days"));
        assert!(parse_after("90days").is_err());
        assert!(parse_after("soon").unwrap_err().contains("\"never\""));
        assert_eq!(format_after(Some(Duration::from_secs(5400))).as_deref(), Some("1h 30m"));
        assert_eq!(parse_default(" "), Ok(SleepAfter::Never), "the operator's default: empty is never");
        assert_eq!(parse_default("never").map(SleepAfter::duration), Ok(None));
        assert_eq!(parse_default("30m").map(SleepAfter::duration), Ok(Some(Duration::from_secs(1800))));
        assert!(parse_default("1s").is_err());
        assert_eq!(parse_change(None), Ok(None));
        assert_eq!(parse_change(Some(None)), Ok(Some(SleepAfter::Inherit)));
        assert_eq!(parse_change(Some(Some("1h"))), Ok(Some(SleepAfter::After(Duration::from_secs(3600)))));
        assert!(parse_change(Some(Some("2s"))).is_err());
        for setting in [SleepAfter::Inherit, SleepAfter::Never, SleepAfter::After(Duration::from_secs(90))] {
            assert_eq!(SleepAfter::from_db(setting.to_db()), setting, "stored and read back");
        }
        assert_eq!(
            (
                SleepAfter::from_db(Some(0)).shown(),
                SleepAfter::from_db(Some(60)).shown(),
                SleepAfter::from_db(None).shown()
            ),
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
