//! Source volumes (`svc/source_mount`) on the host: the branch's files at
//! the service's pinned commit, in the volume the desired state names
//! (`play_core::desired` `source`), before the service runs.
//!
//! # Where the files come from
//!
//! The repository's root at the pinned commit, as a tar archive from the
//! `RepositoryGateway` (bounded by [`MAX_CONTEXT_BYTES`]), never a host
//! path: a checkout a tenant container could write is nothing play may
//! read later. Play never reads the volume back (but for its marker) and
//! never follows a link inside it: the engine extracts links as links.
//!
//! # How a complete fill is known
//!
//! Volumes cannot be relabelled, and a volume cannot be filled under a
//! temporary name and renamed, so completeness is a file: the upload is
//! one archive, the repository's entries followed by a last entry
//! [`MARKER`] holding the commit id. The engine extracts an archive in
//! order, so the marker exists only if everything before it was written.
//! A pass checks it with a second never-started [`Helper`] that downloads
//! that one path ([`complete`]); a missing or different marker (a crash
//! mid-upload, a volume the engine made empty for a mount) means: fill
//! again. Filling again is harmless (the same commit's files over the
//! same files). A repository entry at the marker's path is dropped, so a
//! repository cannot forge completeness.
//!
//! The volume is written only through the helper, which mounts it with
//! `nocopy` and never runs (see [`super::helper`]); the service's own
//! container mounts it read-write: what the service does in it is its
//! business, since play reads nothing but the marker and a new commit
//! gets a new volume.

use std::collections::BTreeSet;
use std::io::Read as _;

use bollard::Docker;
use play_core::build::MAX_CONTEXT_BYTES;
use play_core::store::playzones;

use super::build::Builder;
use super::helper::{self, Helper};
use super::plan::Observed;
use super::spec::{Desired, ServiceSpec};
use crate::{Error, Result};

/// The file whose presence, holding the commit id, says a fill completed.
pub const MARKER: &str = ".play-source-complete";
/// Where helpers mount a source volume.
const HELPER_DIR: &str = "/play-source";
const ROLE: &str = "source-helper";

/// Fills `service`'s source volume with its commit's files and, last, the
/// marker. The volume exists (the plan creates it first) and the
/// service's image is on the host (the helper is made from it).
pub async fn fill(docker: &Docker, builder: &Builder<'_>, service: &ServiceSpec) -> Result<()> {
    let source = service
        .source
        .as_ref()
        .ok_or_else(|| Error::InvalidSpec(format!("service `{}` mounts no source", service.name)))?;
    let access = playzones::access(builder.store, builder.secrets, source.playzone_id).await?;
    let tree = builder
        .repositories
        .archive(&access, &source.commit, "", MAX_CONTEXT_BYTES)
        .await
        .map_err(Error::Repository)?;
    let archive = with_marker(&tree, &source.commit).map_err(Error::Files)?;
    let labels = helper::labels(builder.installation, builder.playground_id, ROLE);
    let helper = Helper::create(docker, "source", &service.container.image, &source.volume, HELPER_DIR, labels).await?;
    let uploaded = helper.upload(HELPER_DIR, archive).await;
    uploaded.and(helper.remove().await)?;
    tracing::info!(playground = builder.playground_id, service = %service.name, volume = %source.volume, "source volume filled");
    Ok(())
}

/// The desired source volumes of `desired` whose fill completed. Only a
/// volume that exists and whose service's image is present can be
/// checked (the helper is made from that image); any other is not
/// complete.
pub async fn complete(docker: &Docker, desired: &Desired, observed: &Observed) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    for service in &desired.services {
        let Some(source) = &service.source else { continue };
        if !observed.volumes.contains(&source.volume) || !observed.images.contains(&service.container.image) {
            continue;
        }
        let labels = helper::labels(&desired.installation, desired.playground_id, ROLE);
        let helper =
            Helper::create(docker, "source", &service.container.image, &source.volume, HELPER_DIR, labels).await?;
        let read = helper.download(&format!("{HELPER_DIR}/{MARKER}")).await;
        let removed = helper.remove().await;
        let done = read?.is_some_and(|archive| marks(&archive, &source.commit));
        removed?;
        if done {
            out.insert(source.volume.clone());
        }
    }
    Ok(out)
}

