//! `playroom.edge`: a Playroom's edge settings as the API accepts them.
//!
//! Each key is optional: an absent one keeps the current value on update
//! and takes its default on create (`play_model::edge::settings`). The keys
//! are checked one by one here; that the two ports differ is checked again
//! against the stored settings inside the store's write
//! (`EdgeChanges::apply`), since an update may set only one of them.

use play_model::FieldErrors;
use play_model::edge::{EdgeChanges, EdgeSettings, TlsMode};
use play_model::error::push_field_error;
use serde::Deserialize;

pub const TLS_MODES: &[&str] = &["auto", "internal", "off"];

/// The edge: one Caddy container on the Playroom routing its Playgrounds'
/// exposed services. Every key is optional (absent: unchanged on update,
/// the default on create); `http_port` and `https_port` must differ.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EdgeInput {
    /// Whether play runs an edge on the Playroom. Default true.
    pub enabled: Option<bool>,
    /// The host port the edge serves HTTP (and ACME HTTP-01 challenges) on.
    /// Default 80; must differ from `https_port`.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::port_or_null))]
    pub http_port: Option<i64>,
    /// The host port the edge serves HTTPS on. Default 443; must differ
    /// from `http_port`.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::port_or_null))]
    pub https_port: Option<i64>,
    /// HTTPS under the Playroom's domains: `auto` (ACME certificates when
    /// the Playroom has an `acme_email`, else plain HTTP; the default),
    /// `internal` (Caddy's own CA) or `off` (plain HTTP).
    #[cfg_attr(feature = "openapi", schema(schema_with = tls_or_null))]
    pub tls: Option<String>,
}

#[cfg(feature = "openapi")]
pub fn tls_or_null() -> utoipa::openapi::Schema {
    play_model::openapi::one_of_or_null(TLS_MODES)
}

#[cfg(feature = "openapi")]
pub fn tls() -> utoipa::openapi::schema::Object {
    play_model::openapi::one_of(TLS_MODES)
}

pub fn port(errors: &mut FieldErrors, key: &str, value: Option<i64>) -> Option<u16> {
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
