//! `play backup` and `play restore` (issue #53): one archive of what play
//! holds, taken while `play serve` runs, and its restore into an empty
//! data directory or database.
//!
//! The archive is a zstd-compressed tar (`.tar.zst`):
//! - `store/play.db` (SQLite, `VACUUM INTO`) or `store/play.pgdump`
//!   (PostgreSQL, `pg_dump --format=custom` in an exported snapshot);
//! - `repositories/<owner>/<name>.git/...`, play's own Git host's bare
//!   repositories, copied after the store's snapshot;
//! - `manifest.json`, last: the format, play's version, the schema version,
//!   the store's kind, the installation, the time, the master key's
//!   fingerprint (never the key), the row count of every table, and the
//!   size and SHA-256 of every other file.
//!
//! # Invariants
//! - A backup is written to a temporary name beside its target and renamed
//!   only once complete and synced: a file with the final name is whole.
//! - The store's snapshot is one point in time; the counts in the manifest
//!   are read from that snapshot, so a restore can check them exactly.
//! - Repositories are copied after the snapshot, refs before objects: every
//!   ref names objects that are in the copy (objects are immutable; a
//!   branch newer than the store's records is repaired by the branch index
//!   on its next sync, as after any push).
//! - A restore writes nothing to its target until the whole archive is
//!   read and every file's checksum, the schema version and the master key
//!   are checked; it refuses a target that holds anything.

mod archive;
mod backup;
pub mod cli;
mod error;
mod manifest;
mod postgres;
mod repositories;
mod restore;
pub mod schedule;
mod verify;

pub use backup::{Output, Source, backup, before_upgrade};
pub use error::{Error, Result};
pub use manifest::NAME as MANIFEST;
pub use manifest::{FORMAT, FileSum, Manifest, StoreKind};
pub use restore::{RESTORE_ID_GAP, Restored, Target, restore};
pub use verify::verify;
