//! The crate's one error type and how it maps onto
//! [`RepositoryError`], the seam's safe-to-show error.
//!
//! # Invariant
//!
//! No message built here contains the access token: the token lives only
//! in the transport's [`Authorization`](crate::transport) header, and
//! libgit2 never sees it (it never sees the header, and the URL carries no
//! userinfo: such a URL is refused before any call).

use play_model::repository::RepositoryError;

/// Why a gateway call failed; each variant is a [`RepositoryError`] kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Error {
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Unreachable(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Timeout(String),
    #[error("{0}")]
    Failed(String),
}

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for RepositoryError {
    fn from(error: Error) -> Self {
        match error {
            Error::Refused(m) => RepositoryError::Refused(m),
            Error::Unreachable(m) => RepositoryError::Unreachable(m),
            Error::Unauthorized(m) => RepositoryError::Unauthorized(m),
            Error::NotFound(m) => RepositoryError::NotFound(m),
            Error::TooLarge(m) => RepositoryError::TooLarge(m),
            Error::Timeout(m) => RepositoryError::Timeout(m),
            Error::Busy(m) => RepositoryError::Busy(m),
            Error::Failed(m) => RepositoryError::Failed(m),
        }
    }
}

impl Error {
    /// A [`RepositoryError`] of a seam the gateway calls (the host-key
    /// pins), kind for kind.
    pub(crate) fn from_repository(error: RepositoryError) -> Error {
        match error {
            RepositoryError::Refused(m) => Error::Refused(m),
            RepositoryError::Unreachable(m) => Error::Unreachable(m),
            RepositoryError::Unauthorized(m) => Error::Unauthorized(m),
            RepositoryError::NotFound(m) => Error::NotFound(m),
            RepositoryError::TooLarge(m) => Error::TooLarge(m),
            RepositoryError::Timeout(m) => Error::Timeout(m),
            RepositoryError::Busy(m) => Error::Busy(m),
            RepositoryError::Failed(m) => Error::Failed(m),
        }
    }

    /// A libgit2 error that the transport did not already explain (see
    /// [`crate::call::Call::explain`]): what it says, with
    /// "not found" kinds kept apart. `what` names the operation.
    pub(crate) fn from_git(what: &str, error: &git2::Error) -> Error {
        let message = format!("{what}: {}", error.message());
        let text = error.message().to_ascii_lowercase();
        // upload-pack's answer to a `want` of an object it lacks (or will
        // not serve): "not our ref", or libgit2's own wording.
        let missing_remote_object = text.contains("not our ref")
            || text.contains("not valid")
            || text.contains("cannot fetch a specific object");
        if error.code() == git2::ErrorCode::NotFound || missing_remote_object {
            Error::NotFound(message)
        } else {
            Error::Failed(message)
        }
    }
}
