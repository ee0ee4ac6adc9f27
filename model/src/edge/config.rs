//! The Caddy JSON config of a Playroom's edge, built from its routes.
//!
//! Shape (one `http` app, two servers):
//! - `http` listens on the Playroom's HTTP port: plain-HTTP routes, a
//!   redirect to HTTPS for every HTTPS host, then a 404 for anything else
//!   (Caddy would otherwise answer an unmatched request with an empty 200).
//! - `https` (only when a route is HTTPS) listens on the HTTPS port with
//!   the HTTPS routes and the same 404; its certificates come from the
//!   `tls` app's policy for exactly those hosts (ACME or Caddy's internal
//!   CA, see [`EdgeSettings::https_for_domains`]). ACME's HTTP-01
//!   challenges are answered on the `http` server: Caddy answers them
//!   before any route, on every server (`docs/edge.md`, "TLS").
//!
//! Each route is one matcher set: the host, and beside it the Caddy
//! translation of the service's path rule, made at validation and carried
//! by the route ([`Route::matcher`]), so a rule can only narrow its host
//! and nothing here parses it. Routes are ordered as Traefik orders them by default (longer rule
//! first), then by id, so the order never depends on the order Playgrounds
//! were read in. Every route carries `@id` = the route id, which is how
//! `/debug` asks the edge whether a route is live.
//!
//! The admin endpoint listens on a unix socket inside the container, which
//! play reaches from the host through a bind mount (`docs/edge.md`): no
//! TCP listener, so nothing on the edge network can reach it. Its config
//! is persisted by Caddy, so a restarted container resumes the last
//! config it accepted before play looks again.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::EdgeSettings;
use super::waking::{self, Sleeping};
use crate::routing::Route;

/// The admin socket's path inside the edge container.
pub const ADMIN_SOCKET: &str = "/run/play-edge/admin.sock";
/// The `Host` the admin endpoint accepts (Caddy checks it even on a unix
/// socket).
pub const ADMIN_ORIGIN: &str = "play-edge";

/// Where certificates come from, for the routes served over HTTPS.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acme {
    /// The ACME account's e-mail (the Playroom's `acme_email`); `None`
    /// issues from Caddy's internal CA.
    pub email: Option<String>,
    /// The ACME directory; `None` is Caddy's default (Let's Encrypt). An
    /// installation setting, never a tenant's.
    pub directory: Option<String>,
    /// PEM files in the container the ACME server's TLS is trusted with
    /// (a private ACME server such as pebble).
    pub trusted_roots: Vec<String>,
}

/// Everything the config is built from.
#[derive(Clone, Debug)]
pub struct EdgeConfig<'a> {
    pub settings: EdgeSettings,
    pub acme: Acme,
    /// The routes to serve (already arbitrated: one Playground per host).
    pub routes: &'a [Route],
    /// Which routes are of sleeping Playgrounds, and whose requests count
    /// as activity ([`waking`]).
    pub sleep: &'a Sleeping,
}

/// The route id of the catch-all 404.
const NOT_FOUND_ID: &str = "play-not-found";

