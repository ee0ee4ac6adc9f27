//! Mounted files (a Playspec's uploaded files) as parts of the desired
//! containers.
//!
//! The files of a Playground live in one named volume play creates,
//! `<project>__play_files` (a key Compose cannot declare: Compose volume
//! names start with a letter or digit), each at `<id>-<sha256, 12>/file`.
//! A service container gets each of its files as a bind mount of that path
//! under the volume's mount point, at the file's `mount_path`, read-only
//! when the file is `readonly`. So:
//! - a file mounts at any path, even one the image lacks, and `readonly` is
//!   enforced by the kernel, not by file modes;
//! - a changed file has a new path, hence a new config hash: its containers
//!   are replaced, the others are not;
//! - the volume goes with the Playground like its other volumes (and with a
//!   hard restart unless volumes persist).

use serde::Serialize;

use crate::store::playspec_files::MountedFile;

/// The volume key of the mounted-files volume.
pub const FILES_VOLUME_KEY: &str = "_play_files";

/// One mounted file of one container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileMountSpec {
    pub file_id: i64,
    /// Where the file lives in the files volume: `<id>-<sha12>/file`.
    pub rel_path: String,
    /// The path inside the container.
    pub target: String,
    pub read_only: bool,
}

/// The path of `file` inside the files volume; changes with its content.
pub fn rel_path(file: &MountedFile) -> String {
    let short: String = file.sha256.chars().take(12).collect();
    format!("{}-{short}/file", file.id)
}

/// The files `service` gets (a file with no target services goes to every
/// service), in mount-path order.
pub fn mounts_for(files: &[MountedFile], service: &str) -> Vec<FileMountSpec> {
    let mut mounts: Vec<FileMountSpec> = files
        .iter()
        .filter(|f| f.target_services.is_empty() || f.target_services.iter().any(|t| t == service))
        .map(|f| FileMountSpec {
            file_id: f.id,
            rel_path: rel_path(f),
            target: f.mount_path.clone(),
            read_only: f.readonly,
        })
        .collect();
    mounts.sort_by(|a, b| a.target.cmp(&b.target));
    mounts
}
