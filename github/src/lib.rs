//! play's GitHub App provider (issue #29): how play authenticates to
//! GitHub and the REST calls it makes there.
//!
//! - [`app`]: the operator's app settings and the RS256 JSON Web Token
//!   play signs to act as the app (`Authorization: Bearer <jwt>`).
//! - [`tokens`]: installation access tokens, fetched with the app JWT and
//!   kept until shortly before they expire; one fetch at a time per
//!   installation; the token itself never in a `Debug`, a log or an error.
//! - [`install`]: the end of the install flow, which checks that the
//!   person who comes back may see the installation they name.
//! - [`api`]: the REST client, over `play-outbound` (every resolved
//!   address checked against the operator's policy, no redirects).
//!
//! GitHub's documentation is the reference for every shape here:
//! "Generating a JSON Web Token (JWT) for a GitHub App", "Authenticating as
//! a GitHub App installation", and the REST pages of each endpoint.

pub mod api;
pub mod app;
pub mod host;
pub mod install;
pub mod pulls;
pub(crate) mod push;
pub mod repos;
pub mod tokens;

#[cfg(feature = "testing")]
pub mod testing;

pub use api::{GithubApi, InstallationInfo};
pub use app::{AppKey, AppSettings, ClientSecret, GithubAppConfig};
pub use tokens::{InstallationToken, TokenCache, TokenScope};

/// Why a call to GitHub failed. Messages name the endpoint and GitHub's
/// status and message, never a token or the app key.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    /// The app key could not be read or used.
    #[error("GitHub App key: {0}")]
    Key(String),
    /// GitHub answered 404 (or 403 for something the installation may not
    /// see, which GitHub also uses to hide what exists).
    #[error("not found on GitHub: {0}")]
    NotFound(String),
    /// The person may see what they named but may not do this with it
    /// (connect an installation of an account they do not administer).
    #[error("{0}")]
    NotPermitted(String),
    /// GitHub answered 401: the app JWT or the installation token was
    /// refused (a wrong app id or key, a clock far off, a revoked token).
    #[error("GitHub refused the credentials: {0}")]
    Unauthorized(String),
    /// GitHub answered 409: the repository's state refuses the call (an
    /// empty repository's Git database).
    #[error("GitHub refused the change: {0}")]
    Conflict(String),
    /// GitHub answered 422: the request does not fit (a name taken, a
    /// branch update that is not a fast-forward, a reference that exists).
    #[error("GitHub refused the request: {0}")]
    Unprocessable(String),
    /// Anything else: the network, a 5xx, a body that is not what GitHub
    /// documents.
    #[error("GitHub: {0}")]
    Failed(String),
}

pub type Result<T, E = GithubError> = std::result::Result<T, E>;

/// What a GitHub error means to the repositories facility.
pub(crate) fn scm_error(error: GithubError) -> play_model::scm::ScmError {
    match error {
        GithubError::NotFound(_) => play_model::scm::ScmError::NotFound,
        GithubError::Conflict(m) | GithubError::Unprocessable(m) => play_model::scm::ScmError::Conflict(m),
        other => play_model::scm::ScmError::Failed(other.to_string()),
    }
}
