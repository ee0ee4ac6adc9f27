//! The `RepositoryGateway` seam: every byte play reads from or writes to a
//! Playzone's git repository crosses it. Defined here, implemented in
//! `play-git` (libgit2 through the `git2` crate, with play's own HTTP
//! transport), injected by the binary into the API (`env_defaults`) and the
//! reconcilers (sync, builds), so neither depends on libgit2.
//!
//! # Invariants
//!
//! - The access token travels only inside [`RepositoryAccess`], whose
//!   `Debug` redacts it; the implementation sends it in an
//!   `Authorization` header, never in a URL, and never puts it in an error
//!   message ([`RepositoryError`] texts are safe to store and show).
//! - Every call is bounded (time, bytes received, refs listed, file size);
//!   a bound that is hit is an error that names it, never a truncated
//!   answer taken for a whole one.
//! - The implementation resolves the repository's host once, checks every
//!   address against the operator's policy (no loopback, private,
//!   link-local or metadata address unless allowlisted) and connects to the
//!   checked address only; it follows no redirect to another host.

use std::fmt;

use async_trait::async_trait;
use serde::Serialize;

use crate::scm::model::Provider;
use crate::scm::names::FullName;

pub mod ssh;

/// A repository as the gateway needs it for one call: the URL and, for a
/// private repository, the decrypted access token; or play's own Git host
/// ([`Reach`]).
#[derive(Clone, PartialEq, Eq)]
pub struct RepositoryAccess {
    /// `https://` (or `http://` where the operator allows it) URL of the
    /// repository, without userinfo. For a repository of play's own host,
    /// its clone URL (shown in messages; the gateway does not dial it).
    pub url: String,
    /// The access token, sent as HTTP basic auth (user `x-access-token`,
    /// which GitHub, GitLab (`oauth2` also works), Gitea and Bitbucket
    /// accept with a token as the password).
    pub token: Option<String>,
    /// How the gateway reaches it.
    pub reach: Reach,
}

/// How the gateway reaches a repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Over the network at `url`, under the operator's address policy.
    Remote,
    /// A repository of play's own Git host, opened where that host keeps
    /// it, without the network. Only the store gives this, after it found
    /// that the Playzone's account may read the repository (its own, or a
    /// public one).
    Builtin(FullName),
    /// A repository attached through a source-hosting app installation
    /// (a GitHub App): over the network, under the operator's policy, at
    /// the clone URL the app derives from `repository` and the provider's
    /// own host ([`InstallationTokens::clone_url`]), never at the stored
    /// `url` (a tenant may edit that text, and the installation's token
    /// must only ever reach the provider: issue #49, item 1), with a
    /// short-lived token limited to that one repository and to what the
    /// call does ([`GitAccess`]), asked of the app at each call and never
    /// stored. Only the store gives this, for an installation that is
    /// active, from the repository record the Playzone was attached to.
    App { provider: Provider, installation: String, repository: FullName },
    /// A repository on an ssh URL (`ssh://` or `user@host:path`), with
    /// the Playzone's deploy key and pinned host key, under the
    /// operator's address policy as an https URL's host ([`ssh`]).
    Ssh(ssh::SshAccess),
    /// The Playzone was attached through an installation that no longer
    /// gives access (the repository or the installation is gone, or the
    /// repository became private to another account): every call fails
    /// with this reason, and nothing is dialled.
    Lost(String),
}

impl RepositoryAccess {
    /// A repository reached over the network.
    pub fn remote(url: impl Into<String>, token: Option<String>) -> Self {
        RepositoryAccess { url: url.into(), token, reach: Reach::Remote }
    }
}

impl fmt::Debug for RepositoryAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RepositoryAccess")
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("reach", &self.reach)
            .finish()
    }
}

/// What one git call does with a repository reached through an
/// installation: the token asked for may do that and no more.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GitAccess {
    /// Fetches: listing branches, reading files, archives (`contents: read`
    /// on GitHub).
    Read,
    /// A push: creating a branch (`contents: write`).
    Write,
}

/// Short-lived tokens of source-hosting app installations, for git over
/// HTTPS ([`Reach::App`]), and where the provider serves a repository.
/// The app caches tokens until shortly before they expire; the gateway
/// forgets the installation's tokens when the remote refused one, so the
/// next call gets a fresh one.
#[async_trait]
pub trait InstallationTokens: Send + Sync + fmt::Debug {
    /// The URL git reaches `repository` at on `provider`: built from the
    /// provider's host as the operator configured it, so that no text a
    /// tenant wrote decides where an installation's token goes.
    fn clone_url(&self, provider: Provider, repository: &FullName) -> Result<String, RepositoryError>;
    /// A token of `installation` (the provider's id) of `provider`'s app,
    /// limited to `repository` and to `access`.
    async fn token(
        &self,
        provider: Provider,
        installation: &str,
        repository: &FullName,
        access: GitAccess,
    ) -> Result<String, RepositoryError>;
    /// Drops the cached tokens of `installation` (the remote refused one).
    fn forget(&self, provider: Provider, installation: &str);
}

