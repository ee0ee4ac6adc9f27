//! `PUT` and `GET /containers/{id}/archive` for paths inside a mounted
//! named volume: what play writes through its volume helper (mounted files,
//! `reconcilers/src/playground/files.rs`) is kept in the volume
//! and read back as the engine would archive it, so play's check of what
//! it wrote passes or fails for real.
//!
//! Invariants:
//! - only paths under a named volume's mount point hold files: an upload
//!   elsewhere (the container's own filesystem, which is not simulated) is
//!   accepted and dropped, and a download there is 404;
//! - entries are kept as the archive gave them (links stay links, never
//!   followed), keyed by their path relative to the volume's root, with
//!   the parent directories extraction makes;
//! - a download of `dir` names its entries `dir`, `dir/...` (the basename of
//!   the requested path first), as the engine's archives do.

use std::collections::BTreeMap;

use super::container::Container;
pub use super::volumes::Entry;
use super::{SimEngine, State};
use crate::{Error, Result};

/// The volume mounted at the longest target that holds `path`, and the
/// path relative to that volume's root (`""` for the root).
fn resolve(container: &Container, path: &str) -> Option<(String, String)> {
    let path = format!("/{}", path.trim_matches('/'));
    container
        .volumes
        .iter()
        .filter_map(|m| {
            let target = format!("/{}", m.target.trim_matches('/'));
            let rest = if path == target { Some("") } else { path.strip_prefix(&format!("{target}/")) }?;
            Some((target.len(), m.name.clone(), rest.trim_matches('/').to_owned()))
        })
        .max_by_key(|(len, ..)| *len)
        .map(|(_, name, rel)| (name, rel))
}

fn join(base: &str, rest: &str) -> String {
    match (base.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_owned(),
        (_, true) => base.to_owned(),
        _ => format!("{base}/{rest}"),
    }
}

/// The entries of a tar archive, by path; 400 when it does not read.
fn unpack(archive: &[u8]) -> Result<Vec<(String, Entry)>> {
    let bad = |e: std::io::Error| Error::BadRequest(format!("unreadable archive: {e}"));
    let mut reader = tar::Archive::new(archive);
    let mut entries = Vec::new();
    for entry in reader.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let path = entry.path().map_err(bad)?.display().to_string();
        let path = path.trim_start_matches("./").trim_matches('/').to_owned();
        if path.split('/').any(|part| part == "..") {
            return Err(Error::BadRequest(format!("archive entry `{path}` leaves its directory")));
        }
        let kind = entry.header().entry_type();
        let value = if kind.is_dir() {
            Entry::Dir
        } else if kind.is_symlink() {
            let target = entry.link_name().map_err(bad)?.map(|l| l.display().to_string()).unwrap_or_default();
            Entry::Link(target)
        } else {
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut data).map_err(bad)?;
            Entry::File(data)
        };
        if !path.is_empty() {
            entries.push((path, value));
        }
    }
    Ok(entries)
}

/// A tar archive of `entries`, named as given.
fn pack(entries: &[(String, &Entry)]) -> Result<Vec<u8>> {
    let bad = |e: std::io::Error| Error::BadRequest(format!("cannot archive: {e}"));
    let mut builder = tar::Builder::new(Vec::new());
    for (path, entry) in entries {
        let mut header = tar::Header::new_gnu();
        match entry {
            Entry::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, format!("{path}/"), std::io::empty()).map_err(bad)?;
            }
            Entry::File(data) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o644);
                header.set_size(data.len() as u64);
                builder.append_data(&mut header, path, data.as_slice()).map_err(bad)?;
            }
            Entry::Link(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                builder.append_link(&mut header, path, target).map_err(bad)?;
            }
        }
    }
    builder.into_inner().map_err(bad)
}

impl State {
    fn container_for_archive(&self, reference: &str) -> Result<&Container> {
        let id = self.container_id(reference)?;
        self.containers.get(&id).ok_or_else(|| Error::NotFound(format!("No such container: {reference}")))
    }
}

