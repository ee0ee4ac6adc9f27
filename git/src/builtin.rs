//! play's own Git host as a [`SourceHost`]: [`HostedRepositories`] behind
//! the seam, each call on a blocking thread (libgit2 blocks), and the URLs
//! a repository is reached at under play's public address. Its bounds
//! ([`GitHostLimits`]) hold for Git's protocol and for the API's pushes
//! alike.

use std::sync::Arc;

use async_trait::async_trait;
use play_model::scm::host::{Created, Removal, RepoUrls, SourceHost};
use play_model::scm::http::{GitHttp, GitHttpRequest, GitHttpResponse};
use play_model::scm::model::Provider;
use play_model::scm::{Author, FullName, PushFiles, PushOutcome, ScmError};

use crate::hosted::HostedRepositories;
use crate::limits::{GitHostLimits, Processes, usage};

/// The path under play's public address where its repositories are served
/// (`<base>/git/<owner>/<name>.git`).
pub const GIT_PATH: &str = "/git";

/// play's own Git host.
#[derive(Clone, Debug)]
pub struct BuiltinHost {
    repositories: Arc<HostedRepositories>,
    /// play's public address, without a trailing `/`.
    base_url: String,
    limits: GitHostLimits,
    /// This replica's Git processes (one host per `play serve`).
    processes: Processes,
}

impl BuiltinHost {
    /// The host with the default bounds ([`GitHostLimits::default`]).
    pub fn new(repositories: HostedRepositories, base_url: &str) -> Self {
        let limits = GitHostLimits::default();
        BuiltinHost {
            repositories: Arc::new(repositories),
            base_url: base_url.trim_end_matches('/').to_owned(),
            processes: Processes::new(&limits),
            limits,
        }
    }

    /// The host held to `limits` (the operator's `PLAY_GIT_*`).
    pub fn with_limits(mut self, limits: GitHostLimits) -> Self {
        self.processes = Processes::new(&limits);
        self.limits = limits;
        self
    }

    pub fn limits(&self) -> &GitHostLimits {
        &self.limits
    }

    pub fn repositories(&self) -> &HostedRepositories {
        &self.repositories
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&HostedRepositories) -> Result<T, ScmError> + Send + 'static,
    ) -> Result<T, ScmError> {
        let repositories = self.repositories.clone();
        tokio::task::spawn_blocking(move || work(&repositories))
            .await
            .map_err(|e| ScmError::Failed(format!("the Git host's worker stopped: {e}")))?
    }
}

#[async_trait]
impl SourceHost for BuiltinHost {
    fn provider(&self) -> Provider {
        Provider::Builtin
    }

    async fn create(
        &self,
        full: &FullName,
        description: &str,
        _private: bool,
        auto_init: bool,
        by: &Author,
    ) -> Result<Created, ScmError> {
        let (full, description, by) = (full.clone(), description.to_owned(), by.clone());
        let made = self.blocking(move |r| r.create(&full, &description, auto_init, &by)).await?;
        Ok(Created { default_branch: made.default_branch, initial: made.initial })
    }

    /// Every removal deletes: the repository exists only here.
    async fn remove(&self, full: &FullName, _why: Removal) -> Result<(), ScmError> {
        let full = full.clone();
        self.blocking(move |r| r.forget(&full)).await
    }

    async fn push(
        &self,
        full: &FullName,
        branch: Option<&str>,
        files: &PushFiles,
        by: &Author,
    ) -> Result<PushOutcome, ScmError> {
        let (full, branch, files, by) = (full.clone(), branch.map(str::to_owned), files.clone(), by.clone());
        let limit = self.limits.max_account_bytes;
        self.blocking(move |r| {
            // The account's folder holds all its repositories.
            let folder = r.root().join(&full.owner);
            let used =
                usage(&folder).map_err(|e| ScmError::Failed(format!("measuring the account's repositories: {e}")))?;
            if used >= limit {
                let limit = i64::try_from(limit).unwrap_or(i64::MAX);
                return Err(ScmError::QuotaExceeded { resource: "bytes of repositories".into(), limit });
            }
            r.push(&full, branch.as_deref(), &files, &by)
        })
        .await
    }

    async fn head(&self, full: &FullName, branch: &str) -> Result<Option<String>, ScmError> {
        let (full, branch) = (full.clone(), branch.to_owned());
        self.blocking(move |r| r.head(&full, &branch)).await
    }

    /// The description only: who may read a repository of play's own host
    /// is play's record (`private`), not the repository's.
    async fn update(&self, full: &FullName, description: &str, _private: bool) -> Result<(), ScmError> {
        let (full, description) = (full.clone(), description.to_owned());
        self.blocking(move |r| r.set_description(&full, &description)).await
    }

    fn urls(&self, full: &FullName) -> RepoUrls {
        let html_url = format!("{}{GIT_PATH}/{}/{}", self.base_url, full.owner, full.name);
        RepoUrls { clone_url: format!("{html_url}.git"), html_url, ssh_url: None }
    }

    fn repository_at(&self, url: &str) -> Option<FullName> {
        let rest = url.strip_prefix(&self.base_url)?.strip_prefix(GIT_PATH)?.strip_prefix('/')?;
        let rest = rest.trim_end_matches('/');
        let rest = rest.strip_suffix(".git").unwrap_or(rest);
        FullName::parse("url", rest).ok()
    }

    fn git_http(&self) -> Option<&dyn GitHttp> {
        Some(self)
    }
}

#[async_trait]
impl GitHttp for BuiltinHost {
    /// Waits at most the queue wait for one of this replica's Git
    /// processes, else answers `503` with `Retry-After`, whoever asks (an
    /// anonymous clone of a public repository included).
    async fn serve(&self, full: &FullName, request: GitHttpRequest) -> Result<GitHttpResponse, ScmError> {
        let Some(permit) = self.processes.admit().await else {
            let retry = self.processes.retry_after();
            let mut busy = crate::smart_http::plain(503, &format!("play's Git host is busy: try again in {retry} s"));
            busy.headers.push(("Retry-After".into(), retry.to_string()));
            return Ok(busy);
        };
        crate::smart_http::serve(self.repositories.root(), &self.limits, permit, full, request).await
    }
}
