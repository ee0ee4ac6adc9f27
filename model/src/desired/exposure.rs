//! Routing of exposed services: the route the Playroom's edge (Caddy, see
//! `crate::edge`) serves for a service, and the shared edge network the
//! edge reaches the service's container on.
//!
//! Decisions (see `docs/decisions/edge.md`, "Exposure", and `docs/edge.md`):
//! - Only services whose definition has `exposure.enabled` and visibility
//!   `external` are routed. `internal` means reachable by the Playground's
//!   own services only (its project networks): no route, no edge network.
//! - The host is `<subdomain>.<first domain of the Playroom>`; the subdomain
//!   is the Playground's `service_subdomains` entry, else the definition's,
//!   else the service name as a DNS label; `@` is the domain itself. A
//!   Playroom without domains gets hosts from [`crate::edge::hosts`].
//! - `svc/path_rule` was parsed and translated into Caddy matchers at
//!   validation (the Compose model carries the [`PathRule`]); the route
//!   keeps that matcher set beside the host matcher ([`Route::new`]) and
//!   the rule's canonical text for display, so whatever the rule holds
//!   (`||` included) a request must match the host, and nothing parses the
//!   label again.
//! - The edge off, no port, a `network_mode`, or a subdomain that is not a
//!   DNS label: no route, and the reason is kept for `/debug`.
//! - HTTPS under the Playroom's domains as its edge settings say
//!   ([`EdgeSettings::https_for_domains`]); hosts without a domain are
//!   plain HTTP.
//! - Users' `traefik.*` labels are dropped (and listed in `/debug`): play
//!   routes, and a Traefik an operator runs on the host must not pick up a
//!   tenant's routers.
//!
//! [`PathRule`]: crate::routing::PathRule

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{ContainerSpec, Desired, Inputs};
use crate::compose::classify::dns_label;
use crate::compose::model::Service;
use crate::compose::svc::{LabelKind, check_label_value};
use crate::edge::EdgeSettings;
use crate::edge::hosts;
use crate::playground::model::container_name;
use crate::routing::Route;
use crate::routing::route::Target;

/// Label keys under this prefix are dropped from users' services.
const ROUTING_PREFIX: &str = "traefik.";

/// The edge network of a Playroom on its engine:
/// `play-<first 6 characters of the installation>-room<playroom id>-edge`.
/// One per Playroom (a Playroom is one account's), joined by that
/// Playroom's routed containers and its edge container only: a routed
/// container reaches its own account's routed services and the edge,
/// never another account's on the same engine (issue #27, item 4: one
/// network per installation let it reach them all on every port). The
/// installation keeps installations sharing an engine apart.
pub fn edge_network_name(installation: &str, playroom_id: i64) -> String {
    let short: String = installation.chars().take(6).collect();
    format!("play-{short}-room{playroom_id}-edge")
}

/// The one edge network per installation of versions before issue #27:
/// removed by the sweep once nothing is attached to it.
pub fn legacy_edge_network_name(installation: &str) -> String {
    let short: String = installation.chars().take(6).collect();
    format!("play-{short}-edge")
}

/// What routes are made from: the Playroom's edge settings and addresses.
#[derive(Clone, Copy, Debug)]
pub struct EdgeInputs<'a> {
    pub settings: EdgeSettings,
    /// The Playroom's domains; routes use the first.
    pub domains: &'a [String],
    pub acme_email: Option<&'a str>,
    /// Whether the Playroom is play's own engine (hosts without a domain
    /// go under `localhost`).
    pub local: bool,
    /// The Playroom's host address (hosts without a domain are made from it).
    pub host: &'a str,
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

impl Desired {
    /// The routes of the routed services, by service: the one reading of a
    /// Playground's routes, for the edge loop (which keeps the running
    /// services' and points them at the serving container) and the API's
    /// URL views. Only [`routing`] works a route out.
    pub fn routes(&self) -> BTreeMap<String, Route> {
        self.services
            .iter()
            .filter_map(|s| match &s.routing {
                Routing::Routed(route) => Some((s.name.clone(), route.clone())),
                Routing::NotExposed | Routing::Unrouted { .. } => None,
            })
            .collect()
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
/// `svc/path_rule` label in a model that did not come from validation).
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
    let Some(edge) = inputs.edge else {
        return Ok(unrouted("the Playroom has no edge settings"));
    };
    if !edge.settings.enabled {
        return Ok(unrouted(
            "the Playroom's edge is off (playroom.edge.enabled): turn it on to route exposed services",
        ));
    }
    let Some(port) = exposure.port else { return Ok(unrouted("the exposure has no port")) };
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
    let (fqdn, https) = match edge.domains.first() {
        Some(domain) if subdomain == "@" => (domain.clone(), edge.settings.https_for_domains(edge.acme_email)),
        Some(domain) => (format!("{subdomain}.{domain}"), edge.settings.https_for_domains(edge.acme_email)),
        None => {
            let base = match hosts::fallback_base(edge.local, edge.host) {
                Ok(base) => base,
                Err(reason) => return Ok(unrouted(reason)),
            };
            let label = if subdomain == "@" { dns_label(name) } else { subdomain };
            (hosts::fallback_host(&label, inputs.playground.id, &base), false)
        }
    };
    // Validation parsed a non-empty rule into `service.path_rule`; a model
    // that skipped validation cannot be routed.
    let labelled = service.labels.get("svc/path_rule").is_some_and(|r| !r.trim().is_empty());
    if labelled && service.path_rule.is_none() {
        return Err(format!("service `{name}`: svc/path_rule was not checked at validation"));
    }
    let target = Target {
        id: router_name(&inputs.playground.compose_project, name),
        url: hosts::url(https, &fqdn, &edge.settings),
        port,
        upstream: container_name(&inputs.playground.compose_project, name),
        https,
    };
    Ok(Routing::Routed(Route::new(fqdn, service.path_rule.as_ref(), target)))
}

#[cfg(test)]
#[path = "exposure_tests.rs"]
mod tests;