impl SimEngine {
    /// `PUT /containers/{id}/archive?path=`: extracts `archive` at `path`.
    pub fn put_archive(&self, reference: &str, path: &str, archive: &[u8]) -> Result<()> {
        let entries = unpack(archive)?;
        let mut state = self.lock();
        let Some((volume, base)) = resolve(state.container_for_archive(reference)?, path) else { return Ok(()) };
        let Some(vol) = state.volumes.get_mut(&volume) else { return Ok(()) };
        for (rel, entry) in entries {
            let path = join(&base, &rel);
            // Extraction makes the parents an archive does not list.
            let mut parent = path.as_str();
            while let Some((up, _)) = parent.rsplit_once('/') {
                vol.files.entry(up.to_owned()).or_insert(Entry::Dir);
                parent = up;
            }
            vol.files.insert(path, entry);
        }
        Ok(())
    }

    /// `GET /containers/{id}/archive?path=`: the archive of `path`; 404
    /// when nothing is there.
    pub fn get_archive(&self, reference: &str, path: &str) -> Result<Vec<u8>> {
        let state = self.lock();
        let container = state.container_for_archive(reference)?;
        let missing = || Error::NotFound(format!("Could not find the file {path} in container {reference}"));
        let (volume, rel) = resolve(container, path).ok_or_else(missing)?;
        let files: &BTreeMap<String, Entry> = &state.volumes.get(&volume).ok_or_else(missing)?.files;
        let root = Entry::Dir;
        let top = if rel.is_empty() { Some(&root) } else { files.get(&rel) };
        let top = top.ok_or_else(missing)?;
        let name = path.trim_matches('/').rsplit('/').next().unwrap_or_default().to_owned();
        let mut entries = vec![(name.clone(), top)];
        if matches!(top, Entry::Dir) {
            let prefix = if rel.is_empty() { String::new() } else { format!("{rel}/") };
            for (key, entry) in files.iter().filter(|(k, _)| k.starts_with(&prefix) && **k != rel) {
                entries.push((join(&name, &key[prefix.len()..]), entry));
            }
        }
        pack(&entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_reads_back_as_it_was_written_links_included() {
        let written = pack(&[
            ("d".to_owned(), &Entry::Dir),
            ("d/f".to_owned(), &Entry::File(b"hello".to_vec())),
            ("d/l".to_owned(), &Entry::Link("/etc/passwd".to_owned())),
        ])
        .unwrap();
        let read = unpack(&written).unwrap();
        assert_eq!(read[0], ("d".to_owned(), Entry::Dir));
        assert_eq!(read[1], ("d/f".to_owned(), Entry::File(b"hello".to_vec())));
        assert_eq!(read[2], ("d/l".to_owned(), Entry::Link("/etc/passwd".to_owned())));
    }

    #[test]
    fn paths_resolve_to_the_longest_mount_that_holds_them() {
        let c = Container {
            volumes: vec![
                super::super::VolumeMount { name: "outer".into(), target: "/data".into() },
                super::super::VolumeMount { name: "inner".into(), target: "/data/in".into() },
            ],
            ..test_container()
        };
        assert_eq!(resolve(&c, "/data/in/x/y"), Some(("inner".into(), "x/y".into())));
        assert_eq!(resolve(&c, "/data/x"), Some(("outer".into(), "x".into())));
        assert_eq!(resolve(&c, "/data"), Some(("outer".into(), String::new())));
        assert_eq!(resolve(&c, "/database"), None);
    }

    fn test_container() -> Container {
        Container {
            id: "c".into(),
            name: "c".into(),
            image: "i".into(),
            config: Default::default(),
            host_config: Default::default(),
            networks: Default::default(),
            volumes: Vec::new(),
            state: super::super::RunState::Created,
            created: 0,
            started_at: String::new(),
            finished_at: String::new(),
            pid: 0,
        }
    }
}
