//! The commit cache: one bare repository per remote URL under the
//! gateway's cache directory, holding the commits play has fetched
//! (shallowly, depth 1) so that reading files or archiving a tree of a
//! commit already seen costs no network call.
//!
//! # Invariants
//!
//! - A repository's directory name is the SHA-256 of the URL (which never
//!   has userinfo), never anything derived from the token; nothing
//!   written here contains the token (libgit2 never sees it).
//! - Each fetched commit is kept alive by `refs/play/commits/<id>`, so a
//!   commit found in the cache stays there.
//! - Within one process, operations on one cache repository are
//!   serialised ([`Cache::lock`], process-wide, so two gateways on the
//!   same cache directory are safe too): libgit2 locks refs but not the
//!   shallow file. Several processes sharing a cache directory are not
//!   supported.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use git2::{AutotagOption, FetchOptions, Oid, RemoteCallbacks, RemoteRedirect, Repository};
use sha2::{Digest, Sha256};

use crate::call::Call;
use crate::error::{Error, Result};

/// See the [module documentation](self).
#[derive(Debug)]
pub(crate) struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub(crate) fn new(dir: PathBuf) -> Cache {
        Cache { dir }
    }

    /// Where `url`'s repository lives: named by the URL's SHA-256.
    fn path(&self, url: &str) -> PathBuf {
        self.dir.join(format!("{}.git", hex::encode(Sha256::digest(url.as_bytes()))))
    }

    /// The lock of `url`'s cache repository: hold it while using it. One
    /// entry per repository path ever used: a handful per deployment.
    pub(crate) fn lock(&self, url: &str) -> Arc<Mutex<()>> {
        static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
        let mut locks = LOCKS.get_or_init(Mutex::default).lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        locks.entry(self.path(url)).or_default().clone()
    }

    /// Opens `url`'s cache repository, creating it (bare) when missing.
    pub(crate) fn open(&self, url: &str) -> Result<Repository> {
        let path = self.path(url);
        let cannot = |e: git2::Error| Error::Failed(format!("cannot open the repository cache: {}", e.message()));
        if path.join("HEAD").exists() {
            return Repository::open_bare(&path).map_err(cannot);
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| Error::Failed(format!("cannot create the repository cache {}: {e}", self.dir.display())))?;
        Repository::init_bare(&path).map_err(cannot)
    }
}

/// Makes sure `commit` is in `repo`, fetching exactly it, depth 1, from
/// `url` when it is not. A commit the remote does not have (or will not
/// serve by id) is [`Error::NotFound`].
pub(crate) fn ensure_commit(repo: &Repository, call: &Call, url: &str, commit: Oid) -> Result<()> {
    if repo.find_commit(commit).is_ok() {
        return Ok(());
    }
    fetch(repo, call, url, &[format!("+{commit}:refs/play/commits/{commit}")], "fetching the commit")?;
    repo.find_commit(commit).map(drop).map_err(|_| Error::NotFound(format!("commit {commit} is not in {url}")))
}

/// Fetches `refspecs` from `url` into `repo`, depth 1, within the call's
/// byte bound and deadline.
fn fetch(repo: &Repository, call: &Call, url: &str, refspecs: &[String], what: &str) -> Result<()> {
    let mut remote = repo.remote_anonymous(url).map_err(|e| call.explain(what, &e))?;
    if remote.url() != Ok(url) {
        // The user's or system's git configuration rewrote the URL
        // (`url.*.insteadOf`): only the URL that was checked is fetched.
        return Err(Error::Refused(format!("the git configuration rewrites {url}; refusing to fetch")));
    }
    let mut callbacks = RemoteCallbacks::new();
    callbacks.transfer_progress(|progress| {
        // Returning false makes libgit2 abort the fetch; the reason is
        // recorded on the call.
        call.check_received(progress.received_bytes() as u64).is_ok() && call.remaining().is_ok()
    });
    let mut options = FetchOptions::new();
    options
        .remote_callbacks(callbacks)
        .depth(1)
        .download_tags(AutotagOption::None)
        .update_fetchhead(false)
        .follow_redirects(RemoteRedirect::None);
    remote.fetch(refspecs, Some(&mut options), None).map_err(|e| call.explain(what, &e))
}
