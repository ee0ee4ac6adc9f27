//! `svc/source_mount`: a built service's branch files, at its pinned
//! commit, in a volume the Playground owns, mounted at the label's path.
//!
//! Invariants:
//! - the volume's name carries the commit
//!   (`<project>__src-<service>-<first 12 hex of the commit>`), so a new
//!   pin names another volume: the container's mounts, hence its config
//!   hash, change and the service is recreated; the old volume is no
//!   longer desired and the plan removes it;
//! - its key starts with `_` ([`SOURCE_KEY_PREFIX`]), which no Compose
//!   volume key can, so a tenant's Compose can neither name nor mount it
//!   and the name of one of its volumes never collides with it;
//! - it is a cache of the repository, always safe to make again: it is
//!   never kept by `persist_volumes`;
//! - only a service with a pinned build gets one (the commit comes from
//!   the pin); a service without the label, or not built yet, has none.
//!
//! What fills it (and how a complete fill is recognised) is the
//! reconciler's (`play_reconcilers::playground::source`); this module is
//! pure.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{MountSpec, VolumeSpec};

use crate::build::BuildSpec;
use crate::compose::model::Service;
use crate::compose::svc::labels::{LabelKind, check_label_value};

/// The label naming the container path of a service's source files.
pub const SOURCE_MOUNT_LABEL: &str = "svc/source_mount";
/// How every source volume's key starts (see the module invariants).
pub const SOURCE_KEY_PREFIX: &str = "_src-";

/// The branch files one service mounts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceMount {
    pub playzone_id: i64,
    pub branch: String,
    /// Full hex id of the pinned commit.
    pub commit: String,
    /// The volume's key: `_src-<service>-<commit, 12 hex>`.
    pub key: String,
    /// The volume's host name: `<project>_<key>`.
    pub volume: String,
    /// The path inside the container.
    pub mount_path: String,
}

impl SourceMount {
    /// The container's mount of the volume (read-write: what the service
    /// does in it is its own; play reads back only the fill's marker).
    pub fn mount(&self) -> MountSpec {
        MountSpec {
            kind: "volume",
            source: Some(self.volume.clone()),
            target: self.mount_path.clone(),
            read_only: false,
        }
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
        volume: format!("{project}_{key}"),
        key,
        mount_path: path.trim_end_matches('/').to_owned(),
    }))
}

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
