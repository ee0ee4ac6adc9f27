//! [`GitGateway`]: the [`RepositoryGateway`] over libgit2 and play's
//! transport.
//!
//! Every method checks its arguments (URL and policy, commit id, branch
//! name, subdirectory) before any network call, then runs its libgit2
//! work in `spawn_blocking` under a call guard that gives the
//! transport this call's token, policy, deadline and byte bound (see
//! the `transport` and `call` modules). The whole call is bounded by
//! [`GitConfig::timeout`]: the transport and the tree walk stop at the
//! deadline; past it (and a grace period) the call answers a timeout once
//! its blocking work has really stopped, so nothing the caller holds for
//! it (a build slot) is given back while a thread still works for it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use git2::{Direction, Oid, PushOptions, RemoteCallbacks, RemoteRedirect, Repository};
use play_model::repository::ssh::SshHostKeys;
use play_model::repository::{
    ArchiveOptions, GitAccess, InstallationTokens, Reach, RemoteBranch, RemoteRefs, RepositoryAccess, RepositoryError,
    RepositoryGateway, TreeEntry,
};
use play_model::webhook::UrlPolicy;
use tokio::runtime::Handle;

use crate::cache::{Cache, ensure_commit};
use crate::call::SshCall;
use crate::call::{Call, CallGuard, Token};
use crate::error::{Error, Result};
use crate::names::{check_branch, check_url, commit_id, subdir_parts};
use crate::transport::ensure_registered;

/// Default of [`GitConfig::timeout`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default of [`GitConfig::max_fetch_bytes`]: 512 MiB.
pub const DEFAULT_MAX_FETCH_BYTES: u64 = 512 * 1024 * 1024;
/// Default of [`GitConfig::max_branches`].
pub const DEFAULT_MAX_BRANCHES: usize = 10_000;

/// How long past the deadline the caller waits before it logs that the
/// work has not stopped yet (it then waits on until it has).
const GRACE: Duration = Duration::from_secs(2);

/// The operator's settings of a [`GitGateway`].
#[derive(Clone, Debug)]
pub struct GitConfig {
    /// Where the commit cache lives (one bare repository per URL).
    pub cache_dir: PathBuf,
    /// Which repository hosts may be reached (scheme, addresses): the
    /// same policy type as webhooks, usually its own settings.
    pub policy: UrlPolicy,
    /// Bound of one whole gateway call.
    pub timeout: Duration,
    /// Bound of the bytes received in one call (advertisement and pack).
    pub max_fetch_bytes: u64,
    /// Bound of the branches a remote may list.
    pub max_branches: usize,
    /// Bound of the tree entries one archive or folder read may visit,
    /// ignored ones included (a tree bomb: issue #49, item 2).
    pub max_tree_entries: u64,
    /// Where play's own Git host keeps its repositories
    /// (`PLAY_GIT_HOST_ROOT`); `None` when that host is off. A
    /// [`Reach::Builtin`] repository is opened there, without the network.
    pub hosted_root: Option<PathBuf>,
    /// Where a [`Reach::App`] repository's token comes from (the GitHub
    /// App); `None` when no app is configured, and such a call fails
    /// saying so.
    pub installation_tokens: Option<Arc<dyn InstallationTokens>>,
    /// Where a [`Reach::Ssh`] repository's host key is pinned on first
    /// contact (the store); `None`: an unpinned ssh host is refused.
    pub ssh_host_keys: Option<Arc<dyn SshHostKeys>>,
}

impl GitConfig {
    /// The defaults with `cache_dir` and `policy`.
    pub fn new(cache_dir: impl Into<PathBuf>, policy: UrlPolicy) -> GitConfig {
        GitConfig {
            cache_dir: cache_dir.into(),
            policy,
            timeout: DEFAULT_TIMEOUT,
            max_fetch_bytes: DEFAULT_MAX_FETCH_BYTES,
            max_branches: DEFAULT_MAX_BRANCHES,
            max_tree_entries: crate::tree_walk::DEFAULT_MAX_TREE_ENTRIES,
            hosted_root: None,
            installation_tokens: None,
            ssh_host_keys: None,
        }
    }
}

/// See the [module documentation](self). Cheap to clone; `Debug` shows
/// the settings (there are no secrets in them: tokens come per call).
#[derive(Clone, Debug)]
pub struct GitGateway {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: GitConfig,
    policy: Arc<UrlPolicy>,
    client: reqwest::Client,
    cache: Cache,
}

