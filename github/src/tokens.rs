//! Installation access tokens: GitHub issues one per installation for an
//! hour ("Authenticating as a GitHub App installation"). play keeps each
//! in memory only, until [`REFRESH_MARGIN_SECS`] before it expires, so a
//! call never starts with a token about to lapse; concurrent callers for
//! one installation wait for a single fetch rather than each asking
//! GitHub.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};

use crate::Result;

/// A token is fetched anew when it has less than this left, in seconds.
pub const REFRESH_MARGIN_SECS: i64 = 5 * 60;

/// An installation access token and when it expires. Its `Debug` hides
/// the token; [`InstallationToken::secret`] is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct InstallationToken {
    secret: String,
    pub expires_at: DateTime<Utc>,
}

impl fmt::Debug for InstallationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstallationToken")
            .field("secret", &"[redacted]")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl InstallationToken {
    pub fn new(secret: String, expires_at: DateTime<Utc>) -> Self {
        InstallationToken { secret, expires_at }
    }

    /// The token, for an `Authorization` header or git's basic password.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Whether the token is still good for a call that starts at `now`.
    pub fn fresh_at(&self, now: DateTime<Utc>) -> bool {
        self.expires_at - now > Duration::seconds(REFRESH_MARGIN_SECS)
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<InstallationToken>>>;

/// The cache: one slot per installation; a slot's lock is held while its
/// token is fetched, so a second caller waits and then reuses it.
#[derive(Debug, Default)]
pub struct TokenCache {
    slots: Mutex<HashMap<u64, Slot>>,
}

impl TokenCache {
    fn slot(&self, installation: u64) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        slots.entry(installation).or_default().clone()
    }

    /// The cached token of `installation` when it is fresh at `now`, else
    /// the one `fetch` returns (kept for the next caller). A failed fetch
    /// keeps nothing.
    pub async fn get(
        &self,
        installation: u64,
        now: impl Fn() -> DateTime<Utc>,
        fetch: impl AsyncFnOnce() -> Result<InstallationToken>,
    ) -> Result<InstallationToken> {
        let slot = self.slot(installation);
        let mut held = slot.lock().await;
        if let Some(token) = held.as_ref().filter(|t| t.fresh_at(now())) {
            return Ok(token.clone());
        }
        *held = None;
        let token = fetch().await?;
        *held = Some(token.clone());
        Ok(token)
    }

    /// Drops the token of `installation` (GitHub refused it, or the
    /// installation went away): the next call fetches a new one.
    pub fn forget(&self, installation: u64) {
        let mut slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        slots.remove(&installation);
    }
}
