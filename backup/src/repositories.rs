//! play's own Git host's bare repositories (`<root>/<owner>/<name>.git`)
//! in a backup.
//!
//! They are staged by hard links: Git never changes a file in place (an
//! object is written once; a ref, `packed-refs` or `config` is replaced by
//! a rename), so a link keeps a file as it was when linked, whatever is
//! pushed afterwards. Refs are linked first, then objects: every ref in
//! the copy names objects that are in it. A file that goes between the
//! listing and its link (loose objects packed by `git gc --auto` after a
//! push) makes the staging start over.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// How many times the staging starts over when a file goes under it.
const ATTEMPTS: usize = 5;

/// The archive's folder for the repositories.
pub const PREFIX: &str = "repositories";

/// Stages every file under `root` into `staging` (same relative paths);
/// answers them, refs first, as (name in the archive, staged path). A
/// missing `root` has no repositories.
pub fn stage(root: &Path, staging: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut last = None;
    for _ in 0..ATTEMPTS {
        if staging.exists() {
            std::fs::remove_dir_all(staging).map_err(Error::io(format!("clear {}", staging.display())))?;
        }
        match stage_once(root, staging) {
            Ok(files) => return Ok(files),
            Err(Error::Io { source, context }) if source.kind() == std::io::ErrorKind::NotFound => {
                last = Some(Error::Io { source, context });
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| Error::Refused("the repositories kept changing under the backup".into())))
}

fn stage_once(root: &Path, staging: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut files = Vec::new();
    if root.exists() {
        walk(root, Path::new(""), &mut files)?;
    }
    // Refs before everything else; within each, by path.
    files.sort_by_key(|relative| (!is_ref(relative), relative.clone()));
    let mut staged = Vec::with_capacity(files.len());
    for relative in files {
        let from = root.join(&relative);
        let to = staging.join(&relative);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(Error::io(format!("create {}", parent.display())))?;
        }
        if std::fs::hard_link(&from, &to).is_err() {
            // Another file system: a copy, which a rename cannot disturb
            // either (the file opened is the one copied).
            std::fs::copy(&from, &to).map_err(Error::io(format!("copy {}", from.display())))?;
        }
        let name = Path::new(PREFIX).join(&relative);
        let name = name.to_str().ok_or_else(|| Error::Refused(format!("{} is not UTF-8", from.display())))?;
        staged.push((name.to_owned(), to));
    }
    Ok(staged)
}

/// Collects the files below `dir` (relative to the root), leaving out
/// what Git holds only while it writes: lock files and a receive's
/// quarantine of incoming objects.
fn walk(root: &Path, relative: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let dir = root.join(relative);
    let entries = std::fs::read_dir(&dir).map_err(Error::io(format!("list {}", dir.display())))?;
    for entry in entries {
        let entry = entry.map_err(Error::io(format!("list {}", dir.display())))?;
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if text.ends_with(".lock") || text.starts_with("incoming-") || text.starts_with("tmp_") {
            continue;
        }
        let kind = entry.file_type().map_err(Error::io(format!("stat {}", entry.path().display())))?;
        let path = relative.join(&name);
        if kind.is_dir() {
            walk(root, &path, files)?;
        } else if kind.is_file() {
            files.push(path);
        }
    }
    Ok(())
}

/// Whether `relative` (`<owner>/<name>.git/...`) is a ref of its
/// repository: `HEAD`, `packed-refs` or below `refs/`.
fn is_ref(relative: &Path) -> bool {
    let inside: Vec<_> = relative.components().skip(2).collect();
    match inside.first().and_then(|c| c.as_os_str().to_str()) {
        Some("HEAD" | "packed-refs") => inside.len() == 1,
        Some("refs") => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_come_before_objects_and_lock_files_are_left_out() {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("acme/app.git");
        for file in ["HEAD", "config", "packed-refs", "refs/heads/main", "refs/heads/main.lock", "objects/ab/cdef"] {
            let path = repo.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, file).unwrap();
        }
        std::fs::create_dir_all(repo.join("objects/incoming-x1")).unwrap();
        std::fs::write(repo.join("objects/incoming-x1/pack"), "half").unwrap();
        let staging = tempfile::tempdir().unwrap();
        let staged = stage(root.path(), &staging.path().join("r")).unwrap();
        let names: Vec<_> = staged.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "repositories/acme/app.git/HEAD",
                "repositories/acme/app.git/packed-refs",
                "repositories/acme/app.git/refs/heads/main",
                "repositories/acme/app.git/config",
                "repositories/acme/app.git/objects/ab/cdef",
            ]
        );
        // A ref replaced after the staging does not change the staged copy.
        let main = repo.join("refs/heads/main");
        std::fs::write(repo.join("refs/heads/new"), "moved").unwrap();
        std::fs::rename(repo.join("refs/heads/new"), &main).unwrap();
        assert_eq!(std::fs::read_to_string(&staged[2].1).unwrap(), "refs/heads/main");
    }

    #[test]
    fn no_root_is_no_repositories() {
        let staging = tempfile::tempdir().unwrap();
        assert!(stage(Path::new("/nonexistent/play-repositories"), &staging.path().join("r")).unwrap().is_empty());
    }
}
