//! Reading a commit's contents out of the cache repository: single files
//! ([`read_files`]), a tar archive of a subtree ([`archive`]) and whatever
//! a path names ([`entry`]).
//!
//! # Invariants
//!
//! - A symbolic link is never followed: [`read_files`] answers `None` for
//!   it, [`archive`] writes it as a link entry holding its target.
//! - A bound is checked before a blob is loaded (from the object header),
//!   so an oversized file costs no memory; an archive never exceeds its
//!   bound, not even by the closing blocks.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Tree};
use play_core::repository::TreeEntry;
use tar::{EntryType, Header};

use crate::error::{Error, Result};

/// Git's file modes, as tree entries store them.
const MODE_DIR: i32 = 0o040000;
const MODE_FILE: i32 = 0o100644;
const MODE_FILE_GROUP_WRITABLE: i32 = 0o100664;
const MODE_EXEC: i32 = 0o100755;
const MODE_LINK: i32 = 0o120000;

/// The tar archive's fixed overhead: two closing zero blocks.
const TAR_END: u64 = 1024;

fn failed(what: &str, e: &git2::Error) -> Error {
    Error::Failed(format!("{what}: {}", e.message()))
}

fn tree_of(repo: &Repository, commit: Oid) -> Result<Tree<'_>> {
    let commit = repo.find_commit(commit).map_err(|e| failed("reading the commit", &e))?;
    commit.tree().map_err(|e| failed("reading the commit's tree", &e))
}

/// The size of a blob, from its header.
fn blob_size(repo: &Repository, oid: Oid) -> Result<u64> {
    let odb = repo.odb().map_err(|e| failed("opening the object database", &e))?;
    let (size, _) = odb.read_header(oid).map_err(|e| failed("reading an object header", &e))?;
    Ok(size as u64)
}

/// Each path's contents at `commit`: `None` when absent or not a regular
/// file; [`Error::TooLarge`] when one is bigger than `max_bytes`.
pub(crate) fn read_files(
    repo: &Repository,
    commit: Oid,
    paths: &[String],
    max_bytes: usize,
) -> Result<Vec<Option<Vec<u8>>>> {
    let tree = tree_of(repo, commit)?;
    let mut files = Vec::with_capacity(paths.len());
    for path in paths {
        // Only clean relative paths name something in a tree.
        if crate::names::subdir_parts(path).map_or(true, |parts| parts.is_empty() || path.ends_with('/')) {
            files.push(None);
            continue;
        }
        let entry = match tree.get_path(Path::new(path)) {
            Ok(entry) => entry,
            Err(e) if e.code() == git2::ErrorCode::NotFound => {
                files.push(None);
                continue;
            }
            Err(e) => return Err(failed(&format!("looking up {path}"), &e)),
        };
        let regular = matches!(entry.filemode(), MODE_FILE | MODE_FILE_GROUP_WRITABLE | MODE_EXEC);
        if !regular || entry.kind() != Some(ObjectType::Blob) {
            files.push(None);
            continue;
        }
        let size = blob_size(repo, entry.id())?;
        if size > max_bytes as u64 {
            return Err(Error::TooLarge(format!("{path} is {size} bytes, more than the bound of {max_bytes}")));
        }
        let blob = repo.find_blob(entry.id()).map_err(|e| failed(&format!("reading {path}"), &e))?;
        files.push(Some(blob.content().to_vec()));
    }
    Ok(files)
}

/// An uncompressed tar archive of the tree of `commit` under `subdir`
/// (already split into components, see [`crate::names::subdir_parts`]):
/// directories (0755), regular files (0644, or 0755 when executable),
/// symbolic links as link entries; submodules are left out (their
/// contents are not in this repository). Paths are relative to `subdir`;
/// times are the commit's, owners root.
pub(crate) fn archive(repo: &Repository, commit: Oid, subdir: &[&str], max_bytes: u64) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_archive(repo, commit, subdir, max_bytes, &|_| false, &mut out)?;
    Ok(out)
}

