//! A job-mode Playground's result, as stored, and what completing one
//! records.

use std::collections::BTreeMap;

use crate::playground::model::ServiceStatus;
use crate::time::Timestamp;

/// A stored job result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobResult {
    pub exit_code: i64,
    pub completed_at: Timestamp,
    pub tail_logs: String,
    /// When the reconciler confirmed the host clean; `None` until then.
    pub host_released_at: Option<Timestamp>,
}

/// What the reconciler found when the job finished.
#[derive(Clone, Debug)]
pub struct Completion<'a> {
    pub exit_code: i64,
    pub completed_at: Timestamp,
    pub tail_logs: &'a str,
    /// Each watched service's exit code (reported in the event).
    pub watched: &'a BTreeMap<String, i64>,
    /// Every service that ran -> its last lines, oldest first (at most
    /// [`MAX_CACHED_LINES`]; more are cut from the front).
    pub logs: &'a BTreeMap<String, Vec<String>>,
    /// The services as they are shown from now on.
    pub services: &'a [ServiceStatus],
    /// The new `expires_at`: the row is deleted then.
    pub keep_until: Timestamp,
}
