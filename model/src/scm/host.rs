//! The seam to a source host: what play asks of one, whichever provider
//! it is. play's own Git host implements it in `play_git::builtin`; a
//! GitHub App installation in `play_github::host`, over GitHub's REST API.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use super::http::GitHttp;
use super::model::{Installation, Provider};
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
    /// there), private to its account when `private`; with `auto_init`, a
    /// first commit with a README.
    async fn create(
        &self,
        full: &FullName,
        description: &str,
        private: bool,
        auto_init: bool,
        by: &Author,
    ) -> Result<Created, ScmError>;

    /// Removes repository `full` from the host, or not, as `why` asks (see
    /// [`Removal`]). Nothing there is not an error.
    async fn remove(&self, full: &FullName, why: Removal) -> Result<(), ScmError>;

    /// Writes `files` as one commit on `branch` (default: the repository's
    /// default branch), never overwriting a concurrent push.
    async fn push(
        &self,
        full: &FullName,
        branch: Option<&str>,
        files: &PushFiles,
        by: &Author,
    ) -> Result<PushOutcome, ScmError>;

    /// The commit `branch` of `full` is at; `None` when there is no such
    /// branch (or no commit at all). Apply reads it to see whether a
    /// repository's files may have been changed since it last pushed them.
    async fn head(&self, full: &FullName, branch: &str) -> Result<Option<String>, ScmError>;

    /// Sets `full`'s description and visibility on the host (apply changes
    /// them; play's own host keeps only the description, visibility being
    /// play's record).
    async fn update(&self, full: &FullName, description: &str, private: bool) -> Result<(), ScmError>;

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

    /// Pull requests and previews' reports; `None`: the host has no pull
    /// requests (play's own Git host).
    fn reviews(&self) -> Option<&dyn super::pulls::ReviewHost> {
        None
    }
}

/// What a create made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    /// The branch pushes go to by default (play's own host: `main`; on
    /// GitHub, the owner's setting for new repositories).
    pub default_branch: String,
    /// The README commit of `auto_init`.
    pub initial: Option<PushOutcome>,
}

/// Why a flow removes a repository from its host; a host that keeps
/// repositories play does not own (GitHub) removes only what it just made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// Before a create: whatever an earlier create of the name left when
    /// its record was never committed (a crash between the two). Only a
    /// host whose repositories exist nowhere but in play clears it; on
    /// GitHub such a repository may be someone's, and the create answers
    /// that the name is taken.
    Leftover,
    /// A create that failed after the host made the repository: it is
    /// removed at once.
    Undo,
    /// `DELETE /api/repos/{owner}/{name}`: play's record is gone. play's
    /// own host deletes the repository; GitHub keeps it (play never
    /// deletes a repository on GitHub: people do that there).
    Deleted,
}

/// A repository a source-hosting app installation reaches, as the
/// provider describes it (attach records it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppRepository {
    /// As play names it: lowercase (GitHub's names are case-insensitive).
    pub full_name: FullName,
    pub description: String,
    pub private: bool,
    pub default_branch: String,
}

/// An installation a person connected, as the provider confirmed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfirmedInstallation {
    /// The provider's installation id.
    pub external_id: String,
    /// The user or organisation it is installed on.
    pub account_login: String,
    /// On an organisation, not a user.
    pub organisation: bool,
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

    /// The source host of `installation`: repositories under the account
    /// it is installed on, every call with its token.
    fn host(self: Arc<Self>, installation: &Installation) -> Result<Arc<dyn SourceHost>, ScmError>;

    /// Repository `full` as `installation` reaches it; `None` when it
    /// does not (no such repository, or one the installation was not
    /// given).
    async fn repository(&self, installation: &Installation, full: &FullName)
    -> Result<Option<AppRepository>, ScmError>;

    /// Where the provider serves `full`.
    fn urls(&self, full: &FullName) -> RepoUrls;
}