/// `tree` (the repository's archive) with any entry at (or under)
/// [`MARKER`] and any global header dropped and the marker, holding
/// `commit`, appended last. Entries are copied as they are: a link stays
/// a link.
fn with_marker(tree: &[u8], commit: &str) -> std::result::Result<Vec<u8>, String> {
    let err = |e: std::io::Error| format!("cannot repack the repository's files: {e}");
    let mut reader = tar::Archive::new(tree);
    let mut out = tar::Builder::new(Vec::new());
    for entry in reader.entries().map_err(err)? {
        let mut entry = entry.map_err(err)?;
        let path = entry.path().map_err(err)?.into_owned();
        let kind = entry.header().entry_type();
        // The marker's path, and anything under it (a directory there).
        let first = path.components().find(|c| !matches!(c, std::path::Component::CurDir));
        if first.is_some_and(|c| c.as_os_str() == MARKER) {
            continue;
        }
        let mut header = entry.header().clone();
        match kind {
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => continue,
            tar::EntryType::Symlink | tar::EntryType::Link => {
                let target = entry.link_name().map_err(err)?.map(|t| t.into_owned()).unwrap_or_default();
                out.append_link(&mut header, &path, &target).map_err(err)?;
            }
            _ => out.append_data(&mut header, &path, &mut entry).map_err(err)?,
        }
    }
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(commit.len() as u64);
    header.set_mode(0o444);
    out.append_data(&mut header, MARKER, commit.as_bytes()).map_err(err)?;
    out.into_inner().map_err(err)
}

/// Whether the engine's archive of the marker's path holds the marker: one
/// regular file whose content is `commit`.
fn marks(archive: &[u8], commit: &str) -> bool {
    let mut reader = tar::Archive::new(archive);
    let Ok(mut entries) = reader.entries() else { return false };
    let Some(Ok(mut entry)) = entries.next() else { return false };
    if entry.header().entry_type() != tar::EntryType::Regular || entry.size() > 64 {
        return false;
    }
    let mut content = String::new();
    entry.read_to_string(&mut content).is_ok() && content == commit
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

    use super::super::helper::tar_of;
    use super::*;

    fn listing(archive: &[u8]) -> Vec<(String, tar::EntryType, String)> {
        let mut reader = tar::Archive::new(archive);
        reader
            .entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let path = e.path().unwrap().display().to_string();
                let kind = e.header().entry_type();
                let link = e.link_name().unwrap().map(|l| l.display().to_string());
                let mut data = String::new();
                e.read_to_string(&mut data).unwrap();
                (path, kind, link.unwrap_or(data))
            })
            .collect()
    }

    #[test]
    fn the_marker_comes_last_links_stay_links_and_a_forged_marker_is_dropped() {
        use tar::EntryType::{Regular, Symlink};
        let long = format!("deep/{}/file.txt", "d".repeat(120));
        let tree = tar_of(&[
            (MARKER, Regular, b"forged", None),
            ("./.play-source-complete/inside", Regular, b"forged", None),
            ("index.html", Regular, b"<h1>hi</h1>", None),
            ("latest", Symlink, b"", Some("index.html")),
            (&long, Regular, b"x", None),
        ]);
        let out = listing(&with_marker(&tree, "abc123").unwrap());
        assert_eq!(
            out,
            [
                ("index.html".to_owned(), Regular, "<h1>hi</h1>".to_owned()),
                ("latest".to_owned(), Symlink, "index.html".to_owned()),
                (long.clone(), Regular, "x".to_owned()),
                (MARKER.to_owned(), Regular, "abc123".to_owned()),
            ]
        );
    }

    #[test]
    fn only_a_regular_marker_with_the_commit_marks_a_complete_fill() {
        use tar::EntryType::{Regular, Symlink};
        assert!(marks(&tar_of(&[(MARKER, Regular, b"abc123", None)]), "abc123"));
        assert!(!marks(&tar_of(&[(MARKER, Regular, b"abc124", None)]), "abc123"), "another commit's");
        assert!(!marks(&tar_of(&[(MARKER, Symlink, b"", Some("/etc/x"))]), "abc123"));
        assert!(!marks(b"not a tar", "abc123"));
    }
}
