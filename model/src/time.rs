//! Timestamps.
//!
//! Invariant: every timestamp play stores is UTC with millisecond precision
//! and is written to the database in one fixed-width form
//! (`2026-11-21T19:06:34.123Z`). Fixed width makes lexicographic order equal
//! to time order, so both backends can compare and sort the stored text
//! (`expires_at < $1`) without a native time type, which sqlx's `Any` driver
//! cannot carry across SQLite and PostgreSQL.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};

use crate::{Error, Result};

pub type Timestamp = DateTime<Utc>;

/// The current time, truncated to milliseconds so a value survives a round
/// trip through the store unchanged.
pub fn now() -> Timestamp {
    truncate(Utc::now())
}

pub fn truncate(ts: Timestamp) -> Timestamp {
    let millis = ts.timestamp_millis();
    Utc.timestamp_millis_opt(millis).single().unwrap_or(ts)
}

/// An expiry as a person writes it (`play keys create --expires-at`): an
/// RFC 3339 time, or a duration from `now` (`90d`, `12h`); in the future,
/// truncated as stored. The error says what is wrong, to follow the
/// setting's name.
pub fn parse_expiry(text: &str, now: Timestamp) -> std::result::Result<Timestamp, String> {
    let at = match DateTime::parse_from_rfc3339(text) {
        Ok(at) => at.with_timezone(&Utc),
        Err(_) => {
            let duration = humantime::parse_duration(text)
                .map_err(|e| format!("{text:?} is neither an RFC 3339 time nor a duration: {e}"))?;
            let duration = chrono::Duration::from_std(duration).map_err(|e| format!("is too far away: {e}"))?;
            now.checked_add_signed(duration).ok_or("is too far away")?
        }
    };
    if at <= now {
        return Err("must be in the future".into());
    }
    Ok(truncate(at))
}

/// The stored form.
pub fn to_db(ts: &Timestamp) -> String {
    ts.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn from_db(text: &str) -> Result<Timestamp> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| Error::Internal(format!("stored timestamp {text:?} is not RFC 3339: {e}")))
}

pub fn opt_from_db(text: Option<String>) -> Result<Option<Timestamp>> {
    text.as_deref().map(from_db).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_form_round_trips_and_sorts_like_time() {
        let a = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let b = a + chrono::Duration::milliseconds(7);
        assert_eq!(to_db(&a), "2026-01-02T03:04:05.000Z");
        assert_eq!(from_db(&to_db(&b)).unwrap(), b);
        assert!(to_db(&a) < to_db(&b));
    }

    #[test]
    fn an_expiry_is_a_time_or_a_duration_from_now_in_the_future() {
        let now = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        assert_eq!(parse_expiry("2026-01-03T00:00:00Z", now), Ok(Utc.with_ymd_and_hms(2026, 1, 3, 0, 0, 0).unwrap()));
        assert_eq!(parse_expiry("12h", now), Ok(now + chrono::Duration::hours(12)));
        assert_eq!(parse_expiry("2026-01-01T00:00:00Z", now), Err("must be in the future".to_owned()));
        assert!(parse_expiry("soon", now).is_err_and(|e| e.starts_with("\"soon\" is neither")));
    }

    #[test]
    fn now_has_millisecond_precision() {
        let t = now();
        assert_eq!(from_db(&to_db(&t)).unwrap(), t);
    }
}
