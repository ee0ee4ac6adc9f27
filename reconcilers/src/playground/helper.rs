//! The never-started helper container through which play writes into (and
//! reads single paths back from) a volume of its own, with no shell on the
//! host: used for mounted files ([`super::files`]) and source volumes
//! ([`super::source`]).
//!
//! Invariants:
//! - the helper is *created, never started*: no process of the (possibly
//!   tenant-built) image it is made from ever runs, and it has no network;
//! - it mounts the volume with `nocopy`, so the image's content at the
//!   mount point is never copied into the volume;
//! - it carries the Playground's labels and a role, never a service label:
//!   one left behind by a crash is a container of no service, which the
//!   next plan removes (and the sweep and destroy find);
//! - [`Helper::remove`] removes it with its anonymous volumes (an image
//!   that declares a `VOLUME` gives it one).

use std::collections::HashMap;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountTypeEnum, MountVolumeOptions};
use bollard::query_parameters::{
    CreateContainerOptions, DownloadFromContainerOptions, RemoveContainerOptions, UploadToContainerOptions,
};
use futures::TryStreamExt as _;

use super::spec::{LABEL_INSTALLATION, LABEL_PLAYGROUND};
use crate::docker::status_of;
use crate::{Error, Result};

/// The label naming what a helper is for.
pub const LABEL_ROLE: &str = "dev.play.role";

/// The labels of a helper of `playground_id` for `role`.
pub fn labels(installation: &str, playground_id: i64, role: &str) -> HashMap<String, String> {
    HashMap::from([
        (LABEL_PLAYGROUND.to_owned(), playground_id.to_string()),
        (LABEL_INSTALLATION.to_owned(), installation.to_owned()),
        (LABEL_ROLE.to_owned(), role.to_owned()),
    ])
}

/// A created helper; call [`Helper::remove`] whatever happened with it.
#[derive(Debug)]
pub struct Helper<'a> {
    docker: &'a Docker,
    id: String,
}

impl<'a> Helper<'a> {
    /// Creates a helper from `image` (which must be on the host) with
    /// `volume` mounted, `nocopy`, at `dir`; `what` names it in logs.
    pub async fn create(
        docker: &'a Docker,
        what: &'static str,
        image: &str,
        volume: &str,
        dir: &str,
        labels: HashMap<String, String>,
    ) -> Result<Helper<'a>> {
        let body = ContainerCreateBody {
            image: Some(image.to_owned()),
            // Never started: any command makes the create valid.
            entrypoint: Some(vec!["/play-helper".to_owned()]),
            labels: Some(labels),
            network_disabled: Some(true),
            host_config: Some(HostConfig {
                mounts: Some(vec![Mount {
                    typ: Some(MountTypeEnum::VOLUME),
                    source: Some(volume.to_owned()),
                    target: Some(dir.to_owned()),
                    volume_options: Some(MountVolumeOptions { no_copy: Some(true), ..Default::default() }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let created = docker
            .create_container(None::<CreateContainerOptions>, body)
            .await
            .map_err(|e| Error::docker("create a volume helper", e))?;
        tracing::debug!(helper = %created.id, what, "volume helper created");
        Ok(Helper { docker, id: created.id })
    }

    /// Extracts the tar `archive` at `dir` (links stay links: the engine
    /// writes what the archive holds).
    pub async fn upload(&self, dir: &str, archive: Vec<u8>) -> Result<()> {
        let options = UploadToContainerOptions { path: dir.to_owned(), ..Default::default() };
        self.docker
            .upload_to_container(&self.id, Some(options), bollard::body_full(archive.into()))
            .await
            .map_err(|e| Error::docker("upload into a volume helper", e))
    }

    /// Extracts the spooled archive into `dir`, streamed from disk.
    pub async fn upload_spool(&self, dir: &str, spool: &super::context::Spool) -> Result<()> {
        let chunks = spool.chunks().await.map_err(|e| Error::Files(format!("reading a spooled archive: {e}")))?;
        let options = UploadToContainerOptions { path: dir.to_owned(), ..Default::default() };
        self.docker
            .upload_to_container(&self.id, Some(options), bollard::body_try_stream(chunks))
            .await
            .map_err(|e| Error::docker("upload into a volume helper", e))
    }

    /// The archive of `path` as the engine makes it (from `lstat`: a link
    /// is an entry, never followed); `None` when the path does not exist.
    pub async fn download(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let options = DownloadFromContainerOptions { path: path.to_owned() };
        let read: std::result::Result<Vec<u8>, _> = self
            .docker
            .download_from_container(&self.id, Some(options))
            .map_ok(|chunk| chunk.to_vec())
            .try_concat()
            .await;
        match read {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if status_of(&e) == Some(404) => Ok(None),
            Err(e) => Err(Error::docker("read back from a volume helper", e)),
        }
    }

    /// Removes the helper and its anonymous volumes.
    pub async fn remove(self) -> Result<()> {
        let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
        self.docker
            .remove_container(&self.id, Some(options))
            .await
            .map_err(|e| Error::docker("remove a volume helper", e))
    }
}

/// A tar archive of `(path, kind, data, link target)` entries, for tests
/// of what is uploaded and read back.
#[cfg(test)]
pub(super) fn tar_of(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, kind, data, link) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(*kind);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        match link {
            Some(link) => builder.append_link(&mut header, path, link).unwrap(),
            None => builder.append_data(&mut header, path, *data).unwrap(),
        }
    }
    builder.into_inner().unwrap()
}
