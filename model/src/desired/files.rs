//! Mounted files (a Playspec's uploaded files) as parts of the desired
//! containers.
//!
//! The files of a Playground live in one named volume play creates,
//! `<project>__play_files` (a key Compose cannot declare: Compose volume
//! names start with a letter or digit), each at `<key>/file`, where the key
//! is a digest of the file's content, `mount_path`, project path, target
//! services and how the container sees it ([`Access`]: a `readonly` file, a
//! writable file mounted writable, or a writable file mounted read-only),
//! never of its row id ([`rel_path`]).
//! A service container gets each of its files as a bind mount of that path
//! under the volume's mount point, at the file's `mount_path`, read-only
//! when the file is `readonly`. So:
//! - a file mounts at any path, even one the image lacks, and `readonly` is
//!   enforced by the kernel, not by file modes;
//! - a writable copy is bound only into containers that mount it writable:
//!   a read-only mount of a writable file (`:ro`, a secret, a config) has a
//!   copy of its own that no container can write, so it always shows what
//!   was uploaded (issue #49, item 12);
//! - a changed file has a new path, hence a new config hash: its containers
//!   are replaced, the others are not;
//! - the same file in another Playspec revision (a new row, `play apply`'s
//!   copy) has the same path and leaves the config hash alone, so a
//!   rollout to that revision does not replace its containers;
//! - the volume goes with the Playground like its other volumes (and with a
//!   hard restart unless volumes persist).
//!
//! A file with a project path is also where the Compose file names it: a
//! relative bind source, or a used secret's or config's relative `file:`,
//! that resolves to it ([`crate::compose::project_files`]) becomes the
//! same kind of bind at the Compose target, read-only unless both the
//! Compose entry and the file allow writing (secrets and configs always
//! read-only). These follow the Compose file, not `target_services`. When
//! a file would be bound twice at one target, the Compose entry wins.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::compose::model::ComposeFile;
use crate::compose::project_files::{self, Resolution};
use crate::model::playspec::MountedFile;

/// The volume key of the mounted-files volume.
pub const FILES_VOLUME_KEY: &str = "_play_files";

/// One mounted file of one container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileMountSpec {
    /// The row whose content the reconciler writes. Not serialized, so not
    /// in the config hash: [`rel_path`] says everything a container sees.
    #[serde(skip)]
    pub file_id: i64,
    /// Where the file lives in the files volume ([`rel_path`]).
    pub rel_path: String,
    /// The path inside the container.
    pub target: String,
    pub read_only: bool,
}

impl FileMountSpec {
    /// `file` at `target`, read-only when `read_only` or the file is. The
    /// place follows from the access ([`rel_path`]), never the other way
    /// round, so a read-only mount can never be handed a writable copy.
    fn new(file: &MountedFile, target: String, read_only: bool) -> Self {
        let read_only = read_only || file.readonly;
        FileMountSpec { file_id: file.id, rel_path: rel_path(file, read_only), target, read_only }
    }
}

/// How a container sees a mounted file, as far as the file's place is
/// concerned: each kind has places of its own, so no container that may
/// write a copy shares it with one that reads it as read-only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A `readonly` file: every mount of it is read-only, nothing writes it.
    ReadOnlyFile,
    /// A writable file mounted writable. Its copy is shared by the
    /// services that mount it so, as a Compose bind of one host file is.
    Writable,
    /// A writable file mounted read-only (a `:ro` bind, a secret, a
    /// config): a copy only play writes, so another service's writes to
    /// the file never show here (issue #49, item 12).
    ReadOnlyView,
}

impl Access {
    /// The access of a mount that is `read_only` of a file that is
    /// `readonly` (a read-only file is never mounted writable).
    pub fn of(readonly: bool, read_only: bool) -> Access {
        match (readonly, read_only) {
            (true, _) => Access::ReadOnlyFile,
            (false, false) => Access::Writable,
            (false, true) => Access::ReadOnlyView,
        }
    }

    /// Its part of the place's digest. `ro` and `rw` are those of issue
    /// #27's places, so a file seen as before keeps its place (no
    /// container is replaced for it); only read-only views moved.
    fn key(self) -> &'static str {
        match self {
            Access::ReadOnlyFile => "ro",
            Access::Writable => "rw",
            Access::ReadOnlyView => "rw-viewed-ro",
        }
    }
}

