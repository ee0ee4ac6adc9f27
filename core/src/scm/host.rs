//! The seam to a source host: what play asks of one, whichever provider
//! it is. play's own Git host implements it in `play_git::hosted`; a
//! GitHub App will implement it over GitHub's REST API.

use std::fmt;

use async_trait::async_trait;

use super::http::GitHttp;
use super::model::Provider;
use super::{Author, FullName, PushFiles, PushOutcome, ScmError};

/// Where a repository is reached (the contract's `html_url`, `clone_url`,
/// `ssh_url`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoUrls {
    pub html_url: String,
    pub clone_url: String,
    /// `None` where the host serves no SSH (play's own Git host).
    pub ssh_url: Option<String>,
}

/// A source host play can create repositories on and push to.
#[async_trait]
pub trait SourceHost: Send + Sync + fmt::Debug {
    fn provider(&self) -> Provider;

    /// Creates `full` (refused with [`ScmError::Exists`] when it is
    /// there); with `auto_init`, a first commit with a README.
    async fn create(
        &self,
        full: &FullName,
        description: &str,
        auto_init: bool,
        by: &Author,
    ) -> Result<Option<PushOutcome>, ScmError>;

    /// Removes what a create left when the record of it was never
    /// committed (a crash between the two). Nothing there is not an error.
    async fn forget(&self, full: &FullName) -> Result<(), ScmError>;

    /// Writes `files` as one commit on `branch` (default: the repository's
    /// default branch), never overwriting a concurrent push.
    async fn push(
        &self,
        full: &FullName,
        branch: Option<&str>,
        files: &PushFiles,
        by: &Author,
    ) -> Result<PushOutcome, ScmError>;

    fn urls(&self, full: &FullName) -> RepoUrls;

    /// The repository of this host that `url` names (its clone URL or its
    /// web address), if it names one: Launch and templates may name a
    /// repository by URL. `None` for a URL of anywhere else.
    fn repository_at(&self, _url: &str) -> Option<FullName> {
        None
    }

    /// Git's smart HTTP for this host's repositories; `None`: the host
    /// serves none (people clone from the provider).
    fn git_http(&self) -> Option<&dyn GitHttp> {
        None
    }
}
