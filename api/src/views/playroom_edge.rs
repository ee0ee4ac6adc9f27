//! `playroom.edge` and `edge_status`: a Playroom's edge settings as the API
//! shows them, and what its edge last did.

use chrono::{DateTime, Utc};
use play_model::edge::EdgeSettings;
use play_model::edge::model::EdgeStatus;
use serde::Serialize;
use utoipa::ToSchema;

/// A Playroom's edge settings.
#[derive(Debug, Serialize, ToSchema)]
pub struct EdgeView {
    pub enabled: bool,
    #[schema(minimum = 1, maximum = 65535)]
    pub http_port: u16,
    #[schema(minimum = 1, maximum = 65535)]
    pub https_port: u16,
    /// `auto`, `internal` or `off`.
    #[schema(schema_with = crate::input::playroom_edge::tls)]
    pub tls: &'static str,
}

impl From<EdgeSettings> for EdgeView {
    fn from(s: EdgeSettings) -> Self {
        EdgeView { enabled: s.enabled, http_port: s.http_port, https_port: s.https_port, tls: s.tls.as_str() }
    }
}

/// What the Playroom's edge last did.
#[derive(Debug, Serialize, ToSchema)]
pub struct EdgeStatusView {
    /// The edge container play last saw running.
    pub container_id: Option<String>,
    /// SHA-256 of the config the edge last accepted.
    pub config_hash: Option<String>,
    /// When the edge accepted that config.
    pub applied_at: Option<DateTime<Utc>>,
    /// Why the last pass failed (a port in use, Caddy refusing the config);
    /// `null` once a pass converges.
    pub error: Option<String>,
    /// Since when that error has been reported.
    pub error_at: Option<DateTime<Utc>>,
}

impl From<EdgeStatus> for EdgeStatusView {
    fn from(s: EdgeStatus) -> Self {
        EdgeStatusView {
            container_id: s.container_id,
            config_hash: s.config_hash,
            applied_at: s.applied_at,
            error: s.error,
            error_at: s.error_at,
        }
    }
}
