//! A browser session as the store gives it (`store::sessions`, issue #31).

use crate::scopes::ScopeSet;
use crate::time::Timestamp;

/// A session unused this long ends.
pub const IDLE: chrono::Duration = chrono::Duration::hours(12);
/// A session ends this long after it began, used or not.
pub const ABSOLUTE: chrono::Duration = chrono::Duration::days(7);

/// A live session, with what its key grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub id: i64,
    pub key_id: i64,
    pub account_id: i64,
    pub user_id: i64,
    pub scopes: ScopeSet,
    /// The key's own expiry (a session never outlives its key).
    pub key_expires_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub last_seen_at: Timestamp,
    /// The absolute end; the idle end is `last_seen_at + IDLE`.
    pub expires_at: Timestamp,
}

impl Session {
    /// When the session ends if unused from now on.
    pub fn ends_at(&self) -> Timestamp {
        (self.last_seen_at + IDLE).min(self.expires_at)
    }
}
