//! `manifest.json`: what an archive holds and how to check it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The archive format this binary writes and reads.
pub const FORMAT: u32 = 1;

/// The manifest's name in the archive (its last entry).
pub const NAME: &str = "manifest.json";

/// Which store the backup was taken of; it restores into the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    Sqlite,
    Postgres,
}

impl StoreKind {
    /// The store's file in the archive.
    pub fn file(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "store/play.db",
            StoreKind::Postgres => "store/play.pgdump",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "SQLite",
            StoreKind::Postgres => "PostgreSQL",
        }
    }
}

/// One file's size and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSum {
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// The version of the play binary that took the backup.
    pub play_version: String,
    /// The last migration the backed-up store records.
    pub schema_version: Option<i64>,
    pub store: StoreKind,
    /// The installation's uid (its host objects' label).
    pub installation: String,
    /// When the store's snapshot was taken (RFC 3339, UTC).
    pub created_at: String,
    /// The fingerprint of the master key the store's secrets are sealed
    /// with (a one-way derivation; `None`: the store recorded no key).
    pub key_check: Option<String>,
    /// The highest Playground id the store had given out.
    pub last_playground_id: i64,
    /// Rows of every table in the snapshot.
    pub counts: BTreeMap<String, i64>,
    /// Every other file of the archive, by its path in the archive.
    pub files: BTreeMap<String, FileSum>,
}
