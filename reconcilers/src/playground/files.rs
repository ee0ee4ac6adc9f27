//! Mounted files on the host: written into the Playground's files volume
//! (see `play_model::desired` `files`), then bind-mounted into containers.
//!
//! Writing goes through the engine only (no shell on the host): a
//! [`Helper`] container is *created, never started* from the service's own
//! image (it is on the host by then) with the files volume mounted, the
//! files are uploaded into it as a tar archive, and the helper is removed. Writing
//! again is harmless (same path, same content), so every container creation
//! writes its files first and nothing has to remember what was written.
//!
//! # Why a host-path bind from this volume is safe
//!
//! Each file reaches its container as a bind of a *host path* inside the
//! volume, and the engine follows symbolic links in a bind's source. So
//! nothing but play may ever write into the files volume, and play checks
//! what it binds (see `docs/security.md`):
//! - no tenant container mounts the volume: its name is reserved (Compose
//!   keys cannot start with `_`, names cannot start with `play-`), so the
//!   only container that ever mounts it is the helper, which never runs;
//! - the helper mounts it with `nocopy`, so the (tenant-built) image's
//!   content at the mount point is never copied into the volume;
//! - after the upload, each file's directory and the file itself are read
//!   back without following links (an archive of the path, which the engine
//!   makes from `lstat`): anything but a directory holding one regular file
//!   of the expected size is refused before a bind is made.
//!
//! Owns writing mounted files into the files volume and the binds that
//! carry them; [`super::apply`] calls it before creating a container. It
//! must not create or remove tenant containers, nor decide which files a
//! service mounts (that is the desired state's, `play_model::desired`).

use std::collections::{BTreeMap, HashMap};

use bollard::Docker;
use bollard::models::{Mount, MountTypeEnum};
use play_model::desired::{Desired, FileMountSpec, ServiceSpec, files_volume};

use super::helper::Helper;

use crate::{Error, Result};

/// Where the helper mounts the files volume.
const HELPER_DIR: &str = "/play-files";

/// Writes `service`'s files into the files volume and returns the bind
/// mounts that give them to its container. `contents` maps file ids to
/// bytes; a file missing there is an error (the Playspec changed under the
/// pass: the next pass sees the new desired state).
pub async fn mounts(
    docker: &Docker,
    desired: &Desired,
    service: &ServiceSpec,
    contents: &BTreeMap<i64, Vec<u8>>,
    labels: HashMap<String, String>,
) -> Result<Vec<Mount>> {
    let files = &service.container.files;
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let volume = files_volume(&desired.project);
    let mountpoint = docker
        .inspect_volume(&volume)
        .await
        .map_err(|e| Error::docker("inspect the mounted-files volume", e))?
        .mountpoint;
    let archive = archive(files, contents)?;
    let sizes = files.iter().map(|f| (f.file_id, contents.get(&f.file_id).map_or(0, Vec::len))).collect();
    write(docker, &volume, &service.container.image, labels, archive, files, &sizes).await?;
    Ok(files
        .iter()
        .map(|f| Mount {
            typ: Some(MountTypeEnum::BIND),
            source: Some(format!("{}/{}", mountpoint.trim_end_matches('/'), f.rel_path)),
            target: Some(f.target.clone()),
            read_only: Some(f.read_only),
            ..Default::default()
        })
        .collect())
}

/// A tar archive holding each file at its `rel_path` (mode 0644: a
/// read-only file is read-only by its mount).
fn archive(files: &[FileMountSpec], contents: &BTreeMap<i64, Vec<u8>>) -> Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    for file in files {
        let bytes = contents
            .get(&file.file_id)
            .ok_or_else(|| Error::Files(format!("mounted file {} changed during the pass", file.file_id)))?;
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, &file.rel_path, bytes.as_slice())
            .map_err(|e| Error::Files(format!("cannot pack mounted file {}: {e}", file.file_id)))?;
    }
    builder.into_inner().map_err(|e| Error::Files(format!("cannot pack mounted files: {e}")))
}

async fn write(
    docker: &Docker,
    volume: &str,
    image: &str,
    labels: HashMap<String, String>,
    archive: Vec<u8>,
    files: &[FileMountSpec],
    sizes: &BTreeMap<i64, usize>,
) -> Result<()> {
    let helper = Helper::create(docker, "mounted-files", image, volume, HELPER_DIR, labels).await?;
    let verified = match helper.upload(HELPER_DIR, archive).await {
        Ok(()) => verify(&helper, files, sizes).await,
        Err(e) => Err(e),
    };
    verified.and(helper.remove().await)
}