/// The path of `file` inside the files volume for a mount that is
/// `read_only`: `<key>/file`, the key the first 24 hex digits of SHA-256
/// over its content's digest, `mount_path`, project path, [`Access`] and
/// target services. It changes with any of them and with nothing else (not
/// the row id, which another revision of the Playspec changes). Two mounts
/// share a path only if they hold the same content at the same places with
/// the same access for the same services, so a file one service may write
/// is never the one another service reads as read-only: neither within one
/// Playspec (issue #49, item 12: `./f:/f` in one service and `./f:/f:ro` in
/// another) nor across revisions (issue #27, item 9: an old container's
/// read-only file and a new revision's writable twin).
pub fn rel_path(file: &MountedFile, read_only: bool) -> String {
    let access = Access::of(file.readonly, read_only);
    rel_path_of(&file.sha256, &file.mount_path, file.path.as_deref(), access, &file.target_services)
}

/// [`rel_path`] of a file with content digest `sha256` (hex), mounted at
/// `mount_path`, with project path `path`, seen with `access`, for
/// `targets` (in any order; empty means every service).
pub fn rel_path_of(sha256: &str, mount_path: &str, path: Option<&str>, access: Access, targets: &[String]) -> String {
    let mut key = Sha256::new();
    let mut targets: Vec<&str> = targets.iter().map(String::as_str).collect();
    targets.sort_unstable();
    targets.dedup();
    let count = targets.len().to_string();
    for part in [sha256, mount_path, path.unwrap_or(""), access.key(), &count].into_iter().chain(targets) {
        key.update(part.len().to_le_bytes());
        key.update(part.as_bytes());
    }
    let key = format!("{:x}", key.finalize());
    format!("{}/file", &key[..24])
}

/// What a service gets from its Compose file's relative sources.
#[derive(Debug, Default)]
pub(super) struct FromCompose {
    pub(super) mounts: Vec<FileMountSpec>,
    /// Indices in the service's `volumes` that mounted files replace: the
    /// container does not get them as host binds.
    pub(super) replaced_volumes: Vec<usize>,
    /// The relative sources no mounted file provides (project paths only:
    /// a path that is not one stays a host path, for a trusted Playroom).
    pub(super) unresolved: Vec<Unresolved>,
}

/// A relative source of a service that no mounted file provides.
#[derive(Debug)]
pub(super) struct Unresolved {
    /// Normalised.
    pub(super) path: String,
    pub(super) expect: project_files::Expect,
    pub(super) target: String,
    pub(super) read_only: bool,
    /// The index in the service's `volumes` for a bind.
    pub(super) volume: Option<usize>,
}

/// The mounted files `service` gets from the relative sources of `file`
/// that resolve to them, and the sources that do not: the repository of a
/// Playzone provides those when the Playground builds from one
/// (`super::source`); otherwise validation refused them on an untrusted
/// Playroom, and a trusted one binds them as written.
pub(super) fn from_compose(file: &ComposeFile, files: &[MountedFile], service: &str) -> FromCompose {
    let mut out = FromCompose::default();
    for source in project_files::relative_sources(file).into_iter().filter(|s| s.service == service) {
        let Ok(path) = project_files::normalise(source.written) else { continue };
        let Resolution::MountedFiles(placed) =
            project_files::resolve(&path, &source.target, source.expect, files, |f| f.path.as_deref())
        else {
            out.unresolved.push(Unresolved {
                path,
                expect: source.expect,
                target: source.target,
                read_only: source.read_only,
                volume: source.volume,
            });
            continue;
        };
        out.replaced_volumes.extend(source.volume);
        out.mounts.extend(placed.into_iter().map(|p| FileMountSpec::new(p.file, p.target, source.read_only)));
    }
    out
}

/// The files `service` gets: `from_compose` first, then each file at its
/// `mount_path` (a file with no target services goes to every service)
/// unless something already binds that target; in target order.
pub fn mounts_for(files: &[MountedFile], service: &str, from_compose: Vec<FileMountSpec>) -> Vec<FileMountSpec> {
    let mut mounts = from_compose;
    let by_path: Vec<FileMountSpec> = files
        .iter()
        .filter(|f| f.target_services.is_empty() || f.target_services.iter().any(|t| t == service))
        .map(|f| FileMountSpec::new(f, f.mount_path.clone(), f.readonly))
        .collect();
    for mount in by_path {
        if !mounts.iter().any(|m| m.target == mount.target) {
            mounts.push(mount);
        }
    }
    mounts.sort_by(|a, b| a.target.cmp(&b.target));
    mounts.dedup_by(|a, b| a.target == b.target);
    mounts
}
