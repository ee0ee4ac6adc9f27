//! Build records: which image a built service's source produced.

use crate::time::Timestamp;

/// How one image of a service came to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildRecord {
    pub id: i64,
    pub service: String,
    pub commit: String,
    pub image: String,
    /// The image was on the Playroom already: nothing was built.
    pub cache_hit: bool,
    pub succeeded: bool,
    pub duration_ms: i64,
    /// The end of the build's output (bounded).
    pub log_tail: String,
    pub created_at: Timestamp,
}

/// A record to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewRecord {
    pub service: String,
    pub commit: String,
    pub image: String,
    pub cache_hit: bool,
    pub succeeded: bool,
    pub duration_ms: i64,
    pub log_tail: String,
}
