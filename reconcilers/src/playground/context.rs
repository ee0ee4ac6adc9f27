//! A build's context on its way from the repository to the engine
//! (issue #27, item 6): never whole in play's memory.
//!
//! 1. The Dockerfile and the context's `.dockerignore` are read on their
//!    own (small, bounded), so the Dockerfile is checked before anything
//!    is sent and the rules are known before the context is written.
//! 2. The repository gateway writes the context's tar archive, what the
//!    rules exclude left out (never the Dockerfile), to a spool file in
//!    the spool directory (`<data dir>/spool` under `play serve`: disk,
//!    not a tmpfs): one file of the tree is in memory at a time.
//! 3. The build request's body streams that file to the engine in chunks.
//!
//! The spool file is removed when its [`Spool`] drops: after the build,
//! on an error, and when the pass is cancelled mid-way. Source fills
//! (`super::source`) spool their trees the same way.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use play_model::build::dockerfile::MAX_DOCKERFILE_BYTES;
use play_model::build::dockerignore::Rules;
use play_model::build::{BuildSpec, MAX_CONTEXT_BYTES};
use play_model::repository::{
    ArchiveOptions, ByteBudget, RepositoryAccess, RepositoryError, RepositoryGateway, TreeEntry,
};

/// A file the context is written to; removed on drop.
#[derive(Debug)]
pub struct Spool {
    pub path: PathBuf,
}

impl Spool {
    /// A new, empty file in `dir`, its name unique in this process and
    /// across processes (the pid). Created here, before the guard exists,
    /// and only ever opened (never created) by the gateway: a pass
    /// cancelled while the gateway's blocking thread has not opened it yet
    /// removes it, and the late open then fails instead of leaving a file.
    pub async fn new(dir: &Path, playground_id: i64) -> std::io::Result<Spool> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("play-build-{}-{playground_id}-{n}.tar", std::process::id());
        let spool = Spool { path: dir.join(name) };
        tokio::fs::File::create(&spool.path).await?;
        Ok(spool)
    }

    /// The file as a stream of chunks, for a request body
    /// (`bollard::body_try_stream`).
    pub async fn chunks(&self) -> std::io::Result<tokio_util::io::ReaderStream<tokio::fs::File>> {
        let file = tokio::fs::File::open(&self.path).await?;
        Ok(tokio_util::io::ReaderStream::with_capacity(file, 256 * 1024))
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Removes the spool files in `dir` of processes that no longer run (a
/// killed `play serve` leaves its files: nothing dropped their guards).
/// A file names its process (`play-build-<pid>-...`); one of a live
/// process, another replica's on a shared directory, is left alone.
pub fn remove_dead_spools(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("play-build-").and_then(|rest| rest.split('-').next()) else { continue };
        let alive = pid.parse::<u32>().is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The context of `spec`, fetched: the Dockerfile's text (when the
/// context holds it as a regular file) and the spooled archive.
#[derive(Debug)]
pub struct Fetched {
    pub dockerfile: Option<String>,
    pub spool: Spool,
    pub bytes: u64,
}

/// Why fetching failed: the repository, or a refusal to show in the build
/// record (a `.dockerignore` that does not parse).
#[derive(Debug)]
pub enum FetchError {
    Repository(RepositoryError),
    Refused(String),
}

/// Fetches the context of `spec` (see the [module documentation](self)).
pub async fn fetch(
    repositories: &dyn RepositoryGateway,
    access: &RepositoryAccess,
    spec: &BuildSpec,
    spool_dir: &Path,
    playground_id: i64,
    budget: Arc<dyn ByteBudget>,
) -> Result<Fetched, FetchError> {
    let within =
        |name: &str| if spec.context.is_empty() { name.to_owned() } else { format!("{}/{name}", spec.context) };
    let dockerfile_path = spec.dockerfile.trim_start_matches("./").to_owned();
    let dockerfile = small_file(repositories, access, &spec.commit, &within(&dockerfile_path)).await?;
    let rules = match small_file(repositories, access, &spec.commit, &within(".dockerignore")).await? {
        Some(text) => Rules::parse(&text).map_err(FetchError::Refused)?,
        None => Rules::default(),
    };
    let spool = Spool::new(spool_dir, playground_id)
        .await
        .map_err(|e| FetchError::Refused(format!("creating a spool file in {}: {e}", spool_dir.display())))?;
    let options =
        ArchiveOptions { rules, dockerfile: dockerfile_path, budget: Some(budget), ..ArchiveOptions::default() };
    let bytes = repositories
        .archive_to_file(access, &spec.commit, &spec.context, MAX_CONTEXT_BYTES, options, spool.path.clone())
        .await
        .map_err(FetchError::Repository)?;
    Ok(Fetched { dockerfile, spool, bytes })
}

/// The text of the regular file at `path` of `commit`, if there is one (a
/// link or a folder there is none); larger than the Dockerfile bound is a
/// refusal.
async fn small_file(
    repositories: &dyn RepositoryGateway,
    access: &RepositoryAccess,
    commit: &str,
    path: &str,
) -> Result<Option<String>, FetchError> {
    match repositories.entry(access, commit, path, MAX_DOCKERFILE_BYTES as u64).await {
        Ok(TreeEntry::File { contents, .. }) => Ok(Some(String::from_utf8_lossy(&contents).into_owned())),
        Ok(_) | Err(RepositoryError::NotFound(_)) => Ok(None),
        Err(RepositoryError::TooLarge(_)) => {
            Err(FetchError::Refused(format!("{path} is larger than {MAX_DOCKERFILE_BYTES} bytes")))
        }
        Err(e) => Err(FetchError::Repository(e)),
    }
}
