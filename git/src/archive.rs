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
use play_model::repository::{ArchiveOptions, TreeEntry};
use tar::{EntryType, Header};

use crate::error::{Error, Result};
use crate::tree_walk::Walk;

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
/// times are the commit's, owners root. The walk is bounded by `walk`.
pub(crate) fn archive(
    repo: &Repository,
    commit: Oid,
    subdir: &[&str],
    max_bytes: u64,
    walk: &mut Walk,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_archive(repo, commit, subdir, max_bytes, &ArchiveOptions::default(), walk, &mut out)?;
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
/// in memory at a time), shaped by `options`: every entry whose path
/// (relative to `subdir`) its rules exclude is left out (a folder left
/// out is walked only when a `.dockerignore` exception may bring back
/// something below it, as the `docker` CLI decides; issue #49, item 2),
/// entries go under its prefix, its last file comes last, and each
/// entry's bytes are taken from its budget before they are written. Every
/// entry visited counts against `walk`'s bound, and its deadline is
/// checked as it goes. Answers the bytes written.
pub(crate) fn write_archive(
    repo: &Repository,
    commit: Oid,
    subdir: &[&str],
    max_bytes: u64,
    options: &ArchiveOptions,
    walk: &mut Walk,
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
    let mut out = Writer { tar: tar::Builder::new(Counting { inner: out, written: 0 }), max_bytes, options };
    let root = PathBuf::from(&options.prefix);
    if !options.prefix.is_empty() {
        out.append(&mut header(mtime, EntryType::Directory, 0o755, 0), &root, Item::Data(&[]))?;
    }
    // Depth-first without recursion: a hostile repository may nest deeply.
    let mut pending: Vec<(Oid, PathBuf)> = vec![(tree.id(), PathBuf::new())];
    while let Some((tree, relative)) = pending.pop() {
        for entry in walk.entries(repo, tree)?.iter() {
            let path = relative.join(OsStr::from_bytes(&entry.name));
            let shown = path.to_string_lossy();
            let left_out = options.excludes(&shown);
            match entry.mode {
                MODE_DIR => {
                    if !left_out {
                        let mut header = header(mtime, EntryType::Directory, 0o755, 0);
                        out.append(&mut header, &root.join(&path), Item::Data(&[]))?;
                    }
                    if !left_out || options.rules.may_bring_back_below(&shown) {
                        pending.push((entry.id, path));
                    }
                }
                mode @ (MODE_FILE | MODE_FILE_GROUP_WRITABLE | MODE_EXEC | MODE_LINK) if !left_out => {
                    walk.check_clock()?;
                    let size = blob_size(repo, entry.id)?;
                    // Checked before the blob is loaded.
                    out.admit(size)?;
                    let blob = repo.find_blob(entry.id).map_err(|e| failed("reading a file", &e))?;
                    let path = root.join(&path);
                    if mode == MODE_LINK {
                        let mut header = header(mtime, EntryType::Symlink, 0o777, 0);
                        out.append(&mut header, &path, Item::Link(Path::new(OsStr::from_bytes(blob.content()))))?;
                    } else {
                        let perms = if mode == MODE_EXEC { 0o755 } else { 0o644 };
                        let mut header = header(mtime, EntryType::Regular, perms, size);
                        out.append(&mut header, &path, Item::Data(blob.content()))?;
                    }
                }
                // Left out, submodules (0o160000) and anything unknown.
                _ => {}
            }
        }
    }
    if let Some((name, contents)) = &options.last {
        let mut header = header(mtime, EntryType::Regular, 0o444, contents.len() as u64);
        out.admit(contents.len() as u64)?;
        out.append(&mut header, Path::new(name), Item::Data(contents))?;
    }
    let max_bytes = out.max_bytes;
    let mut counting = out.tar.into_inner().map_err(io)?;
    counting.flush().map_err(io)?;
    if counting.written > max_bytes {
        return Err(too_large(max_bytes));
    }
    Ok(counting.written)
}

fn io(e: std::io::Error) -> Error {
    Error::Failed(format!("writing the archive: {e}"))
}

fn too_large(max_bytes: u64) -> Error {
    Error::TooLarge(format!("the archive would exceed its bound of {max_bytes} bytes"))
}

/// What an entry holds.
enum Item<'a> {
    Data(&'a [u8]),
    Link(&'a Path),
}

/// The archive being written, with its bound and budget.
struct Writer<'o, W: Write> {
    tar: tar::Builder<Counting<W>>,
    max_bytes: u64,
    options: &'o ArchiveOptions,
}

/// An entry's header: owned by root, dated at the commit.
fn header(mtime: u64, kind: EntryType, mode: u32, size: u64) -> Header {
    let mut header = Header::new_gnu();
    header.set_mtime(mtime);
    header.set_uid(0);
    header.set_gid(0);
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header
}

impl<W: Write> Writer<'_, W> {
    fn written(&self) -> u64 {
        self.tar.get_ref().written
    }

    /// Whether an entry of `size` bytes fits: at least a header and the
    /// padded data (long names add blocks: the check after the append
    /// sees them), and the closing blocks.
    fn admit(&self, size: u64) -> Result<()> {
        if self.written() + 512 + size.div_ceil(512) * 512 + TAR_END > self.max_bytes {
            return Err(too_large(self.max_bytes));
        }
        Ok(())
    }

    /// Appends one entry, its bytes taken from the budget first.
    fn append(&mut self, header: &mut Header, path: &Path, item: Item<'_>) -> Result<()> {
        let size = match item {
            Item::Data(data) => data.len() as u64,
            Item::Link(_) => 0,
        };
        self.admit(size)?;
        let before = self.written();
        let estimate = 512 + size.div_ceil(512) * 512;
        self.charge(estimate)?;
        match item {
            Item::Data(data) => self.tar.append_data(header, path, data).map_err(io)?,
            Item::Link(target) => self.tar.append_link(header, path, target).map_err(io)?,
        }
        // Long names and link targets took extra blocks.
        self.charge((self.written() - before).saturating_sub(estimate))?;
        if self.written() + TAR_END > self.max_bytes {
            return Err(too_large(self.max_bytes));
        }
        Ok(())
    }

    fn charge(&self, bytes: u64) -> Result<()> {
        match &self.options.budget {
            Some(budget) if bytes > 0 && !budget.take(bytes) => Err(Error::Busy(
                "the account's build contexts and source fills in flight are at their bound; this one waits \
                 for them"
                    .into(),
            )),
            _ => Ok(()),
        }
    }
}

/// What `parts` (a clean relative path, split) names at `commit`: walked
/// one folder at a time so that a link on the way is reported, not
/// followed; a folder comes as [`archive`] makes it, a file whole (bounded
/// by `max_bytes` before it is loaded), the folder's walk bounded by
/// `walk`.
pub(crate) fn entry(
    repo: &Repository,
    commit: Oid,
    parts: &[&str],
    max_bytes: u64,
    walk: &mut Walk,
) -> Result<TreeEntry> {
    let mut tree = tree_of(repo, commit)?;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let Some((mode, id)) = tree.get_name(part).map(|found| (found.filemode(), found.id())) else {
            return Ok(TreeEntry::Missing);
        };
        match mode {
            MODE_LINK => return Ok(TreeEntry::Link(parts[..=i].join("/"))),
            MODE_DIR if last => return archive(repo, commit, parts, max_bytes, walk).map(TreeEntry::Directory),
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
    archive(repo, commit, parts, max_bytes, walk).map(TreeEntry::Directory)
}
