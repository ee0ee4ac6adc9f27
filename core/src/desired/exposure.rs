//! Routing of exposed services: the labels, in Traefik's label convention,
//! that let the Playroom's edge router send `<subdomain>.<domain>` to a
//! service, and the shared edge network the router reaches it on.
//!
//! Decisions (see `docs/decisions.md`, "Exposure"):
//! - Only services whose definition has `exposure.enabled` and visibility
//!   `external` are routed. `internal` means reachable by the Playground's
//!   own services only (its project networks): no route, no edge network.
//! - The host is `<subdomain>.<first domain of the Playroom>`; the subdomain
//!   is the Playground's `service_subdomains` entry, else the definition's,
//!   else the service name as a DNS label; `@` is the domain itself.
//! - `svc/path_rule` is parsed and re-printed from the parsed [`Rule`],
//!   never pasted, inside `Host(...) && (...)`: whatever the rule holds
//!   (`||` included), a request must match the host.
//! - No domain, no port, a `network_mode`, or a subdomain that is not a DNS
//!   label: no route, and the reason is kept for `/debug`.
//! - With an ACME e-mail on the Playroom the router listens on
//!   [`ENTRYPOINT_HTTPS`] with TLS from [`CERT_RESOLVER`], else on
//!   [`ENTRYPOINT_HTTP`].
//!
//! [`Rule`]: crate::compose::rule::Rule

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{ContainerSpec, Inputs};
use crate::compose::classify::dns_label;
use crate::compose::model::Service;
use crate::compose::rule::{Rule, check_path_rule};
use crate::compose::svc::{LabelKind, check_label_value};

/// The edge router's plain-HTTP entrypoint.
pub const ENTRYPOINT_HTTP: &str = "web";
/// The edge router's HTTPS entrypoint.
pub const ENTRYPOINT_HTTPS: &str = "websecure";
/// The certificate resolver the edge router defines for the Playroom's
/// ACME e-mail.
pub const CERT_RESOLVER: &str = "letsencrypt";

/// Label keys under this prefix are play's alone.
const ROUTING_PREFIX: &str = "traefik.";

/// The shared edge network of an installation on a Playroom's engine:
/// `play-<first 6 characters of the installation>-edge`. One per engine
/// and installation (two Playrooms of one installation on the same engine
/// share it, as they would share its edge router); the installation keeps
/// installations sharing an engine apart.
pub fn edge_network_name(installation: &str) -> String {
    let short: String = installation.chars().take(6).collect();
    format!("play-{short}-edge")
}

/// What play does with a service's exposure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Routing {
    /// The service's definition does not expose it.
    NotExposed,
    /// The service is routed.
    Routed(Route),
    /// Exposed, but play generates no route, for `reason`.
    Unrouted { reason: String },
}

/// One service's route.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Route {
    /// The router (and load-balancer service) name: unique per Playground
    /// and service, `<compose project>-<service>`.
    pub router: String,
    pub fqdn: String,
    /// The complete routing rule.
    pub rule: String,
    /// The container port the router sends to.
    pub port: u16,
    pub entrypoint: &'static str,
    /// Set when the route is served over HTTPS with an ACME certificate.
    pub cert_resolver: Option<&'static str>,
}

impl Route {
    /// The container labels that declare the route, in Traefik's label
    /// convention; `edge_network` is the network the router reaches the
    /// container on.
    pub fn labels(&self, edge_network: &str) -> BTreeMap<String, String> {
        let r = &self.router;
        let mut labels = BTreeMap::from([
            ("traefik.enable".to_owned(), "true".to_owned()),
            ("traefik.docker.network".to_owned(), edge_network.to_owned()),
            (format!("traefik.http.routers.{r}.rule"), self.rule.clone()),
            (format!("traefik.http.routers.{r}.entrypoints"), self.entrypoint.to_owned()),
            (format!("traefik.http.routers.{r}.service"), r.clone()),
            (format!("traefik.http.services.{r}.loadbalancer.server.port"), self.port.to_string()),
        ]);
        if let Some(resolver) = self.cert_resolver {
            labels.insert(format!("traefik.http.routers.{r}.tls"), "true".to_owned());
            labels.insert(format!("traefik.http.routers.{r}.tls.certresolver"), resolver.to_owned());
        }
        labels
    }
}