impl GitGateway {
    /// Builds the gateway (its HTTP client) and registers play's transport
    /// with libgit2. Creates nothing on disk until a call needs the cache.
    pub fn new(config: GitConfig) -> Result<GitGateway, RepositoryError> {
        ensure_registered()?;
        let policy = Arc::new(config.policy.clone());
        let client = crate::client::build(policy.clone(), config.timeout).map_err(RepositoryError::Failed)?;
        let cache = Cache::new(config.cache_dir.clone());
        Ok(GitGateway { inner: Arc::new(Inner { config, policy, client, cache }) })
    }

    /// Runs `work` for `repo` in the blocking pool under a call guard;
    /// `work` gets the gateway, the call and the checked URL. `access` is
    /// what the call does with the repository: an installation's token is
    /// asked for that and no more.
    /// Logs each call's operation, URL, duration and outcome kind (never
    /// the token: it is only in the call's header).
    async fn run<T, F>(
        &self,
        what: &'static str,
        access: GitAccess,
        repo: &RepositoryAccess,
        work: F,
    ) -> Result<T, RepositoryError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner, &Call, &Target) -> Result<T> + Send + 'static,
    {
        let started = std::time::Instant::now();
        let url = crate::names::shown_url(&repo.url);
        let result = self.run_inner(access, repo, work).await;
        let outcome = match &result {
            Ok(_) => "ok",
            Err(RepositoryError::Timeout(_)) => "timeout",
            Err(_) => "error",
        };
        match &result {
            Err(error) => {
                tracing::info!(operation = what, url, outcome, elapsed = ?started.elapsed(), %error, "git call")
            }
            Ok(_) => tracing::debug!(operation = what, url, outcome, elapsed = ?started.elapsed(), "git call"),
        }
        result
    }

    async fn run_inner<T, F>(&self, access: GitAccess, repo: &RepositoryAccess, work: F) -> Result<T, RepositoryError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner, &Call, &Target) -> Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        let (target, token) = match &repo.reach {
            Reach::Remote => (Target::Remote(check_url(&inner.policy, &repo.url)?), repo.token.clone()),
            Reach::Builtin(full) => (Target::Hosted(hosted_path(&inner.config, full)?), None),
            Reach::App { provider, installation, repository } => {
                let Some(tokens) = &inner.config.installation_tokens else {
                    return Err(RepositoryError::Failed(format!(
                        "the repository is reached through the {provider} app, which this play is not configured \
                         for (ask the operator)"
                    )));
                };
                // The provider's own URL for the repository record, never
                // the stored text (issue #49, item 1).
                let url = check_url(&inner.policy, &tokens.clone_url(*provider, repository)?)?;
                let token = tokens.token(*provider, installation, repository, access).await?;
                let result = self.call_with(inner.clone(), Target::Remote(url), Some(token), None, work).await;
                if let Err(RepositoryError::Unauthorized(_)) = &result {
                    // A token revoked before its expiry: the next call
                    // asks the app for a new one.
                    tokens.forget(*provider, installation);
                }
                return result;
            }
            Reach::Ssh(access) => {
                let ssh = crate::ssh::call_for(&inner.policy, inner.config.ssh_host_keys.clone(), &repo.url, access)?;
                let target = Target::Remote(crate::ssh::canonical(&ssh.url));
                return self.call_with(inner, target, None, Some(ssh), work).await;
            }
            Reach::Lost(reason) => return Err(RepositoryError::Failed(reason.clone())),
        };
        self.call_with(inner, target, token, None, work).await
    }

    /// Runs `work` on `target` in the blocking pool with `token`, bounded
    /// by the call's deadline.
    async fn call_with<T, F>(
        &self,
        inner: Arc<Inner>,
        target: Target,
        token: Option<String>,
        ssh: Option<SshCall>,
        work: F,
    ) -> Result<T, RepositoryError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner, &Call, &Target) -> Result<T> + Send + 'static,
    {
        let config = &inner.config;
        let mut call = Call::new(
            inner.client.clone(),
            Handle::current(),
            inner.policy.clone(),
            token.map(Token),
            config.timeout,
            config.max_fetch_bytes,
        );
        call.ssh = ssh;
        let call = Arc::new(call);
        let timeout = config.timeout;
        let timed_out = call.timed_out();
        let mut task = tokio::task::spawn_blocking(move || {
            let _current = CallGuard::enter(call.clone());
            work(&inner, &call, &target)
        });
        match tokio::time::timeout(timeout + GRACE, &mut task).await {
            Ok(Ok(result)) => result.map_err(RepositoryError::from),
            Ok(Err(join)) => Err(RepositoryError::Failed(format!("the repository call failed: {join}"))),
            Err(_) => {
                // The work checks the deadline as it goes (the transport,
                // the tree walk): wait until it has stopped, so that what
                // the caller holds for it (a build slot, an account's
                // bytes) is given back only once no thread works for it
                // (issue #49, item 2).
                tracing::warn!(?timeout, "a repository call is past its deadline; waiting for it to stop");
                let _ = task.await;
                Err(timed_out.into())
            }
        }
    }
}

