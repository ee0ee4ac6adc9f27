//! What `/api/repos` and `/api/scm_installations` answer: the contract's
//! `{repo: {...}}` and `{commit_sha, tree_sha, files_pushed}`, built from
//! core's records and the host's URLs.

use chrono::{DateTime, Utc};
use play_core::scm::hosts::SourceHosts;
use play_model::scm::PushOutcome;
use play_model::scm::host::RepoUrls;
use play_model::scm::model::{Installation, Repository};
use serde::Serialize;
use utoipa::ToSchema;

/// A repository as the contract shows it, with play's id and provider.
#[derive(Debug, Serialize, ToSchema)]
pub struct RepoView {
    pub id: i64,
    /// `owner/name`; the owner is the account's name on play's own Git
    /// host, the user or organisation on GitHub.
    pub full_name: String,
    pub html_url: String,
    /// Clone with an API key as the HTTP password.
    pub clone_url: String,
    /// `null`: play's own Git host serves no SSH.
    pub ssh_url: Option<String>,
    pub private: bool,
    pub default_branch: String,
    pub description: String,
    /// `builtin`: play's own Git host; `github`: through the account's
    /// GitHub App installation.
    pub provider: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl RepoView {
    /// `hosts` gives the URLs; a repository of a provider this play no
    /// longer serves shows none (empty strings).
    pub fn new(repository: Repository, hosts: &SourceHosts) -> Self {
        let urls = hosts.urls(repository.provider, &repository.full_name).unwrap_or(RepoUrls {
            html_url: String::new(),
            clone_url: String::new(),
            ssh_url: None,
        });
        RepoView {
            id: repository.id,
            full_name: repository.full_name.to_string(),
            html_url: urls.html_url,
            clone_url: urls.clone_url,
            ssh_url: urls.ssh_url,
            private: repository.private,
            default_branch: repository.default_branch,
            description: repository.description,
            provider: repository.provider.as_str().to_owned(),
            created_at: repository.created_at,
            updated_at: repository.updated_at,
        }
    }
}

/// `{repo: {...}}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct RepoEnvelope {
    pub repo: RepoView,
}

/// One push's commit.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommitView {
    pub commit_sha: String,
    pub tree_sha: String,
    pub files_pushed: usize,
    /// `false` when every file already had this content: no commit was
    /// made and `commit_sha` is the branch head (play makes no empty
    /// commits).
    pub changed: bool,
}

impl From<PushOutcome> for CommitView {
    fn from(outcome: PushOutcome) -> Self {
        CommitView {
            commit_sha: outcome.commit_sha,
            tree_sha: outcome.tree_sha,
            files_pushed: outcome.files_pushed,
            changed: outcome.changed,
        }
    }
}

/// `create_and_push`'s answer: `{repo, commit}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedAndPushed {
    pub repo: RepoView,
    pub commit: CommitView,
}

/// A source-hosting app installed on the account.
#[derive(Debug, Serialize, ToSchema)]
pub struct InstallationView {
    pub id: i64,
    /// `builtin`: play's own Git host; `github`: a GitHub App installation.
    #[schema(example = "github")]
    pub provider: String,
    /// The provider's id of the installation (GitHub's installation id);
    /// empty for `builtin`.
    pub external_id: String,
    /// `active`, `suspended` or `removed`: what the provider last said of
    /// it. Only an active installation is used.
    #[schema(example = "active")]
    pub status: String,
    /// The user or organisation it is installed on (GitHub's login); for
    /// `builtin`, the account's name is the owner instead and this is
    /// empty.
    #[schema(example = "acme")]
    pub account_login: String,
    pub created_at: DateTime<Utc>,
}

impl From<Installation> for InstallationView {
    fn from(installation: Installation) -> Self {
        InstallationView {
            id: installation.id,
            provider: installation.provider.as_str().to_owned(),
            external_id: installation.external_id,
            status: installation.status.as_str().to_owned(),
            account_login: installation.account_login,
            created_at: installation.created_at,
        }
    }
}
