//! Repository files in volumes the Playground owns, at a service's pinned
//! commit: `svc/source_mount` (the whole repository, mounted at the
//! label's path) and the relative sources of the Compose file that the
//! repository provides (`./nginx.conf:/etc/nginx/nginx.conf`,
//! `./backend:/code`, `secrets.db.file: ./db/password.txt`).
//!
//! Invariants:
//! - a volume's name carries the commit (`<project>__src-<service>-<first
//!   12 hex of the commit>` for a source mount, `<project>__src-_<16 hex of
//!   the SHA-256 of commit and path>` for a relative source), so a new pin
//!   names another volume: the container's mounts, hence its config hash,
//!   change and the service is recreated; the old volume is no longer
//!   desired and the plan removes it;
//! - its key starts with `_` ([`SOURCE_KEY_PREFIX`]), which no Compose
//!   volume key can, so a tenant's Compose can neither name nor mount it
//!   and the name of one of its volumes never collides with it;
//! - it is a cache of the repository, always safe to make again: it is
//!   never kept by `persist_volumes`;
//! - a relative source's volume holds the entry at its path as
//!   [`CONTENT`] (a file or a folder) beside the fill's marker, and the
//!   container gets a bind of exactly `<volume>/content`, never of a path
//!   below it: the volume's root is only ever mounted by play's helper, so
//!   nothing a tenant writes can turn the bound path into a link the
//!   engine would follow on the host (a folder bound read-write may gain
//!   links *inside* it; those resolve in the container, and no other bind
//!   goes through them, since every relative source has its own copy);
//! - only a pinned build provides a commit: a service without one (and a
//!   Playground whose built services are not pinned yet) gets no source.
//!
//! What fills a volume (and how a complete fill is recognised) is the
//! reconciler's (`play_reconcilers::playground::source`); this module is
//! pure.

use std::collections::BTreeMap;

use serde::Serialize;

use sha2::{Digest as _, Sha256};

use super::{MountSpec, VolumeSpec};

use crate::build::{BuildSpec, Pin};
use crate::compose::model::{ComposeFile, Service};
use crate::compose::project_files::Expect;
use crate::compose::svc::labels::{LabelKind, check_label_value};

/// The label naming the container path of a service's source files.
pub const SOURCE_MOUNT_LABEL: &str = "svc/source_mount";
/// How every source volume's key starts (see the module invariants).
pub const SOURCE_KEY_PREFIX: &str = "_src-";
/// The name of a relative source's entry inside its volume.
pub const CONTENT: &str = "content";

/// How a source volume holds its files and reaches the container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceLayout {
    /// `svc/source_mount`: the repository's root is the volume's root,
    /// and the volume is mounted at `mount_path`.
    Root,
    /// A relative source: the entry at `path` is [`CONTENT`] in the
    /// volume, bound from the host at `mount_path`. A bind source may be
    /// missing from the repository (an empty folder, as Docker Compose
    /// makes one); a secret's or config's file may not.
    Entry { expect: Expect },
}

/// Repository files one service mounts from one volume.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceMount {
    pub playzone_id: i64,
    pub branch: String,
    /// Full hex id of the pinned commit.
    pub commit: String,
    /// The path in the repository, normalised (`""` for its root).
    pub path: String,
    pub layout: SourceLayout,
    /// The volume's key (see the module invariants).
    pub key: String,
    /// The volume's host name: `<project>_<key>`.
    pub volume: String,
    /// The path inside the container.
    pub mount_path: String,
    pub read_only: bool,
}

/// A bind of a relative source's [`CONTENT`]: the reconciler finds the
/// volume's host path when it creates the container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceBind {
    /// The volume's host name.
    pub volume: String,
    pub target: String,
    pub read_only: bool,
}

impl SourceMount {
    /// The container's mount of a [`SourceLayout::Root`] volume
    /// (read-write: what the service does in it is its own; play reads
    /// back only the fill's marker); `None` for an entry, which is a
    /// [`SourceBind`].
    pub fn mount(&self) -> Option<MountSpec> {
        (self.layout == SourceLayout::Root).then(|| MountSpec {
            kind: "volume",
            source: Some(self.volume.clone()),
            target: self.mount_path.clone(),
            read_only: self.read_only,
        })
    }