/// Counts what passes through it: the archive's size without keeping it.
struct Counting<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// [`archive`] written to `out` as it is made (a file: one blob of the tree
/// in memory at a time), leaving out every entry whose path (relative to
/// `subdir`) `exclude` names; a folder left out is still walked, as a
/// `.dockerignore` exception may bring files of it back. Answers the
/// bytes written.
pub(crate) fn write_archive(
    repo: &Repository,
    commit: Oid,
    subdir: &[&str],
    max_bytes: u64,
    exclude: &dyn Fn(&str) -> bool,
    out: impl Write,
) -> Result<u64> {
    let found = repo.find_commit(commit).map_err(|e| failed("reading the commit", &e))?;
    let mtime = u64::try_from(found.time().seconds()).unwrap_or(0);
    let mut tree = tree_of(repo, commit)?;
    if !subdir.is_empty() {
        let shown = subdir.join("/");
        let entry = tree
            .get_path(Path::new(&shown))
            .map_err(|_| Error::NotFound(format!("{shown} is not in commit {commit}")))?;
        if entry.kind() != Some(ObjectType::Tree) {
            return Err(Error::NotFound(format!("{shown} is not a directory in commit {commit}")));
        }
        tree = repo.find_tree(entry.id()).map_err(|e| failed(&format!("reading {shown}"), &e))?;
    }
    let mut out = tar::Builder::new(Counting { inner: out, written: 0 });
    let too_large = || Error::TooLarge(format!("the archive would exceed its bound of {max_bytes} bytes"));
    let written = |out: &tar::Builder<Counting<_>>| out.get_ref().written;
    let io = |e: std::io::Error| Error::Failed(format!("writing the archive: {e}"));
    // Depth-first without recursion: a hostile repository may nest deeply.
    let mut pending: Vec<(Tree<'_>, PathBuf)> = vec![(tree, PathBuf::new())];
    while let Some((tree, prefix)) = pending.pop() {
        for entry in tree.iter() {
            let path = prefix.join(OsStr::from_bytes(entry.name_bytes()));
            let left_out = exclude(&path.to_string_lossy());
            let mode = entry.filemode();
            let mut header = Header::new_gnu();
            header.set_mtime(mtime);
            header.set_uid(0);
            header.set_gid(0);
            match mode {
                MODE_DIR => {
                    if !left_out {
                        if written(&out) + 512 + TAR_END > max_bytes {
                            return Err(too_large());
                        }
                        header.set_entry_type(EntryType::Directory);
                        header.set_mode(0o755);
                        header.set_size(0);
                        out.append_data(&mut header, &path, std::io::empty()).map_err(io)?;
                    }
                    let subtree = repo.find_tree(entry.id()).map_err(|e| failed("reading a tree", &e))?;
                    pending.push((subtree, path));
                }
                MODE_FILE | MODE_FILE_GROUP_WRITABLE | MODE_EXEC | MODE_LINK if !left_out => {
                    let size = blob_size(repo, entry.id())?;
                    // At least a header and the padded data (long names
                    // add blocks: the check after the append sees them).
                    if written(&out) + 512 + size.div_ceil(512) * 512 + TAR_END > max_bytes {
                        return Err(too_large());
                    }
                    let blob = repo.find_blob(entry.id()).map_err(|e| failed("reading a file", &e))?;
                    if mode == MODE_LINK {
                        header.set_entry_type(EntryType::Symlink);
                        header.set_mode(0o777);
                        header.set_size(0);
                        let target = Path::new(OsStr::from_bytes(blob.content()));
                        out.append_link(&mut header, &path, target).map_err(io)?;
                    } else {
                        header.set_entry_type(EntryType::Regular);
                        header.set_mode(if mode == MODE_EXEC { 0o755 } else { 0o644 });
                        header.set_size(size);
                        out.append_data(&mut header, &path, blob.content()).map_err(io)?;
                    }
                }
                // Left out, submodules (0o160000) and anything unknown.
                _ => {}
            }
            if written(&out) + TAR_END > max_bytes {
                return Err(too_large());
            }
        }
    }
    let mut counting = out.into_inner().map_err(io)?;
    counting.flush().map_err(io)?;
    if counting.written > max_bytes {
        return Err(too_large());
    }
    Ok(counting.written)
}

/// What `parts` (a clean relative path, split) names at `commit`: walked
/// one folder at a time so that a link on the way is reported, not
/// followed; a folder comes as [`archive`] makes it, a file whole (bounded
/// by `max_bytes` before it is loaded).
pub(crate) fn entry(repo: &Repository, commit: Oid, parts: &[&str], max_bytes: u64) -> Result<TreeEntry> {
    let mut tree = tree_of(repo, commit)?;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let Some((mode, id)) = tree.get_name(part).map(|found| (found.filemode(), found.id())) else {
            return Ok(TreeEntry::Missing);
        };
        match mode {
            MODE_LINK => return Ok(TreeEntry::Link(parts[..=i].join("/"))),
            MODE_DIR if last => return archive(repo, commit, parts, max_bytes).map(TreeEntry::Directory),
            MODE_DIR => tree = repo.find_tree(id).map_err(|e| failed("reading a tree", &e))?,
            MODE_FILE | MODE_FILE_GROUP_WRITABLE | MODE_EXEC if last => {
                let size = blob_size(repo, id)?;
                if size > max_bytes {
                    let shown = parts.join("/");
                    return Err(Error::TooLarge(format!(
                        "{shown} is {size} bytes, more than the bound of {max_bytes}"
                    )));
                }
                let blob = repo.find_blob(id).map_err(|e| failed("reading a file", &e))?;
                return Ok(TreeEntry::File { contents: blob.content().to_vec(), executable: mode == MODE_EXEC });
            }
            // A file on the way to a deeper path, a submodule, anything
            // unknown: nothing this repository holds at the path.
            _ => return Ok(TreeEntry::Missing),
        }
    }
    // No parts: the root, a folder.
    archive(repo, commit, parts, max_bytes).map(TreeEntry::Directory)
}
