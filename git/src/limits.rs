//! The bounds of play's own Git host (issue #49, item 6): what one
//! request, one push and one account may make the host read, run and
//! store, and how many Git processes one replica runs at once. The
//! operator sets them (`PLAY_GIT_*`, `docs/repositories.md`); the
//! defaults live here and nowhere else.
//!
//! # Where each is enforced
//!
//! - `max_request_bytes`: on the body as Git reads it, after play has
//!   inflated a gzip body itself ([`crate::body`]), and on the bytes on
//!   the wire; a push's pack alone is held to it (or to the account's room
//!   left, if smaller) by receive-pack's own `receive.maxInputSize`, so
//!   the client sees Git's own message.
//! - `max_refs_per_push`, `max_objects_per_push`: on a push's commands and
//!   its pack header, read before they reach receive-pack
//!   ([`crate::receive`]); over them the push is answered with Git's
//!   report of rejected refs, and receive-pack never sees the pack.
//! - `max_account_bytes`: before every push (Git's or the API's), on what
//!   the account's repositories use on disk ([`usage`]).
//! - `max_processes`, `queue_wait`: around every `git http-backend`,
//!   anonymous fetches of public repositories included ([`Processes`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bounds; see the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitHostLimits {
    /// Most bytes of one request body, counted after gzip inflation (and
    /// on the wire); a push's pack alone is held to it too.
    pub max_request_bytes: u64,
    /// Most refs one push may update (create, move or delete).
    pub max_refs_per_push: usize,
    /// Most objects one push's pack may hold (its header's count).
    pub max_objects_per_push: u64,
    /// Most bytes an account's repositories may use on disk: a push is
    /// refused once they use this much, and a push's pack may be at most
    /// the room left.
    pub max_account_bytes: u64,
    /// Most Git processes this replica runs at once.
    pub max_processes: usize,
    /// How long a request waits for a free process before it is answered
    /// `503` with `Retry-After`.
    pub queue_wait: Duration,
}

impl Default for GitHostLimits {
    fn default() -> Self {
        GitHostLimits {
            max_request_bytes: 512 * 1024 * 1024,
            max_refs_per_push: 1_000,
            max_objects_per_push: 1_000_000,
            max_account_bytes: 10 * 1024 * 1024 * 1024,
            max_processes: 16,
            queue_wait: Duration::from_secs(5),
        }
    }
}

/// Bytes read past `max_request_bytes` before the body is cut, so that
/// receive-pack, which stops a pack one byte over `receive.maxInputSize`,
/// gives its own message before play's cut ends the pack early.
pub(crate) const CUT_SLACK: u64 = 64 * 1024;

/// The Git processes one replica runs at once: one permit per process,
/// held until the process has exited.
#[derive(Clone, Debug)]
pub(crate) struct Processes {
    permits: Arc<Semaphore>,
    wait: Duration,
}

impl Processes {
    pub(crate) fn new(limits: &GitHostLimits) -> Self {
        Processes { permits: Arc::new(Semaphore::new(limits.max_processes.max(1))), wait: limits.queue_wait }
    }

    /// A permit, waiting at most the queue wait for one; `None`: the host
    /// is busy.
    pub(crate) async fn admit(&self) -> Option<OwnedSemaphorePermit> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Some(permit);
        }
        tokio::time::timeout(self.wait, self.permits.clone().acquire_owned()).await.ok()?.ok()
    }

    /// The `Retry-After` of a busy answer, in whole seconds (at least 1).
    pub(crate) fn retry_after(&self) -> u64 {
        self.wait.as_secs().max(1)
    }
}

/// The bytes of the regular files under `dir` (an account's folder of
/// repositories), symbolic links not followed; `0` when there is no such
/// folder. Blocks: run it on a blocking thread.
///
/// A file or folder that vanishes between its listing and its `stat`
/// counts nothing: a concurrent push renames its temporary object files
/// away, and a push must not fail because another one is writing.
pub(crate) fn usage(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0u64;
    let mut folders = vec![dir.to_owned()];
    while let Some(folder) = folders.pop() {
        let Some(entries) = unless_gone(std::fs::read_dir(&folder))? else { continue };
        for entry in entries {
            let Some(entry) = unless_gone(entry)? else { continue };
            let Some(kind) = unless_gone(entry.file_type())? else { continue };
            if kind.is_dir() {
                folders.push(entry.path());
            } else if kind.is_file()
                && let Some(metadata) = unless_gone(entry.metadata())?
            {
                total = total.saturating_add(metadata.len());
            }
        }
    }
    Ok(total)
}

/// `None` for what no longer exists; any other error stays one.
fn unless_gone<T>(result: std::io::Result<T>) -> std::io::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn usage_counts_files_below_the_folder_and_nothing_for_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(usage(&dir.path().join("none")).unwrap(), 0);
        std::fs::create_dir_all(dir.path().join("a.git/objects/ab")).unwrap();
        std::fs::write(dir.path().join("a.git/HEAD"), [0u8; 10]).unwrap();
        std::fs::write(dir.path().join("a.git/objects/ab/cd"), [0u8; 1000]).unwrap();
        assert_eq!(usage(dir.path()).unwrap(), 1010);
    }

    /// Git writes each loose object to a temporary file and renames it, so
    /// a concurrent push makes files vanish between the listing and the
    /// `stat`: such a file counts nothing instead of failing the push (a
    /// `500` on concurrent pushes in CI).
    #[test]
    fn files_that_vanish_during_the_walk_count_nothing_instead_of_failing() {
        let dir = tempfile::tempdir().unwrap();
        let objects = dir.path().join("a.git/objects/ab");
        std::fs::create_dir_all(&objects).unwrap();
        std::fs::write(objects.join("kept"), [0u8; 7]).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn = {
            let (objects, stop) = (objects.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let temporary = objects.join(format!("tmp_object_{n}"));
                    std::fs::write(&temporary, [0u8; 3]).unwrap();
                    std::fs::remove_file(&temporary).unwrap();
                    n += 1;
                }
            })
        };
        let walks: Vec<_> = (0..3000).map(|_| usage(dir.path())).collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        churn.join().unwrap();
        for walk in walks {
            assert!(walk.unwrap() >= 7);
        }
    }

    #[tokio::test]
    async fn a_process_over_the_bound_waits_then_is_refused_and_a_freed_permit_is_reused() {
        let limits = GitHostLimits { max_processes: 1, queue_wait: Duration::from_millis(1), ..Default::default() };
        let processes = Processes::new(&limits);
        let first = processes.admit().await.unwrap();
        assert!(processes.admit().await.is_none(), "a second process over the bound");
        drop(first);
        assert!(processes.admit().await.is_some(), "the permit is back once the first process ended");
        assert_eq!(processes.retry_after(), 1);
    }
}