/// Removes the user's `traefik.*` labels; returns their keys.
pub(super) fn drop_user_routing_labels(labels: &mut BTreeMap<String, String>) -> Vec<String> {
    let dropped: Vec<String> = labels.keys().filter(|k| k.starts_with(ROUTING_PREFIX)).cloned().collect();
    labels.retain(|k, _| !k.starts_with(ROUTING_PREFIX));
    dropped
}

/// A router name: the project (already `[a-z0-9-]`) and the service name
/// with `.`, `_` and capitals made `-`/lowercase (a `.` would split the
/// label key); a short digest of the original name keeps two services
/// that map to the same text apart.
fn router_name(project: &str, service: &str) -> String {
    let plain: String = service
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect();
    if plain == service {
        format!("{project}-{plain}")
    } else {
        let digest = format!("{:x}", Sha256::digest(service.as_bytes()));
        format!("{project}-{plain}-{}", &digest[..8])
    }
}

fn unrouted(reason: impl Into<String>) -> Routing {
    Routing::Unrouted { reason: reason.into() }
}

/// The routing of service `name`. `Err` is a spec that cannot run (a
/// `svc/path_rule` that does not parse; validation refuses it earlier).
pub(super) fn routing(
    inputs: &Inputs<'_>,
    name: &str,
    service: &Service,
    container: &ContainerSpec,
) -> Result<Routing, String> {
    let Some(exposure) = inputs.definitions.iter().find(|d| d.name == name).map(|d| &d.exposure) else {
        return Ok(Routing::NotExposed);
    };
    if !exposure.enabled {
        return Ok(Routing::NotExposed);
    }
    if exposure.visibility.as_deref() == Some("internal") {
        return Ok(unrouted("visibility is internal: reachable by the Playground's own services only"));
    }
    let Some(port) = exposure.port else { return Ok(unrouted("the exposure has no port")) };
    let Some(domain) = inputs.domains.first() else {
        return Ok(unrouted("the Playroom has no domain: add one to route exposed services"));
    };
    if let Some(mode) = &container.network_mode {
        return Ok(unrouted(format!("network_mode `{mode}`: the container cannot join the edge network")));
    }
    let subdomain = inputs
        .playground
        .service_subdomains
        .get(name)
        .filter(|s| !s.is_empty())
        .or(exposure.subdomain.as_ref().filter(|s| !s.is_empty()))
        .cloned()
        .unwrap_or_else(|| dns_label(name));
    if subdomain.is_empty() {
        return Ok(unrouted("no subdomain, and the service name has no DNS-safe characters"));
    }
    if let Err(message) = check_label_value(LabelKind::Subdomain, &subdomain) {
        return Ok(unrouted(format!("subdomain `{subdomain}` {message}")));
    }
    let fqdn = if subdomain == "@" { domain.clone() } else { format!("{subdomain}.{domain}") };
    let host = Rule::Matcher { name: "Host", args: vec![fqdn.clone()] };
    let rule = match service.labels.get("svc/path_rule").filter(|r| !r.trim().is_empty()) {
        None => host.to_string(),
        Some(text) => {
            let path = check_path_rule(text).map_err(|e| format!("service `{name}`: svc/path_rule {e}"))?;
            format!("{host} && ({path})")
        }
    };
    let tls = inputs.acme_email.is_some_and(|e| !e.is_empty());
    Ok(Routing::Routed(Route {
        router: router_name(&inputs.playground.compose_project, name),
        fqdn,
        rule,
        port,
        entrypoint: if tls { ENTRYPOINT_HTTPS } else { ENTRYPOINT_HTTP },
        cert_resolver: tls.then_some(CERT_RESOLVER),
    }))
}

#[cfg(test)]
#[path = "exposure_tests.rs"]
mod tests;
