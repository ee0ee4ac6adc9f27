//! `playroom.edge`: a Playroom's edge settings in the API, and what its edge
//! last did (`edge_status`).
//!
//! Each key is optional: an absent one keeps the current value on update
//! and takes its default on create (`play_core::edge::settings`). The keys
//! are checked one by one here; that the two ports differ is checked again
//! against the stored settings inside the store's write
//! ([`EdgeChanges::apply`]), since an update may set only one of them.

use chrono::{DateTime, Utc};
use play_core::FieldErrors;
use play_core::edge::{EdgeChanges, EdgeSettings, TlsMode};
use play_core::error::push_field_error;
use play_core::store::edges::EdgeStatus;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

const TLS_MODES: &[&str] = &["auto", "internal", "off"];

/// The edge: one Caddy container on the Playroom routing its Playgrounds'
/// exposed services. Every key is optional (absent: unchanged on update,
/// the default on create); `http_port` and `https_port` must differ.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EdgeInput {
    /// Whether play runs an edge on the Playroom. Default true.
    pub enabled: Option<bool>,
    /// The host port the edge serves HTTP (and ACME HTTP-01 challenges) on.
    /// Default 80; must differ from `https_port`.
    #[schema(schema_with = crate::schemas::port_or_null)]
    pub http_port: Option<i64>,
    /// The host port the edge serves HTTPS on. Default 443; must differ
    /// from `http_port`.
    #[schema(schema_with = crate::schemas::port_or_null)]
    pub https_port: Option<i64>,
    /// HTTPS under the Playroom's domains: `auto` (ACME certificates when
    /// the Playroom has an `acme_email`, else plain HTTP; the default),
    /// `internal` (Caddy's own CA) or `off` (plain HTTP).
    #[schema(schema_with = tls_or_null)]
    pub tls: Option<String>,
}

fn tls_or_null() -> utoipa::openapi::Schema {
    crate::schemas::one_of_or_null(TLS_MODES)
}

fn tls() -> utoipa::openapi::schema::Object {
    crate::schemas::one_of(TLS_MODES)
}

fn port(errors: &mut FieldErrors, key: &str, value: Option<i64>) -> Option<u16> {
    let value = value?;
    match u16::try_from(value) {
        Ok(p) if p > 0 => Some(p),
        _ => {
            push_field_error(errors, format!("playroom.edge.{key}"), "must be from 1 to 65535");
            None
        }
    }
}

/// Checks the keys of `input` one by one into `errors`, and the two ports
/// against each other when their values are known here (both given, or a
/// create, whose base is the defaults).
pub fn changes(input: EdgeInput, creating: bool, errors: &mut FieldErrors) -> EdgeChanges {
    let before = errors.len();
    let http_port = port(errors, "http_port", input.http_port);
    let https_port = port(errors, "https_port", input.https_port);
    let tls = input.tls.as_deref().and_then(|text| {
        let mode = TlsMode::parse(text);
        if mode.is_none() {
            push_field_error(errors, "playroom.edge.tls", format!("must be one of {}", TLS_MODES.join(", ")));
        }
        mode
    });
    let changes = EdgeChanges { enabled: input.enabled, http_port, https_port, tls };
    let ports_known = creating || (http_port.is_some() && https_port.is_some());
    if errors.len() == before
        && ports_known
        && let Err(conflict) = changes.apply(EdgeSettings::default())
    {
        push_field_error(errors, format!("playroom.edge.{}", conflict.key), conflict.message);
    }
    changes
}

/// A Playroom's edge settings.
#[derive(Debug, Serialize, ToSchema)]
pub struct EdgeView {
    pub enabled: bool,
    #[schema(minimum = 1, maximum = 65535)]
    pub http_port: u16,
    #[schema(minimum = 1, maximum = 65535)]
    pub https_port: u16,
    /// `auto`, `internal` or `off`.
    #[schema(schema_with = tls)]
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