    /// The bind of an entry's [`CONTENT`]; `None` for a root volume.
    pub fn bind(&self) -> Option<SourceBind> {
        matches!(self.layout, SourceLayout::Entry { .. }).then(|| SourceBind {
            volume: self.volume.clone(),
            target: self.mount_path.clone(),
            read_only: self.read_only,
        })
    }

    /// The volume play creates: never in the Compose file's `volumes`
    /// (its key cannot be a Compose key), one per service and commit.
    pub fn volume(&self) -> VolumeSpec {
        VolumeSpec { name: self.volume.clone(), key: self.key.clone(), driver: None, driver_opts: BTreeMap::new() }
    }
}

/// The volume key of `service`'s source at `commit`.
pub fn source_key(service: &str, commit: &str) -> String {
    let short: String = commit.chars().take(12).collect();
    format!("{SOURCE_KEY_PREFIX}{service}-{short}")
}

/// The volume key of the repository entry at `path` (normalised) at
/// `commit`: the same for every service that uses it.
pub fn entry_key(commit: &str, path: &str) -> String {
    let digest = Sha256::new().chain_update(commit).chain_update([0]).chain_update(path).finalize();
    let short: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{SOURCE_KEY_PREFIX}_{short}")
}

/// A repository at a commit: where relative paths are read.
#[derive(Clone, Copy, Debug)]
pub(super) struct RepoAt<'a> {
    playzone_id: i64,
    branch: &'a str,
    commit: &'a str,
}

impl<'a> From<&'a BuildSpec> for RepoAt<'a> {
    fn from(b: &'a BuildSpec) -> Self {
        RepoAt { playzone_id: b.playzone_id, branch: &b.branch, commit: &b.commit }
    }
}

impl<'a> From<&'a Pin> for RepoAt<'a> {
    fn from(p: &'a Pin) -> Self {
        RepoAt { playzone_id: p.playzone_id, branch: &p.branch, commit: &p.commit }
    }
}

/// The source of a relative `path` (normalised) of a Compose entry, from
/// `repo`, at `target`.
pub(super) fn entry_for(
    project: &str,
    repo: RepoAt<'_>,
    path: &str,
    expect: Expect,
    target: &str,
    read_only: bool,
) -> SourceMount {
    let key = entry_key(repo.commit, path);
    SourceMount {
        playzone_id: repo.playzone_id,
        branch: repo.branch.to_owned(),
        commit: repo.commit.to_owned(),
        path: path.to_owned(),
        layout: SourceLayout::Entry { expect },
        volume: format!("{project}_{key}"),
        key,
        mount_path: target.to_owned(),
        read_only,
    }
}

/// The repository that provides the relative sources of services that are
/// not built themselves: the first built service's, in the Compose file's
/// order (the Compose file sits at the root of the repository its
/// services build from), else the Playspec's own Playzone at its pin
/// ([`crate::build::PROJECT_PIN`]). `None` without either.
pub(super) fn project_repo<'b>(
    file: &ComposeFile,
    builds: Option<&'b BTreeMap<String, BuildSpec>>,
    project: Option<&'b Pin>,
) -> Option<RepoAt<'b>> {
    let built = builds.and_then(|builds| file.services.keys().find_map(|name| builds.get(name)));
    built.map(RepoAt::from).or(project.map(RepoAt::from))
}

/// Whether a volume key names a source volume.
pub fn is_source_key(key: &str) -> bool {
    key.starts_with(SOURCE_KEY_PREFIX)
}

/// The source mount of `service` (named `name`) in `project`: `None`
/// without the label or without a pinned build. A label that is not an
/// absolute container path is an error (validation refuses it earlier; a
/// value interpolated from the Playground's variables is checked here).
pub(super) fn source_for(
    project: &str,
    name: &str,
    service: &Service,
    built: Option<&BuildSpec>,
) -> Result<Option<SourceMount>, String> {
    let Some(path) = service.labels.get(SOURCE_MOUNT_LABEL).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    check_label_value(LabelKind::MountPath, path)
        .map_err(|why| format!("service `{name}`: label `{SOURCE_MOUNT_LABEL}` {why}"))?;
    let Some(built) = built else { return Ok(None) };
    let key = source_key(name, &built.commit);
    Ok(Some(SourceMount {
        playzone_id: built.playzone_id,
        branch: built.branch.clone(),
        commit: built.commit.clone(),
        path: String::new(),
        layout: SourceLayout::Root,
        volume: format!("{project}_{key}"),
        key,
        mount_path: path.trim_end_matches('/').to_owned(),
        read_only: false,
    }))
}

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
