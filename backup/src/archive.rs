//! The archive's bytes: a tar stream in zstd, each file's SHA-256 taken as
//! it is written or read.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Component, Path};

use sha2::{Digest, Sha256};

use crate::manifest::{self, FileSum, Manifest};
use crate::{Error, Result};

/// zstd's level: its default, fast enough to keep up with a disk.
const LEVEL: i32 = 3;

/// Writes an archive: files, then the manifest.
pub struct Writer<W: Write> {
    tar: tar::Builder<zstd::Encoder<'static, W>>,
    files: BTreeMap<String, FileSum>,
}

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("files", &self.files.len()).finish_non_exhaustive()
    }
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Result<Self> {
        let mut encoder = zstd::Encoder::new(out, LEVEL).map_err(Error::io("start compressing"))?;
        encoder.include_checksum(true).map_err(Error::io("start compressing"))?;
        Ok(Writer { tar: tar::Builder::new(encoder), files: BTreeMap::new() })
    }

    /// Adds the file at `path` as `name`, reading it once.
    pub fn add_file(&mut self, name: &str, path: &Path) -> Result<()> {
        let file = File::open(path).map_err(Error::io(format!("open {}", path.display())))?;
        // The size of the file opened: a file replaced by a rename meanwhile
        // (a ref) is read as it was when opened.
        let bytes = file.metadata().map_err(Error::io(format!("stat {}", path.display())))?.len();
        let mut reader = Hashing { inner: file.take(bytes), hash: Sha256::new(), read: 0 };
        self.append(name, bytes, &mut reader)?;
        if reader.read != bytes {
            return Err(Error::Damaged(format!("{} changed size while it was read", path.display())));
        }
        self.files.insert(name.to_owned(), FileSum { bytes, sha256: hex::encode(reader.hash.finalize()) });
        Ok(())
    }

    fn append(&mut self, name: &str, bytes: u64, reader: &mut impl Read) -> Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes);
        header.set_mode(0o600);
        header.set_entry_type(tar::EntryType::Regular);
        self.tar.append_data(&mut header, name, reader).map_err(Error::io(format!("write {name} to the archive")))
    }

    /// Writes `manifest` (with the files written) as the last entry and
    /// ends the stream: the output, flushed.
    pub fn finish(mut self, mut manifest: Manifest) -> Result<(W, Manifest)> {
        manifest.files = std::mem::take(&mut self.files);
        let json = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| Error::Damaged(format!("the manifest does not serialize: {e}")))?;
        self.append(manifest::NAME, json.len() as u64, &mut json.as_slice())?;
        let encoder = self.tar.into_inner().map_err(Error::io("end the archive"))?;
        let mut out = encoder.finish().map_err(Error::io("end the compressed stream"))?;
        out.flush().map_err(Error::io("flush the archive"))?;
        Ok((out, manifest))
    }
}

/// Reads a whole archive into `dir`: each file's checksum against the
/// manifest, and no file the manifest does not list, none missing. Entries
/// are regular files with relative paths that stay inside `dir`.
pub fn extract(input: impl Read, dir: &Path) -> Result<Manifest> {
    let decoder = zstd::Decoder::new(input).map_err(|e| Error::Damaged(format!("not a zstd stream: {e}")))?;
    let mut tar = tar::Archive::new(decoder);
    let mut seen: BTreeMap<String, FileSum> = BTreeMap::new();
    let mut manifest: Option<Manifest> = None;
    let entries = tar.entries().map_err(|e| Error::Damaged(format!("not a tar stream: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| Error::Damaged(format!("an entry does not read: {e}")))?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(Error::Damaged("an entry is not a regular file".into()));
        }
        let name = entry.path().map_err(|e| Error::Damaged(format!("an entry's name does not read: {e}")))?;
        let name = checked_name(&name)?;
        if name == manifest::NAME {
            let mut json = Vec::new();
            entry.read_to_end(&mut json).map_err(|e| Error::Damaged(format!("the manifest does not read: {e}")))?;
            manifest = Some(
                serde_json::from_slice(&json)
                    .map_err(|e| Error::Damaged(format!("the manifest does not parse: {e}")))?,
            );
            continue;
        }
        let path = dir.join(&name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(Error::io(format!("create {}", parent.display())))?;
        }
        let mut out = File::create(&path).map_err(Error::io(format!("create {}", path.display())))?;
        let mut reader = Hashing { inner: &mut entry, hash: Sha256::new(), read: 0 };
        std::io::copy(&mut reader, &mut out).map_err(|e| Error::Damaged(format!("{name} does not read whole: {e}")))?;
        let sum = FileSum { bytes: reader.read, sha256: hex::encode(reader.hash.finalize()) };
        seen.insert(name, sum);
    }
    let manifest = manifest.ok_or_else(|| Error::Damaged(format!("it holds no {}", manifest::NAME)))?;
    for (name, sum) in &manifest.files {
        match seen.get(name) {
            None => return Err(Error::Damaged(format!("{name} is listed in the manifest but missing"))),
            Some(found) if found != sum => {
                return Err(Error::Damaged(format!(
                    "{name} does not match its checksum (SHA-256 {} of {} bytes, the manifest says {} of {})",
                    found.sha256, found.bytes, sum.sha256, sum.bytes
                )));
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = seen.keys().find(|name| !manifest.files.contains_key(*name)) {
        return Err(Error::Damaged(format!("{extra} is not listed in the manifest")));
    }
    Ok(manifest)
}

/// An entry's name as a relative path of plain components.
fn checked_name(name: &Path) -> Result<String> {
    let plain = name.components().all(|c| matches!(c, Component::Normal(_)));
    match name.to_str() {
        Some(text) if plain && !text.is_empty() => Ok(text.to_owned()),
        _ => Err(Error::Damaged(format!("the entry {} names a path outside the archive", name.display()))),
    }
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
    read: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}