/// The bounded tree walk of one call: the operator's entry bound and the
/// call's deadline.
fn walk(inner: &Inner, call: &Call) -> crate::tree_walk::Walk {
    crate::tree_walk::Walk::new(inner.config.max_tree_entries, call.deadline, call.timeout)
}

/// Where one call's repository is.
enum Target {
    /// A URL the operator's policy allowed.
    Remote(String),
    /// A bare repository of play's own Git host.
    Hosted(PathBuf),
}

/// Where play's own host keeps `full`; an error when the host is off or
/// does not hold it.
fn hosted_path(config: &GitConfig, full: &play_model::scm::names::FullName) -> Result<PathBuf, RepositoryError> {
    let Some(root) = &config.hosted_root else {
        return Err(RepositoryError::Failed(format!(
            "repository {full} is on play's own Git host, which the operator turned off (PLAY_GIT_HOST)"
        )));
    };
    let path = crate::hosted::HostedRepositories::new(root.clone()).path_of(full);
    if !path.is_dir() {
        return Err(RepositoryError::NotFound(format!("repository {full} is not on play's Git host")));
    }
    Ok(path)
}

/// The branches of `target`, sorted, and its default branch.
fn list_refs(call: &Call, target: &Target, max_branches: usize) -> Result<RemoteRefs> {
    match target {
        Target::Remote(url) => list_remote_refs(call, url, max_branches),
        Target::Hosted(path) => crate::hosted::list_refs(&open_hosted(path)?, max_branches),
    }
}

fn open_hosted(path: &std::path::Path) -> Result<Repository> {
    Repository::open_bare(path).map_err(|e| Error::Failed(format!("opening a hosted repository: {}", e.message())))
}

/// The remote's advertisement: branches sorted, default branch from
/// `HEAD`'s symref target.
fn list_remote_refs(call: &Call, url: &str, max_branches: usize) -> Result<RemoteRefs> {
    let what = "listing the branches";
    let mut remote = git2::Remote::create_detached(url).map_err(|e| call.explain(what, &e))?;
    let connection = remote.connect_auth(Direction::Fetch, None, None).map_err(|e| call.explain(what, &e))?;
    let heads = connection.list().map_err(|e| call.explain(what, &e))?;
    let mut refs = RemoteRefs::default();
    for head in heads {
        if head.name() == "HEAD" {
            refs.default_branch = head.symref_target().and_then(|t| t.strip_prefix("refs/heads/")).map(str::to_owned);
        } else if let Some(name) = head.name().strip_prefix("refs/heads/") {
            if refs.branches.len() == max_branches {
                return Err(Error::TooLarge(format!("{url} has more than {max_branches} branches")));
            }
            refs.branches.push(RemoteBranch { name: name.to_owned(), commit: head.oid().to_string() });
        }
    }
    refs.branches.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(refs)
}

/// Opens the cache repository of a remote (locked) and makes sure
/// `commit` is in it, or opens a hosted repository, which must hold it;
/// then runs `then` on it.
fn with_commit<T>(
    inner: &Inner,
    call: &Call,
    target: &Target,
    commit: Oid,
    then: impl FnOnce(&Repository) -> Result<T>,
) -> Result<T> {
    let url = match target {
        Target::Remote(url) => url,
        Target::Hosted(path) => {
            let repo = open_hosted(path)?;
            repo.find_commit(commit)
                .map_err(|_| Error::NotFound(format!("commit {commit} is not in the repository")))?;
            return then(&repo);
        }
    };
    let lock = inner.cache.lock(url);
    let _held = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let repo = inner.cache.open(url)?;
    ensure_commit(&repo, call, url, commit)?;
    then(&repo)
}

/// Pushes `commit` (in `repo`) to `refs/heads/<branch>` of `url`; the
/// remote's reason when it rejects the update.
fn push_branch(repo: &Repository, call: &Call, url: &str, branch: &str, commit: Oid) -> Result<()> {
    let what = "pushing the branch";
    let local = format!("refs/play/push/{branch}");
    repo.reference(&local, commit, true, "play: create a branch")
        .map_err(|e| Error::Failed(format!("creating a local ref: {}", e.message())))?;
    let mut rejected: Option<String> = None;
    let result = (|| {
        let mut remote = repo.remote_anonymous(url).map_err(|e| call.explain(what, &e))?;
        let mut callbacks = RemoteCallbacks::new();
        callbacks.push_update_reference(|_, status| {
            if let Some(reason) = status {
                rejected = Some(reason.to_owned());
            }
            Ok(())
        });
        let mut options = PushOptions::new();
        options.remote_callbacks(callbacks).follow_redirects(RemoteRedirect::None);
        remote.push(&[format!("{local}:refs/heads/{branch}")], Some(&mut options)).map_err(|e| call.explain(what, &e))
    })();
    if let Ok(mut reference) = repo.find_reference(&local) {
        let _ = reference.delete();
    }
    result?;
    match rejected {
        Some(reason) => Err(Error::Failed(format!("the remote rejected branch {branch}: {reason}"))),
        None => Ok(()),
    }
}

