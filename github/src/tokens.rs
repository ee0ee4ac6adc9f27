//! Installation access tokens: GitHub issues them for an hour
//! ("Authenticating as a GitHub App installation"), each limited to the
//! repositories and permissions asked for ("Create an installation access
//! token for an app": `repositories`, `permissions`). play asks for the
//! least each call needs ([`TokenScope`]): one repository and, say,
//! `contents: read` for a fetch, so a token that leaks (to a host a
//! tenant named, issue #49 item 1) can neither write nor reach the
//! installation's other repositories. play keeps each in memory only,
//! until [`REFRESH_MARGIN_SECS`] before it expires, so a call never starts
//! with a token about to lapse; concurrent callers for one installation
//! and scope wait for a single fetch rather than each asking GitHub.

use std::collections::{BTreeMap, HashMap};
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

/// A permission of a GitHub App and the level asked for, as GitHub names
/// them (`"contents"`, `"read"`).
pub type Permission = (&'static str, &'static str);

/// Fetches: `git fetch`, reading references and commits.
pub const CONTENTS_READ: Permission = ("contents", "read");
/// Pushes: blobs, trees, commits, references.
pub const CONTENTS_WRITE: Permission = ("contents", "write");
/// Creating, changing and deleting repositories.
pub const ADMINISTRATION_WRITE: Permission = ("administration", "write");
/// Reading a repository's description (every token has it).
pub const METADATA_READ: Permission = ("metadata", "read");
/// Listing and reading pull requests.
pub const PULL_REQUESTS_READ: Permission = ("pull_requests", "read");
/// Commenting on pull requests.
pub const PULL_REQUESTS_WRITE: Permission = ("pull_requests", "write");
/// Deployments and their statuses.
pub const DEPLOYMENTS_WRITE: Permission = ("deployments", "write");

/// What one token may do: the repositories it is limited to (their names
/// under the installation's account; none means every repository the
/// installation was given, only for calls on no repository yet, such as
/// creating one) and its permissions. The body of the access token
/// request, and the key of the cache.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct TokenScope {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    repositories: Vec<String>,
    permissions: BTreeMap<&'static str, &'static str>,
}

impl TokenScope {
    /// Limited to repository `name` (without its owner) and `permissions`.
    pub fn on(name: &str, permissions: &[Permission]) -> TokenScope {
        TokenScope { repositories: vec![name.to_ascii_lowercase()], permissions: permissions.iter().copied().collect() }
    }

    /// `permissions` on the installation's repositories: for a call on a
    /// repository that does not exist yet.
    pub fn installation_wide(permissions: &[Permission]) -> TokenScope {
        TokenScope { repositories: Vec::new(), permissions: permissions.iter().copied().collect() }
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<InstallationToken>>>;

/// The cache: one slot per installation and scope; a slot's lock is held
/// while its token is fetched, so a second caller waits and then reuses
/// it.
#[derive(Debug, Default)]
pub struct TokenCache {
    slots: Mutex<HashMap<(u64, TokenScope), Slot>>,
}

impl TokenCache {
    fn slot(&self, installation: u64, scope: &TokenScope) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        slots.entry((installation, scope.clone())).or_default().clone()
    }

    /// The cached token of `installation` and `scope` when it is fresh at
    /// `now`, else the one `fetch` returns (kept for the next caller). A
    /// failed fetch keeps nothing.
    pub async fn get(
        &self,
        installation: u64,
        scope: &TokenScope,
        now: impl Fn() -> DateTime<Utc>,
        fetch: impl AsyncFnOnce() -> Result<InstallationToken>,
    ) -> Result<InstallationToken> {
        let slot = self.slot(installation, scope);
        let mut held = slot.lock().await;
        if let Some(token) = held.as_ref().filter(|t| t.fresh_at(now())) {
            return Ok(token.clone());
        }
        *held = None;
        let token = fetch().await?;
        *held = Some(token.clone());
        Ok(token)
    }

    /// Drops every token of `installation` (GitHub refused one, or the
    /// installation went away): the next call fetches a new one.
    pub fn forget(&self, installation: u64) {
        let mut slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        slots.retain(|(id, _), _| *id != installation);
    }
}
