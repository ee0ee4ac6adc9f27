//! What `/api/playgrounds/{id}/compose`, `env_metadata` and `debug` accepts:
//! its request bodies and queries, and the checks that turn them, field by
//! field, into core's types (shared with server-side apply, which validates
//! the same fields the same way).

use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct EnvQuery {
    /// One service: its container's environment exactly.
    pub service: Option<String>,
}