/// The branches of a remote, as its smart HTTP advertisement lists them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RemoteRefs {
    /// The branch the remote's `HEAD` points at, when it says.
    pub default_branch: Option<String>,
    /// Every `refs/heads/*` branch, sorted by name, at most the gateway's
    /// branch bound ([`RepositoryError::TooLarge`] beyond it).
    pub branches: Vec<RemoteBranch>,
}

/// One branch and the commit it points at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RemoteBranch {
    /// Without `refs/heads/`.
    pub name: String,
    /// Full hex object id of the commit.
    pub commit: String,
}

/// What a path names at a commit ([`RepositoryGateway::entry`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeEntry {
    /// Nothing: no entry, or a file or submodule where a folder on the way
    /// was expected.
    Missing,
    /// The path, or the folder on the way to it named here, is a symbolic
    /// link: never followed, so the caller decides what to say.
    Link(String),
    /// A regular file.
    File { contents: Vec<u8>, executable: bool },
    /// A folder: its tree as [`RepositoryGateway::archive`] makes it.
    Directory(Vec<u8>),
}

/// Why a repository call failed. Every message is free of the token and
/// safe to store on a Playzone or show in an API error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RepositoryError {
    /// The URL or an address it resolves to is not allowed by the operator's
    /// policy: nothing was sent.
    #[error("refused: {0}")]
    Refused(String),
    /// The host could not be reached (DNS, connection refused, TLS).
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The remote refused the credentials (401/403), or wants some.
    #[error("access denied: {0}")]
    Unauthorized(String),
    /// No such repository, branch, commit or path.
    #[error("not found: {0}")]
    NotFound(String),
    /// A bound was hit (bytes fetched, branches listed, file size).
    #[error("too large: {0}")]
    TooLarge(String),
    /// A bound shared with other work was reached (the bytes an account
    /// has in flight, [`ByteBudget`]): nothing is wrong with this call,
    /// and it can succeed once that other work is done.
    #[error("busy: {0}")]
    Busy(String),
    /// The call took longer than its bound.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The remote answered something play cannot use (or a push was
    /// rejected); the message says what.
    #[error("{0}")]
    Failed(String),
}

/// Bytes that several archives share: the ones an account has in flight
/// (issue #27, item 6). An archive takes each entry's bytes before it
/// writes it and fails with [`RepositoryError::Busy`] when refused; what
/// was taken is given back by the budget's owner once the work that used
/// the archive is done.
pub trait ByteBudget: Send + Sync + fmt::Debug {
    /// Takes `bytes` more; `false`, taking nothing, when that would pass
    /// the bound.
    fn take(&self, bytes: u64) -> bool;
}

/// How [`RepositoryGateway::archive_to_file`] shapes its archive: what it
/// leaves out (a build context's `.dockerignore`, never the Dockerfile, as
/// the `docker` CLI sends it), where entries go, what comes last, and the
/// budget it is charged to.
#[derive(Clone, Debug, Default)]
pub struct ArchiveOptions {
    pub rules: crate::build::dockerignore::Rules,
    /// The Dockerfile's path, relative to the context: never left out.
    pub dockerfile: String,
    /// A folder every entry is put under, itself written first as a
    /// folder entry; `""` puts entries at the archive's root.
    pub prefix: String,
    /// A regular file (path, contents) written as the archive's last
    /// entry: a source fill's completeness marker, which exists in the
    /// extracted tree only if everything before it was written.
    pub last: Option<(String, Vec<u8>)>,
    /// Charged with every entry's bytes before it is written.
    pub budget: Option<std::sync::Arc<dyn ByteBudget>>,
}

impl ArchiveOptions {
    /// Whether the entry at `path` (relative to the context) is left out.
    pub fn excludes(&self, path: &str) -> bool {
        path != self.dockerfile && self.rules.excludes(path)
    }
}

/// See the [module documentation](self).
#[async_trait]
pub trait RepositoryGateway: Send + Sync + fmt::Debug {
    /// Lists the remote's branches and its default branch.
    async fn list_branches(&self, repo: &RepositoryAccess) -> Result<RemoteRefs, RepositoryError>;

