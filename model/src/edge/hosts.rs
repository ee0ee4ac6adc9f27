//! The host names and URLs of routed services.
//!
//! Under a Playroom domain a service's host is `<subdomain>.<domain>` (`@`
//! is the domain itself; see `desired::exposure`). A Playroom without
//! domains still routes, over plain HTTP, under a name that needs no DNS
//! set-up (`docs/edge.md`, "Hosts without a domain"):
//! - `<label>-<playground id>.localhost` on a local Playroom or one whose
//!   host is a loopback address (`*.localhost` resolves to the loopback in
//!   browsers and in systemd-resolved);
//! - `<label>-<playground id>.<address, dashed>.sslip.io` when the host is
//!   any other IP address (sslip.io answers with the address written in
//!   the name);
//! - none for a host given by DNS name: play cannot know which address the
//!   name should carry, so the service says to add a domain.
//!
//! The Playground id keeps two Playgrounds' services apart without any
//! arbitration: ids are unique within an installation, and each
//! installation runs its own edge.

use std::net::IpAddr;

use super::EdgeSettings;

/// The longest DNS label.
const MAX_LABEL: usize = 63;

/// The base that hosts without a domain go under, or why there is none.
pub fn fallback_base(local: bool, host: &str) -> Result<String, String> {
    if local || host.eq_ignore_ascii_case("localhost") {
        return Ok("localhost".to_owned());
    }
    let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() else {
        return Err(format!(
            "the Playroom has no domain and its host `{host}` is a DNS name: add a domain (with a wildcard \
             DNS record pointing at the host) to route exposed services"
        ));
    };
    if ip.is_loopback() {
        return Ok("localhost".to_owned());
    }
    let dashed = match ip {
        IpAddr::V4(v4) => v4.to_string().replace('.', "-"),
        IpAddr::V6(v6) => v6.to_string().replace(':', "-"),
    };
    Ok(format!("{dashed}.sslip.io"))
}

/// `<label>-<playground id>.<base>`, the label cut so the first part stays
/// one DNS label.
pub fn fallback_host(label: &str, playground_id: i64, base: &str) -> String {
    let suffix = format!("-{playground_id}");
    let room = MAX_LABEL.saturating_sub(suffix.len());
    let label: String = label.chars().take(room).collect();
    let label = label.trim_end_matches('-');
    format!("{label}{suffix}.{base}")
}

/// The URL of `host` on an edge with `settings`: the port is written when
/// it is not the scheme's default.
pub fn url(https: bool, host: &str, settings: &EdgeSettings) -> String {
    let (scheme, port, default) =
        if https { ("https", settings.https_port, 443) } else { ("http", settings.http_port, 80) };
    if port == default { format!("{scheme}://{host}/") } else { format!("{scheme}://{host}:{port}/") }
}

/// Whether `host` is `domain` or a name under it.
fn is_under(host: &str, domain: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    host == domain || host.strip_suffix(&domain).is_some_and(|rest| rest.ends_with('.'))
}

/// The URL of a route the edge decided for `host`, from the Playroom alone
/// (no Compose parsing): HTTPS when `host` is under one of the Playroom's
/// `domains` and the settings serve HTTPS there, as `desired::exposure`
/// decides it; hosts without a domain are plain HTTP.
pub fn url_for_host(host: &str, domains: &[String], acme_email: Option<&str>, settings: &EdgeSettings) -> String {
    let https = settings.https_for_domains(acme_email) && domains.iter().any(|d| is_under(host, d));
    url(https, host, settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::TlsMode;

    #[test]
    fn bases_without_a_domain() {
        assert_eq!(fallback_base(true, "203.0.113.9").unwrap(), "localhost");
        assert_eq!(fallback_base(false, "localhost").unwrap(), "localhost");
        assert_eq!(fallback_base(false, "127.0.0.1").unwrap(), "localhost");
        assert_eq!(fallback_base(false, "::1").unwrap(), "localhost");
        assert_eq!(fallback_base(false, "203.0.113.9").unwrap(), "203-0-113-9.sslip.io");
        assert_eq!(fallback_base(false, "2001:db8::1").unwrap(), "2001-db8--1.sslip.io");
        assert_eq!(fallback_base(false, "[2001:db8::1]").unwrap(), "2001-db8--1.sslip.io");
        let err = fallback_base(false, "host.example.com").unwrap_err();
        assert!(err.contains("add a domain"), "{err}");
    }

    #[test]
    fn fallback_hosts_stay_one_label_before_the_base() {
        assert_eq!(fallback_host("web", 12, "localhost"), "web-12.localhost");
        let long = "a".repeat(80);
        let host = fallback_host(&long, 123_456, "localhost");
        let first = host.split('.').next().unwrap();
        assert_eq!(first.len(), 63);
        assert!(first.ends_with("-123456"));
        // A cut that would end the label in `-` drops the hyphens.
        let host = fallback_host(&format!("{}-x", "b".repeat(55)), 1234567, "localhost");
        assert!(!host.contains("--"), "{host}");
    }

    #[test]
    fn urls_name_non_default_ports() {
        let default = EdgeSettings::default();
        assert_eq!(url(false, "a.example.com", &default), "http://a.example.com/");
        assert_eq!(url(true, "a.example.com", &default), "https://a.example.com/");
        let high = EdgeSettings { http_port: 18080, https_port: 18443, ..default };
        assert_eq!(url(false, "web-1.localhost", &high), "http://web-1.localhost:18080/");
        assert_eq!(url(true, "a.example.com", &high), "https://a.example.com:18443/");
    }

    #[test]
    fn urls_of_stored_hosts_follow_the_domains_and_the_tls_mode() {
        let domains = vec!["apps.example.com".to_owned()];
        let acme = Some("ops@example.com");
        let auto = EdgeSettings::default();
        assert_eq!(url_for_host("shop.apps.example.com", &domains, acme, &auto), "https://shop.apps.example.com/");
        assert_eq!(url_for_host("apps.example.com", &domains, acme, &auto), "https://apps.example.com/");
        assert_eq!(url_for_host("SHOP.Apps.Example.com", &domains, acme, &auto), "https://SHOP.Apps.Example.com/");
        // Not under the domain: a name that merely ends like it, a fallback host.
        assert_eq!(url_for_host("evilapps.example.com", &domains, acme, &auto), "http://evilapps.example.com/");
        assert_eq!(url_for_host("web-3.localhost", &domains, acme, &auto), "http://web-3.localhost/");
        // Without an ACME email, auto is plain HTTP; internal is HTTPS anyway; off never.
        assert_eq!(url_for_host("shop.apps.example.com", &domains, None, &auto), "http://shop.apps.example.com/");
        let internal = EdgeSettings { tls: TlsMode::Internal, https_port: 8443, ..auto };
        assert_eq!(
            url_for_host("shop.apps.example.com", &domains, None, &internal),
            "https://shop.apps.example.com:8443/"
        );
        let off = EdgeSettings { tls: TlsMode::Off, http_port: 8080, ..auto };
        assert_eq!(url_for_host("shop.apps.example.com", &domains, acme, &off), "http://shop.apps.example.com:8080/");
        assert_eq!(url_for_host("x.example.org", &[], acme, &auto), "http://x.example.org/");
    }
}
