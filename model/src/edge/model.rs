//! A Playroom's edge as the store records it: the applied config, each
//! route's row, and what one pass of the edge loop decided.

use std::collections::BTreeMap;

use crate::edge::claims::{Claim, Decision};
use crate::time::Timestamp;

/// A Playroom's edge as last seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeStatus {
    pub config_hash: Option<String>,
    pub applied_at: Option<Timestamp>,
    pub container_id: Option<String>,
    pub error: Option<String>,
    pub error_at: Option<Timestamp>,
}

/// One decided route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteRow {
    pub claim: Claim,
    pub playroom_id: i64,
    pub live: bool,
    /// The Playground holding the host this route lost.
    pub conflict_with: Option<i64>,
    /// The container (`name:port`) the live config sends this route to.
    pub upstream: Option<String>,
}

/// What one edge pass found and did.
#[derive(Clone, Debug, Default)]
pub struct PassOutcome {
    /// Every route the pass decided (all of the Playroom's).
    pub decisions: Vec<Decision>,
    /// The config the edge now serves, when the pass got it accepted or
    /// found it already live: `(hash, container id)`.
    pub applied: Option<(String, String)>,
    /// Why the pass could not converge; `None` clears an earlier error.
    pub error: Option<String>,
    /// Why the edge container had to be made again (drift), if it did.
    pub restored: Option<String>,
    /// Each decided route's upstream (`container:port`) in the config of
    /// this pass, by Playground and service.
    pub upstreams: BTreeMap<(i64, String), String>,
}
