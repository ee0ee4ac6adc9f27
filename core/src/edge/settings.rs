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

#[cfg(test)]
mod tests {
    use super::*;

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
