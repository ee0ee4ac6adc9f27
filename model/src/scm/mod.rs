//! Source hosting (SCM, issue #29): the rules of the repositories facility that
//! hold whichever host keeps the repository (play's built-in Git host, or
//! a GitHub App installation: [`hosts`] picks it).
//!
//! - [`names`]: what a repository may be called, and its full name
//!   `owner/name`;
//! - [`files`]: the files of one push, checked whole before any object is
//!   written: each path, every bound on count and size.
//!
//! - [`host`]: the [`SourceHost`](host::SourceHost) seam a provider
//!   implements; [`model`]: installations and repositories as stored.
//!
//! These checks run in the API before anything is written and again in the
//! host that writes the objects, so a caller that skipped the API (apply,
//! the CLI through the API, a future provider) gets the same answers.

pub mod files;
pub mod github_hook;
pub mod host;
pub mod http;
pub mod model;
pub mod names;
pub mod pulls;

#[cfg(test)]
mod tests;

pub use files::{PushFile, PushFiles};
pub use names::{FullName, check_repo_name};

use crate::{Error, FieldErrors};

/// The branch a new repository starts with and pushes go to by default.
pub const DEFAULT_BRANCH: &str = "main";

/// The commit message of `create_and_push` when none is given (contract).
pub const DEFAULT_INITIAL_MESSAGE: &str = "Initial commit";

/// What one push made: the commit at the branch head afterwards, its tree,
/// and how many files the request carried (the contract's response).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushOutcome {
    pub commit_sha: String,
    pub tree_sha: String,
    pub files_pushed: usize,
    /// The branch head before the push (`None`: the branch was created).
    pub previous: Option<String>,
    /// `false` when every file already had this content: no commit was
    /// made and `commit_sha` is the unchanged head (play makes no empty
    /// commits, so applying the same folder twice changes nothing).
    pub changed: bool,
}

/// Who a commit made by play is attributed to (author and committer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Author {
    pub name: String,
    pub email: String,
}

/// Why a source host refused or failed a call. Messages never carry a
/// credential.
#[derive(Debug, thiserror::Error)]
pub enum ScmError {
    /// No such repository (or one of another account: never told apart).
    #[error("repository not found")]
    NotFound,
    /// A repository of that name exists.
    #[error("a repository named {0} exists")]
    Exists(String),
    /// The push lost a race it could not win by retrying (the branch moved
    /// under it each time), or a file of the push collides with the tree.
    #[error("{0}")]
    Conflict(String),
    /// The request does not fit the repository (a push that would make a
    /// file where the branch has a folder), field by field.
    #[error("validation failed")]
    Invalid(FieldErrors),
    /// The account's bound on a resource of the host is reached (play's
    /// own Git host: the bytes its repositories use on disk).
    #[error("quota exceeded: at most {limit} {resource} per account")]
    QuotaExceeded { resource: String, limit: i64 },
    /// The host failed; the message says how.
    #[error("{0}")]
    Failed(String),
}

impl From<ScmError> for Error {
    fn from(error: ScmError) -> Self {
        match error {
            ScmError::NotFound => Error::NotFound("repository"),
            ScmError::Exists(name) => Error::Conflict(format!("a repository named {name} exists")),
            ScmError::Conflict(message) => Error::Conflict(message),
            ScmError::Invalid(errors) => Error::Validation(errors),
            ScmError::QuotaExceeded { resource, limit } => Error::QuotaExceeded { resource, limit },
            ScmError::Failed(message) => Error::Internal(message),
        }
    }
}
