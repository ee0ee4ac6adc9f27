//! A Playground's lifetime: the default, the bounds, and the one place
//! `expires_at` is worked out (issue #28, step 3).
//!
//! A Playground expires at its creation plus its TTL; `extend` moves
//! `expires_at` to `max(expires_at, now) + by`; a server-side apply that
//! changes `spec.ttl` puts it back at creation plus the new TTL. Every
//! layer (API, apply, launch, store, CLI help) takes its numbers from here.

use std::time::Duration;

use crate::time::Timestamp;

/// A new Playground's lifetime when the operator sets none, and an
/// extension's when the request names no duration: eight hours.
pub const DEFAULT_TTL: Duration = Duration::from_secs(8 * 3600);
/// A new job-mode Playground's lifetime when the operator sets none.
pub const DEFAULT_JOB_TTL: Duration = Duration::from_secs(3600);
/// The shortest TTL a manifest may give.
pub const MIN_TTL: Duration = Duration::from_secs(60);
/// The longest TTL a manifest may give, and the longest single extension:
/// thirty days.
pub const MAX_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// An extension without a duration, in hours.
pub const DEFAULT_EXTEND_HOURS: i64 = (DEFAULT_TTL.as_secs() / 3600) as i64;
/// The longest single extension, in hours (720).
pub const MAX_EXTEND_HOURS: i64 = (MAX_TTL.as_secs() / 3600) as i64;

/// Why `ttl` is not allowed, for a field error; `None` when it is.
pub fn check(ttl: Duration) -> Option<&'static str> {
    (!(MIN_TTL..=MAX_TTL).contains(&ttl)).then_some("must be from 1m to 30d")
}

/// `ttl` as a date offset; a TTL too large for a date is the default.
pub fn offset(ttl: Duration) -> chrono::Duration {
    chrono::Duration::from_std(ttl)
        .or_else(|_| chrono::Duration::from_std(DEFAULT_TTL))
        .unwrap_or(chrono::Duration::zero())
}

/// When a Playground created at `created_at` with `ttl` expires.
pub fn expires_at(created_at: Timestamp, ttl: chrono::Duration) -> Timestamp {
    created_at.checked_add_signed(ttl).unwrap_or(created_at)
}

/// `expires_at` after an extension by `by` at `now`: from the current
/// expiry, or from now when that has passed (or there is none).
pub fn extended(current: Option<Timestamp>, now: Timestamp, by: chrono::Duration) -> Timestamp {
    let base = current.filter(|at| *at > now).unwrap_or(now);
    expires_at(base, by)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_and_defaults_agree() {
        assert_eq!((DEFAULT_EXTEND_HOURS, MAX_EXTEND_HOURS), (8, 720));
        assert_eq!(check(MIN_TTL), None);
        assert_eq!(check(MAX_TTL), None);
        assert!(check(Duration::from_secs(59)).is_some());
        assert!(check(MAX_TTL + Duration::from_secs(1)).is_some());
        assert_eq!(offset(Duration::MAX), chrono::Duration::hours(8), "a TTL too large for a date");
    }

    #[test]
    fn an_extension_starts_from_the_later_of_expiry_and_now() {
        let now = crate::time::now();
        let hour = chrono::Duration::hours(1);
        assert_eq!(extended(Some(now + hour), now, hour), now + hour + hour);
        assert_eq!(extended(Some(now - hour), now, hour), now + hour, "an expired one extends from now");
        assert_eq!(extended(None, now, hour), now + hour);
    }
}
