//! Mounted files on the host: written into the Playground's files volume
//! (see `play_core::desired` `files`), then bind-mounted into containers.
//!
//! Writing goes through the engine only (no shell on the host): a helper
//! container is *created, never started* from the service's own image (it
//! is on the host by then) with the files volume mounted, the files are
//! uploaded into it as a tar archive, and the helper is removed. Writing
//! again is harmless (same path, same content), so every container creation
//! writes its files first and nothing has to remember what was written.

use std::collections::{BTreeMap, HashMap};

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountTypeEnum};
use bollard::query_parameters::{CreateContainerOptions, RemoveContainerOptions, UploadToContainerOptions};
use play_core::desired::{Desired, FileMountSpec, ServiceSpec, files_volume};

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
    write(docker, &volume, &service.container.image, labels, archive).await?;
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
) -> Result<()> {
    let body = ContainerCreateBody {
        image: Some(image.to_owned()),
        // Never started: any command makes the create valid.
        entrypoint: Some(vec!["/play-files-helper".to_owned()]),
        labels: Some(labels),
        host_config: Some(HostConfig { binds: Some(vec![format!("{volume}:{HELPER_DIR}")]), ..Default::default() }),
        ..Default::default()
    };
    let helper = docker
        .create_container(None::<CreateContainerOptions>, body)
        .await
        .map_err(|e| Error::docker("create the mounted-files helper", e))?;
    let options = UploadToContainerOptions { path: HELPER_DIR.to_owned(), ..Default::default() };
    let uploaded = docker.upload_to_container(&helper.id, Some(options), bollard::body_full(archive.into())).await;
    let removed =
        docker.remove_container(&helper.id, Some(RemoveContainerOptions { force: true, ..Default::default() })).await;
    uploaded.map_err(|e| Error::docker("upload mounted files", e))?;
    removed.map_err(|e| Error::docker("remove the mounted-files helper", e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

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
}
