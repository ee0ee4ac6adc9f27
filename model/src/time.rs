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
    fn now_has_millisecond_precision() {
        let t = now();
        assert_eq!(from_db(&to_db(&t)).unwrap(), t);
    }
}