    /// Reads files at `commit` (a full hex id the remote advertises, or that
    /// a branch of it reaches), each at most `max_bytes`: `None` for a path
    /// that is absent or not a regular file (a link is never followed).
    /// Fetches the commit shallowly when the gateway's cache lacks it.
    async fn read_files(
        &self,
        repo: &RepositoryAccess,
        commit: &str,
        paths: &[String],
        max_bytes: usize,
    ) -> Result<Vec<Option<Vec<u8>>>, RepositoryError>;

    /// The tree of `commit` under `subdir` (`""` for the root) as an
    /// uncompressed tar archive: regular files with their executable bit,
    /// symbolic links as link entries (never followed), at most
    /// `max_bytes` in all. The build context and `source_mount` contents.
    async fn archive(
        &self,
        repo: &RepositoryAccess,
        commit: &str,
        subdir: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, RepositoryError>;

    /// [`archive`](Self::archive) written to the existing file `to`
    /// (truncated, never created) as it is made, shaped by `options`:
    /// memory holds one file of the tree at a time, and the build or the
    /// source fill sends it to the engine from disk (issue #27, item 6).
    /// `max_bytes` bounds the whole archive, `last` included. Answers the
    /// bytes written.
    async fn archive_to_file(
        &self,
        repo: &RepositoryAccess,
        commit: &str,
        subdir: &str,
        max_bytes: u64,
        options: ArchiveOptions,
        to: std::path::PathBuf,
    ) -> Result<u64, RepositoryError>;

    /// What the clean relative `path` names at `commit`, with its contents
    /// (a file's bytes, a folder's archive), at most `max_bytes`. A link
    /// at the path or on the way to it is [`TreeEntry::Link`], never
    /// followed. The relative sources of a Compose file (`./conf:/etc/app`)
    /// that a Playzone's repository provides.
    async fn entry(
        &self,
        repo: &RepositoryAccess,
        commit: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<TreeEntry, RepositoryError>;

    /// Creates `refs/heads/<branch>` on the remote at `commit`. Idempotent:
    /// `Ok` when the branch already points at `commit`;
    /// [`RepositoryError::Failed`] when it points elsewhere.
    async fn create_branch(&self, repo: &RepositoryAccess, branch: &str, commit: &str) -> Result<(), RepositoryError>;
}

/// A gateway for processes that reach no repository (offline commands,
/// tests of other parts): every call fails with a message that says so.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRepositories;

const NOT_CONFIGURED: &str = "repository access is not configured in this process";

#[async_trait]
impl RepositoryGateway for NoRepositories {
    async fn list_branches(&self, _repo: &RepositoryAccess) -> Result<RemoteRefs, RepositoryError> {
        Err(RepositoryError::Failed(NOT_CONFIGURED.into()))
    }

    async fn read_files(
        &self,
        _repo: &RepositoryAccess,
        _commit: &str,
        _paths: &[String],
        _max_bytes: usize,
    ) -> Result<Vec<Option<Vec<u8>>>, RepositoryError> {
        Err(RepositoryError::Failed(NOT_CONFIGURED.into()))
    }

    async fn archive(
        &self,
        _repo: &RepositoryAccess,
        _commit: &str,
        _subdir: &str,
        _max_bytes: u64,
    ) -> Result<Vec<u8>, RepositoryError> {
        Err(RepositoryError::Failed(NOT_CONFIGURED.into()))
    }

    async fn archive_to_file(
        &self,
        _repo: &RepositoryAccess,
        _commit: &str,
        _subdir: &str,
        _max_bytes: u64,
        _options: ArchiveOptions,
        _to: std::path::PathBuf,
    ) -> Result<u64, RepositoryError> {
        Err(RepositoryError::Failed(NOT_CONFIGURED.into()))
    }

    async fn entry(
        &self,
        _repo: &RepositoryAccess,
        _commit: &str,
        _path: &str,
        _max_bytes: u64,
    ) -> Result<TreeEntry, RepositoryError> {
        Err(RepositoryError::Failed(NOT_CONFIGURED.into()))
    }

    async fn create_branch(
        &self,
        _repo: &RepositoryAccess,
        _branch: &str,
        _commit: &str,
    ) -> Result<(), RepositoryError> {
        Err(RepositoryError::Failed(NOT_CONFIGURED.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_token() {
        let access = RepositoryAccess::remote("https://git.example/r.git", Some("tok-secret-1".into()));
        let shown = format!("{access:?} {access:#?}");
        assert!(!shown.contains("tok-secret-1"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
