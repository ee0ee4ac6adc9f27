//! What a backup's snapshot of the store holds (issue #53; the store reads
//! it, `play_store::snapshot`, and the backup's manifest carries it).

use std::collections::BTreeMap;

/// What a snapshot holds, read from the snapshot itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// The last migration the snapshot records (`None`: no schema yet).
    pub schema: Option<i64>,
    /// The installation's uid: its host objects' label.
    pub installation: String,
    /// The fingerprint of the master key the data is sealed with (`None`:
    /// no key was recorded yet).
    pub key_fingerprint: Option<String>,
    /// The highest Playground id in the snapshot (0: none).
    pub last_playground_id: i64,
    /// Rows of every table, by name (the migrations' table included).
    pub counts: BTreeMap<String, i64>,
}