#[async_trait]
impl RepositoryGateway for GitGateway {
    async fn list_branches(&self, repo: &RepositoryAccess) -> Result<RemoteRefs, RepositoryError> {
        self.run("list_branches", GitAccess::Read, repo, |inner, call, target| {
            list_refs(call, target, inner.config.max_branches)
        })
        .await
    }

    async fn read_files(
        &self,
        repo: &RepositoryAccess,
        commit: &str,
        paths: &[String],
        max_bytes: usize,
    ) -> Result<Vec<Option<Vec<u8>>>, RepositoryError> {
        let commit = commit_id(commit)?;
        let paths = paths.to_vec();
        self.run("read_files", GitAccess::Read, repo, move |inner, call, target| {
            with_commit(inner, call, target, commit, |repo| crate::archive::read_files(repo, commit, &paths, max_bytes))
        })
        .await
    }

    async fn archive(
        &self,
        repo: &RepositoryAccess,
        commit: &str,
        subdir: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, RepositoryError> {
        let commit = commit_id(commit)?;
        let parts: Vec<String> = subdir_parts(subdir)?.into_iter().map(str::to_owned).collect();
        self.run("archive", GitAccess::Read, repo, move |inner, call, target| {
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            with_commit(inner, call, target, commit, |repo| {
                crate::archive::archive(repo, commit, &parts, max_bytes, &mut walk(inner, call))
            })
        })
        .await
    }

    async fn archive_to_file(
        &self,
        repo: &RepositoryAccess,
        commit: &str,
        subdir: &str,
        max_bytes: u64,
        options: ArchiveOptions,
        to: std::path::PathBuf,
    ) -> Result<u64, RepositoryError> {
        let commit = commit_id(commit)?;
        let parts: Vec<String> = subdir_parts(subdir)?.into_iter().map(str::to_owned).collect();
        self.run("archive", GitAccess::Read, repo, move |inner, call, target| {
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            with_commit(inner, call, target, commit, |repo| {
                // Opened, never created: the caller made it and removes it when it
                // goes away (a late open must not leave a file behind).
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(&to)
                    .map_err(|e| Error::Failed(format!("opening {}: {e}", to.display())))?;
                let out = std::io::BufWriter::with_capacity(256 * 1024, file);
                crate::archive::write_archive(repo, commit, &parts, max_bytes, &options, &mut walk(inner, call), out)
            })
        })
        .await
    }

    async fn entry(
        &self,
        repo: &RepositoryAccess,
        commit: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<TreeEntry, RepositoryError> {
        let commit = commit_id(commit)?;
        let parts: Vec<String> = subdir_parts(path)?.into_iter().map(str::to_owned).collect();
        self.run("entry", GitAccess::Read, repo, move |inner, call, target| {
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            with_commit(inner, call, target, commit, |repo| {
                crate::archive::entry(repo, commit, &parts, max_bytes, &mut walk(inner, call))
            })
        })
        .await
    }

    async fn create_branch(&self, repo: &RepositoryAccess, branch: &str, commit: &str) -> Result<(), RepositoryError> {
        check_branch(branch)?;
        let commit = commit_id(commit)?;
        let branch = branch.to_owned();
        self.run("create_branch", GitAccess::Write, repo, move |inner, call, target| {
            let refs = list_refs(call, target, inner.config.max_branches)?;
            if let Some(existing) = refs.branches.iter().find(|b| b.name == branch) {
                return if existing.commit == commit.to_string() {
                    Ok(())
                } else {
                    Err(Error::Failed(format!(
                        "branch {branch} already exists at {}, not at {commit}",
                        existing.commit
                    )))
                };
            }
            with_commit(inner, call, target, commit, |repo| match target {
                Target::Remote(url) => push_branch(repo, call, url, &branch, commit),
                // Play's own host: the ref is written in place, only if it
                // is still absent (another writer wins, and this fails).
                Target::Hosted(_) => repo
                    .reference(&format!("refs/heads/{branch}"), commit, false, "play: create a branch")
                    .map(drop)
                    .map_err(|e| Error::Failed(format!("creating branch {branch}: {}", e.message()))),
            })
        })
        .await
    }
}