/// The Caddy config. Infallible: each route carries the matcher set its
/// path rule was translated into at validation ([`Route::matcher`]).
pub fn caddy_config(input: &EdgeConfig<'_>) -> Value {
    let mut routes: Vec<&Route> = input.routes.iter().collect();
    routes.sort_by(|a, b| b.rule.len().cmp(&a.rule.len()).then_with(|| a.id.cmp(&b.id)));
    let mut plain = Vec::new();
    let mut secure = Vec::new();
    let mut https_hosts: Vec<&str> = Vec::new();
    let mut errors = Vec::new();
    for route in routes {
        let served = match input.sleep.waking.get(&route.id) {
            Some(playground) => {
                errors.push((route.https, waking::error_route(route)));
                waking::waking_route(route, *playground)
            }
            None => proxy_route(route),
        };
        if route.https {
            secure.push(served);
            if !https_hosts.contains(&route.fqdn.as_str()) {
                https_hosts.push(&route.fqdn);
            }
        } else {
            plain.push(served);
        }
    }
    https_hosts.sort_unstable();
    let settings = &input.settings;
    if !https_hosts.is_empty() {
        let port = if settings.https_port == 443 { String::new() } else { format!(":{}", settings.https_port) };
        plain.push(json!({
            "@id": "play-https-redirect",
            "match": [{"host": https_hosts}],
            "handle": [{
                "handler": "static_response",
                "status_code": 308,
                "headers": {"Location": [format!("https://{{http.request.host}}{port}{{http.request.uri}}")]},
            }],
            "terminal": true,
        }));
    }
    plain.push(not_found());
    let mut servers = Map::new();
    let mut http = json!({
        "listen": [format!(":{}", settings.http_port)],
        "routes": plain,
        // play writes the redirects itself; Caddy's would point at
        // port 443 whatever the Playroom's HTTPS port is.
        "automatic_https": {"disable_redirects": true},
    });
    decorate(&mut http, input.sleep, &errors, false, settings.http_port);
    servers.insert("http".into(), http);
    let mut apps = Map::new();
    if !https_hosts.is_empty() {
        secure.push(not_found());
        let mut https = json!({
            "listen": [format!(":{}", settings.https_port)],
            "routes": secure,
            "automatic_https": {"disable_redirects": true},
        });
        decorate(&mut https, input.sleep, &errors, true, settings.https_port);
        servers.insert("https".into(), https);
        apps.insert("tls".into(), tls_app(&https_hosts, &input.acme));
        if input.acme.email.is_none() {
            // Caddy's internal CA otherwise tries to install its root in
            // the container's trust store at every start, and fails (an
            // error in the log): the clients trust it, never the edge.
            apps.insert("pki".into(), json!({"certificate_authorities": {"local": {"install_trust": false}}}));
        }
    }
    if !input.sleep.waking.is_empty() {
        servers.insert("play-wake".into(), waking::wake_server());
    }
    apps.insert(
        "http".into(),
        json!({"http_port": settings.http_port, "https_port": settings.https_port, "servers": servers}),
    );
    let mut config = json!({
        "admin": {
            "listen": format!("unix/{ADMIN_SOCKET}"),
            "origins": [ADMIN_ORIGIN],
            "config": {"persist": true},
        },
        "apps": apps,
    });
    if !input.sleep.waking.is_empty() || !input.sleep.watched_hosts.is_empty() {
        config["logging"] = waking::logging();
    }
    config
}

/// Adds to a server what sleep needs: the error routes of its sleeping
/// routes and the access log of watched hosts.
fn decorate(server: &mut Value, sleep: &Sleeping, errors: &[(bool, Value)], https: bool, port: u16) {
    let mine: Vec<&Value> = errors.iter().filter(|(h, _)| *h == https).map(|(_, r)| r).collect();
    if !mine.is_empty() {
        server["errors"] = json!({"routes": mine});
    }
    if !sleep.watched_hosts.is_empty() {
        server["logs"] = waking::server_logs(&sleep.watched_hosts, &[port]);
    }
}

/// SHA-256 (hex) of a config's canonical JSON text: what the edge records
/// as applied.
pub fn config_hash(config: &Value) -> String {
    // serde_json keeps object keys sorted (no `preserve_order`), so equal
    // configs print equally.
    format!("{:x}", Sha256::digest(config.to_string().as_bytes()))
}

fn proxy_route(route: &Route) -> Value {
    json!({
        "@id": route.id,
        "match": [route.matcher],
        "handle": [{
            "handler": "reverse_proxy",
            "upstreams": [{"dial": format!("{}:{}", route.upstream, route.port)}],
        }],
        "terminal": true,
    })
}

fn not_found() -> Value {
    json!({
        "@id": NOT_FOUND_ID,
        "handle": [{
            "handler": "static_response",
            "status_code": 404,
            "body": "play: nothing is routed here\n",
        }],
        "terminal": true,
    })
}

fn tls_app(hosts: &[&str], acme: &Acme) -> Value {
    let issuer = match &acme.email {
        Some(email) => {
            let mut issuer = json!({
                "module": "acme",
                "email": email,
                // HTTP-01 only: the edge answers on the Playroom's HTTP port;
                // TLS-ALPN would need 443 on the host.
                "challenges": {"tls-alpn": {"disabled": true}},
            });
            if let Some(directory) = &acme.directory {
                issuer["ca"] = json!(directory);
            }
            if !acme.trusted_roots.is_empty() {
                issuer["trusted_roots_pem_files"] = json!(acme.trusted_roots);
            }
            issuer
        }
        None => json!({"module": "internal"}),
    };
    json!({"automation": {"policies": [{"subjects": hosts, "issuers": [issuer]}]}})
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
