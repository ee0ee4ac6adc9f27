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

/// An installation a person connected, as the provider confirmed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfirmedInstallation {
    /// The provider's installation id.
    pub external_id: String,
    /// The user or organisation it is installed on.
    pub account_login: String,
    pub suspended: bool,
}

/// A source-hosting app that accounts install on the provider's side (a
/// GitHub App): where to send a person to install it, and the check, when
/// the provider sends them back, that they may use the installation they
/// came back with.
#[async_trait]
pub trait InstallableApp: Send + Sync + fmt::Debug {
    fn provider(&self) -> Provider;

    /// The provider's install page, carrying play's `state` back.
    fn install_url(&self, state: &str) -> String;

    /// With the person's authorization `code` (the provider's OAuth code
    /// of the setup redirect), whether installation `external_id` is one
    /// they can see; `ScmError::NotFound` when it is not (the id in a setup
    /// URL is not proof: anyone can type another installation's id).
    async fn confirm(&self, code: &str, external_id: &str) -> Result<ConfirmedInstallation, ScmError>;
}