/// Reads each file's directory back from the volume without following
/// links and checks it holds exactly the directory and one regular file of
/// the expected size: the bind that follows would otherwise follow a link
/// on the host.
async fn verify(helper: &Helper<'_>, files: &[FileMountSpec], sizes: &BTreeMap<i64, usize>) -> Result<()> {
    for file in files {
        let Some((dir, name)) = file.rel_path.split_once('/') else {
            return Err(Error::Files(format!("mounted file {} has no directory in the files volume", file.file_id)));
        };
        let bytes = helper.download(&format!("{HELPER_DIR}/{dir}")).await?.ok_or_else(|| {
            Error::Files(format!("mounted file {} is missing from the files volume after its upload", file.file_id))
        })?;
        let size = sizes.get(&file.file_id).copied().unwrap_or_default() as u64;
        check_entries(&bytes, dir, name, size).map_err(|reason| {
            Error::Files(format!("mounted file {} is not safe to bind ({reason}); refusing to mount it", file.file_id))
        })?;
    }
    Ok(())
}

/// The archive of `dir` holds the directory itself and `dir/name`, a
/// regular file of `expected` bytes, and nothing else.
fn check_entries(archive: &[u8], dir: &str, name: &str, expected: u64) -> std::result::Result<(), String> {
    let mut reader = tar::Archive::new(archive);
    let entries = reader.entries().map_err(|e| format!("unreadable archive: {e}"))?;
    let (mut saw_dir, mut saw_file) = (false, false);
    let file_path = format!("{dir}/{name}");
    for entry in entries {
        let entry = entry.map_err(|e| format!("unreadable archive: {e}"))?;
        let path = entry.path().map_err(|e| format!("unreadable path: {e}"))?.display().to_string();
        let path = path.trim_end_matches('/');
        let kind = entry.header().entry_type();
        if path == dir && kind.is_dir() {
            saw_dir = true;
        } else if path == file_path && kind == tar::EntryType::Regular {
            saw_file = entry.size() == expected;
        } else {
            return Err(format!("unexpected {kind:?} entry `{path}`"));
        }
    }
    match (saw_dir, saw_file) {
        (true, true) => Ok(()),
        (false, _) => Err(format!("`{dir}` is not a directory")),
        (true, false) => Err(format!("`{file_path}` is not a regular file of {expected} bytes")),
    }
}

#[cfg(test)]
mod tests {

    use super::super::helper::tar_of;
    use super::*;

    #[test]
    fn the_archive_holds_each_file_at_its_path() {
        let files = vec![FileMountSpec {
            file_id: 3,
            rel_path: "3-abcdef012345/file".into(),
            target: "/etc/app.conf".into(),
            read_only: true,
        }];
        let contents = BTreeMap::from([(3, b"key = value\n".to_vec())]);
        let bytes = archive(&files, &contents).unwrap();
        let mut reader = tar::Archive::new(bytes.as_slice());
        let entries: Vec<(String, u64)> = reader
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.path().unwrap().display().to_string(), e.size())
            })
            .collect();
        assert_eq!(entries, [("3-abcdef012345/file".to_owned(), 12)]);
        assert!(archive(&files, &BTreeMap::new()).is_err(), "a missing content is an error, not an empty file");
    }

    #[test]
    fn only_a_directory_with_one_regular_file_may_be_bound() {
        use tar::EntryType::{Directory, Regular, Symlink};
        let good = tar_of(&[("3-abc/", Directory, b"", None), ("3-abc/file", Regular, b"12345", None)]);
        assert_eq!(check_entries(&good, "3-abc", "file", 5), Ok(()));
        assert!(check_entries(&good, "3-abc", "file", 4).is_err(), "a wrong size is refused");
        let linked_dir = tar_of(&[("3-abc", Symlink, b"", Some("/etc"))]);
        assert!(check_entries(&linked_dir, "3-abc", "file", 5).is_err());
        let linked_file =
            tar_of(&[("3-abc/", Directory, b"", None), ("3-abc/file", Symlink, b"", Some("/etc/shadow"))]);
        assert!(check_entries(&linked_file, "3-abc", "file", 0).unwrap_err().contains("Symlink"));
        let extra = tar_of(&[
            ("3-abc/", Directory, b"", None),
            ("3-abc/file", Regular, b"12345", None),
            ("3-abc/other", Regular, b"", None),
        ]);
        assert!(check_entries(&extra, "3-abc", "file", 5).is_err());
    }
}
