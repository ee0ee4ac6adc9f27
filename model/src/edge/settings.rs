//! A Playroom's edge settings (`playroom.edge` in the API).
//!
//! Stored as JSON on the Playroom; a key that is absent takes its default,
//! so rows written before the edge existed read as "on, 80/443, tls auto".

use serde::{Deserialize, Serialize};

/// How the edge serves HTTPS for hosts under the Playroom's domains.
/// Hosts play makes up for a Playroom without domains (see
/// [`super::hosts`]) are always plain HTTP: no CA can certify them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsMode {
    /// Certificates from ACME (HTTP-01) when the Playroom has an
    /// `acme_email`; plain HTTP otherwise.
    #[default]
    Auto,
    /// Certificates from Caddy's internal CA (clients must trust its root):
    /// HTTPS without a public CA, e.g. on a private network.
    Internal,
    /// Plain HTTP only, even with an `acme_email`.
    Off,
}

impl TlsMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TlsMode::Auto => "auto",
            TlsMode::Internal => "internal",
            TlsMode::Off => "off",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(TlsMode::Auto),
            "internal" => Some(TlsMode::Internal),
            "off" => Some(TlsMode::Off),
            _ => None,
        }
    }
}

/// Default public ports of the edge.
pub const DEFAULT_HTTP_PORT: u16 = 80;
pub const DEFAULT_HTTPS_PORT: u16 = 443;

/// A Playroom's edge settings.
///
/// Invariant (checked by the API before storing): `http_port` and
/// `https_port` are distinct and non-zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EdgeSettings {
    /// Whether play runs an edge on the Playroom. Off: no edge container,
    /// no routes, and exposed services say so.
    pub enabled: bool,
    /// The host port the edge serves HTTP on (and answers ACME HTTP-01
    /// challenges on, so a Playroom with ACME needs 80).
    pub http_port: u16,
    pub https_port: u16,
    pub tls: TlsMode,
}

impl Default for EdgeSettings {
    fn default() -> Self {
        EdgeSettings { enabled: true, http_port: DEFAULT_HTTP_PORT, https_port: DEFAULT_HTTPS_PORT, tls: TlsMode::Auto }
    }
}

impl EdgeSettings {
    /// Whether routes under the Playroom's domains are served over HTTPS.
    pub fn https_for_domains(&self, acme_email: Option<&str>) -> bool {
        match self.tls {
            TlsMode::Auto => acme_email.is_some_and(|e| !e.is_empty()),
            TlsMode::Internal => true,
            TlsMode::Off => false,
        }
    }
}

/// A change to a Playroom's edge settings: the keys a request gave. An
/// absent key keeps the value it is applied to (the current settings on an
/// update, the defaults on a create).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EdgeChanges {
    pub enabled: Option<bool>,
    pub http_port: Option<u16>,
    pub https_port: Option<u16>,
    pub tls: Option<TlsMode>,
}

/// Why changed settings break the invariant of [`EdgeSettings`]: the key
/// to blame and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeConflict {
    /// `http_port` or `https_port`.
    pub key: &'static str,
    pub message: String,
}

impl EdgeChanges {
    /// `base` with the changes applied, checked against the invariant of
    /// [`EdgeSettings`]. A collision is blamed on a port the change sets
    /// (`https_port` when it sets both), so the message points at what the
    /// caller wrote, even when the other port is the stored one.
    pub fn apply(&self, base: EdgeSettings) -> Result<EdgeSettings, EdgeConflict> {
        let merged = EdgeSettings {
            enabled: self.enabled.unwrap_or(base.enabled),
            http_port: self.http_port.unwrap_or(base.http_port),
            https_port: self.https_port.unwrap_or(base.https_port),
            tls: self.tls.unwrap_or(base.tls),
        };
        for (key, port) in [("http_port", merged.http_port), ("https_port", merged.https_port)] {
            if port == 0 {
                return Err(EdgeConflict { key, message: "must be from 1 to 65535".into() });
            }
        }
        if merged.http_port == merged.https_port {
            let (key, other) =
                if self.https_port.is_some() { ("https_port", "http_port") } else { ("http_port", "https_port") };
            return Err(EdgeConflict {
                key,
                message: format!(
                    "must differ from {other} ({}): the edge serves HTTP and HTTPS on separate ports",
                    merged.http_port
                ),
            });
        }
        Ok(merged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_keep_what_they_do_not_name() {
        let base = EdgeSettings { http_port: 8080, tls: TlsMode::Internal, ..EdgeSettings::default() };
        assert_eq!(EdgeChanges::default().apply(base), Ok(base));
        let off = EdgeChanges { enabled: Some(false), https_port: Some(8443), ..EdgeChanges::default() };
        let merged = off.apply(base).unwrap();
        assert_eq!(merged, EdgeSettings { enabled: false, http_port: 8080, https_port: 8443, tls: TlsMode::Internal });
        let tls = EdgeChanges { tls: Some(TlsMode::Off), ..EdgeChanges::default() };
        assert_eq!(tls.apply(merged).unwrap().tls, TlsMode::Off);
    }

    #[test]
    fn a_port_collision_is_blamed_on_a_port_the_change_sets() {
        let base = EdgeSettings::default();
        let http = EdgeChanges { http_port: Some(443), ..EdgeChanges::default() };
        assert_eq!(http.apply(base).unwrap_err().key, "http_port");
        let https = EdgeChanges { https_port: Some(80), ..EdgeChanges::default() };
        let err = https.apply(base).unwrap_err();
        assert_eq!(err.key, "https_port");
        assert!(err.message.contains("http_port (80)"), "{}", err.message);
        let both = EdgeChanges { http_port: Some(9000), https_port: Some(9000), ..EdgeChanges::default() };
        assert_eq!(both.apply(base).unwrap_err().key, "https_port");
        // Swapping both at once is fine.
        let swap = EdgeChanges { http_port: Some(443), https_port: Some(80), ..EdgeChanges::default() };
        assert_eq!(swap.apply(base).map(|s| (s.http_port, s.https_port)), Ok((443, 80)));
        let zero = EdgeChanges { http_port: Some(0), ..EdgeChanges::default() };
        assert_eq!(zero.apply(base).unwrap_err().key, "http_port");
    }

    #[test]
    fn an_empty_object_reads_as_the_defaults() {
        let settings: EdgeSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(settings, EdgeSettings::default());
        let partial: EdgeSettings = serde_json::from_str(r#"{"http_port": 8080}"#).unwrap();
        assert_eq!(partial.http_port, 8080);
        assert_eq!(partial.https_port, 443);
        assert!(partial.enabled);
    }

    #[test]
    fn https_follows_the_mode_and_the_acme_email() {
        let auto = EdgeSettings::default();
        assert!(!auto.https_for_domains(None));
        assert!(!auto.https_for_domains(Some("")));
        assert!(auto.https_for_domains(Some("ops@example.com")));
        let internal = EdgeSettings { tls: TlsMode::Internal, ..auto };
        assert!(internal.https_for_domains(None));
        let off = EdgeSettings { tls: TlsMode::Off, ..auto };
        assert!(!off.https_for_domains(Some("ops@example.com")));
    }
}
