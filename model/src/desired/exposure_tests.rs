use std::collections::BTreeMap;

use super::super::tests::playground;
use super::super::{Desired, Inputs, ServiceSpec, desired, model_for};
use super::*;
use crate::compose::{Policy, classify};
use crate::edge::TlsMode;
use crate::playground::model::Playground;
use crate::routing::rule::{Rule, parse};

const COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    labels:
      svc/expose: "8080"
      svc/subdomain: shop
      svc/path_rule: "PathPrefix(`/api`) || Path(`/x`)"
      traefik.enable: "true"
      traefik.http.routers.evil.rule: "Host(`bank.example.com`)"
  admin:
    image: play-test/busybox:1
    labels:
      svc/expose: "9000"
  db:
    image: play-test/busybox:1
    labels:
      svc/expose: "internal:5432"
  worker:
    image: play-test/busybox:1
"#;

const DOMAINS: &[&str] = &["apps.example.com", "other.example.com"];

fn domains() -> Vec<String> {
    DOMAINS.iter().map(|d| (*d).to_owned()).collect()
}

fn edge<'a>(domains: &'a [String], acme: Option<&'a str>) -> EdgeInputs<'a> {
    EdgeInputs { settings: EdgeSettings::default(), domains, acme_email: acme, local: false, host: "203.0.113.9" }
}

fn desired_for(p: &Playground, yaml: &str, domains: &[String], acme: Option<&str>) -> Desired {
    desired_with(p, yaml, edge(domains, acme))
}

fn desired_with(p: &Playground, yaml: &str, edge: EdgeInputs<'_>) -> Desired {
    let model = model_for(yaml, &Policy::UNTRUSTED, p).unwrap();
    let definitions = classify(&model);
    desired(&Inputs::new(p, &model).with_edge(edge).with_definitions(&definitions)).unwrap()
}

fn service<'a>(d: &'a Desired, name: &str) -> &'a ServiceSpec {
    d.services.iter().find(|s| s.name == name).unwrap()
}

fn route(s: &ServiceSpec) -> &Route {
    match &s.routing {
        Routing::Routed(route) => route,
        other => panic!("{} is not routed: {other:?}", s.name),
    }
}

fn traefik_labels(s: &ServiceSpec) -> BTreeMap<String, String> {
    s.container.labels.iter().filter(|(k, _)| k.starts_with("traefik.")).map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[test]
fn an_exposed_service_gets_a_route_and_the_edge_network_but_no_routing_labels() {
    let d = desired_for(&playground(&[]), COMPOSE, &domains(), None);
    let web = service(&d, "web");
    let r = route(web);
    assert_eq!(r.id, "play-3fa91c-7-pr-7-web");
    assert_eq!(r.fqdn, "shop.apps.example.com");
    assert_eq!(r.rule, "Host(`shop.apps.example.com`) && (PathPrefix(`/api`) || Path(`/x`))");
    assert_eq!(r.path_rule.as_deref(), Some("PathPrefix(`/api`) || Path(`/x`)"));
    assert_eq!(r.port, 8080);
    assert_eq!(r.upstream, "play-3fa91c-7-pr-7-web-1");
    assert!(!r.https);
    assert_eq!(r.url, "http://shop.apps.example.com/");
    assert!(traefik_labels(web).is_empty(), "the edge is configured through its API, not labels");
    assert_eq!(d.edge_network.as_deref(), Some("play-3fa91c-room1-edge"));
    // On the edge network without aliases; still on its project network.
    assert_eq!(web.container.networks["play-3fa91c-room1-edge"], Vec::<String>::new());
    assert_eq!(web.container.networks["play-3fa91c-7-pr-7_default"], ["web"]);
    // The user's own routing labels are dropped, and reported.
    assert_eq!(web.dropped_labels, ["traefik.enable", "traefik.http.routers.evil.rule"]);
    assert!(!web.container.labels.keys().any(|k| k.contains("evil")));
}

#[test]
fn the_path_rule_cannot_escape_the_host() {
    let d = desired_for(&playground(&[]), COMPOSE, &domains(), None);
    let rule = parse(&route(service(&d, "web")).rule).unwrap();
    // Top level: Host AND (the whole path rule), so `||` stays inside.
    let Rule::And(items) = rule else { panic!("not an And: {rule:?}") };
    assert_eq!(items.len(), 2);
    assert_eq!(items[0], Rule::Matcher { name: "Host", args: vec!["shop.apps.example.com".into()] });
    assert!(matches!(&items[1], Rule::Or(alts) if alts.len() == 2));
    // The Caddy matcher set validation made sits beside the host.
    let matcher = &route(service(&d, "web")).matcher;
    assert_eq!(matcher["host"], serde_json::json!(["shop.apps.example.com"]));
    assert!(matcher.contains_key("expression"), "{matcher:?}");

    // The rule is re-printed from its parse, never pasted: other case
    // forms and quoting come out canonical.
    let yaml = COMPOSE.replace("PathPrefix(`/api`) || Path(`/x`)", r#"pathprefix(\"/a\")"#);
    let d = desired_for(&playground(&[]), &yaml, &domains(), None);
    assert_eq!(route(service(&d, "web")).rule, "Host(`shop.apps.example.com`) && (PathPrefix(`/a`))");
}

#[test]
fn subdomains_overrides_at_and_defaults() {
    let mut p = playground(&[]);
    p.service_subdomains.insert("admin".into(), "@".into());
    p.service_subdomains.insert("web".into(), "shop-pr-7".into());
    let d = desired_for(&p, COMPOSE, &domains(), None);
    assert_eq!(route(service(&d, "web")).fqdn, "shop-pr-7.apps.example.com");
    let admin = route(service(&d, "admin"));
    assert_eq!(admin.fqdn, "apps.example.com", "`@` is the first domain itself");
    assert_eq!(admin.rule, "Host(`apps.example.com`)", "no path rule: the host alone");
    // Without an override, the definition's subdomain (the service name).
    let d = desired_for(&playground(&[]), COMPOSE, &domains(), None);
    assert_eq!(route(service(&d, "admin")).fqdn, "admin.apps.example.com");
}

#[test]
fn internal_and_unexposed_services_get_no_route() {
    let d = desired_for(&playground(&[]), COMPOSE, &domains(), None);
    for name in ["db", "worker"] {
        let s = service(&d, name);
        assert!(traefik_labels(s).is_empty(), "{name}");
        assert!(!s.container.networks.contains_key("play-3fa91c-room1-edge"), "{name}");
    }
    assert!(matches!(&service(&d, "db").routing, Routing::Unrouted { reason } if reason.contains("internal")));
    assert_eq!(service(&d, "worker").routing, Routing::NotExposed);
}

#[test]
fn without_a_domain_hosts_need_no_dns() {
    let p = playground(&[]);
    let local = desired_with(&p, COMPOSE, EdgeInputs { local: true, ..edge(&[], Some("ops@example.com")) });
    let web = route(service(&local, "web"));
    assert_eq!(web.fqdn, "shop-7.localhost");
    assert_eq!(web.url, "http://shop-7.localhost/", "never HTTPS: no CA certifies such names");
    let remote = desired_with(&p, COMPOSE, edge(&[], None));
    assert_eq!(route(service(&remote, "admin")).fqdn, "admin-7.203-0-113-9.sslip.io");
    let ports = EdgeSettings { http_port: 18080, ..EdgeSettings::default() };
    let high = desired_with(&p, COMPOSE, EdgeInputs { settings: ports, ..edge(&[], None) });
    assert_eq!(route(service(&high, "admin")).url, "http://admin-7.203-0-113-9.sslip.io:18080/");
}

#[test]
fn the_edge_off_or_a_named_host_without_a_domain_routes_nothing_and_debug_says_why() {
    let off = EdgeSettings { enabled: false, ..EdgeSettings::default() };
    let d = desired_with(&playground(&[]), COMPOSE, EdgeInputs { settings: off, ..edge(&domains(), None) });
    assert!(matches!(&service(&d, "web").routing, Routing::Unrouted { reason } if reason.contains("edge is off")));
    assert_eq!(d.edge_network, None);
    let d = desired_with(&playground(&[]), COMPOSE, EdgeInputs { host: "box.example.com", ..edge(&[], None) });
    assert_eq!(d.edge_network, None);
    for s in &d.services {
        assert!(traefik_labels(s).is_empty(), "{}", s.name);
        assert!(!s.container.networks.keys().any(|n| n.ends_with("-edge")), "{}", s.name);
    }
    assert!(
        matches!(&service(&d, "web").routing, Routing::Unrouted { reason } if reason.contains("add a domain")),
        "{:?}",
        service(&d, "web").routing
    );
    // Inputs without definitions expose nothing.
    let p = playground(&[]);
    let model = model_for(COMPOSE, &Policy::UNTRUSTED, &p).unwrap();
    let bare = desired(&Inputs::new(&p, &model)).unwrap();
    assert!(bare.services.iter().all(|s| s.routing == Routing::NotExposed));
}

#[test]
fn https_follows_the_edge_settings() {
    let d = desired_for(&playground(&[]), COMPOSE, &domains(), Some("ops@example.com"));
    let admin = route(service(&d, "admin"));
    assert!(admin.https);
    assert_eq!(admin.url, "https://admin.apps.example.com/");
    let plain = desired_for(&playground(&[]), COMPOSE, &domains(), None);
    assert!(!route(service(&plain, "admin")).https);
    let internal = EdgeSettings { tls: TlsMode::Internal, ..EdgeSettings::default() };
    let d = desired_with(&playground(&[]), COMPOSE, EdgeInputs { settings: internal, ..edge(&domains(), None) });
    assert!(route(service(&d, "admin")).https);
}

#[test]
fn a_changed_subdomain_moves_the_route_without_recreating_any_container() {
    let before = desired_for(&playground(&[]), COMPOSE, &domains(), None);
    let mut p = playground(&[]);
    p.service_subdomains.insert("web".into(), "other".into());
    let after = desired_for(&p, COMPOSE, &domains(), None);
    for (b, a) in before.services.iter().zip(&after.services) {
        assert_eq!(b.config_hash, a.config_hash, "{}", b.name);
    }
    assert_eq!(route(service(&after, "web")).fqdn, "other.apps.example.com");
}

#[test]
fn network_mode_services_cannot_be_routed() {
    let yaml = "services:\n  app:\n    image: x\n  side:\n    image: x\n    network_mode: \"service:app\"\n    labels:\n      svc/expose: \"80\"\n";
    let d = desired_for(&playground(&[]), yaml, &domains(), None);
    assert!(matches!(&service(&d, "side").routing, Routing::Unrouted { reason } if reason.contains("network_mode")));
    assert_eq!(d.edge_network, None);
}

#[test]
fn router_names_are_unique_and_label_safe() {
    assert_eq!(router_name("play-3fa91c-7-pr", "web"), "play-3fa91c-7-pr-web");
    let dotted = router_name("p", "my.api");
    let dashed = router_name("p", "my-api");
    assert!(dotted.starts_with("p-my-api-") && dotted.len() == "p-my-api-".len() + 8, "{dotted}");
    assert_ne!(dotted, dashed);
    assert!(!dotted.contains('.'));
    assert_eq!(edge_network_name("3fa91c0d4e5f", 1), "play-3fa91c-room1-edge");
}

#[test]
fn a_path_rule_label_that_validation_did_not_check_is_not_routed() {
    let p = playground(&[]);
    let mut model = model_for(COMPOSE, &Policy::UNTRUSTED, &p).unwrap();
    let definitions = classify(&model);
    let web = model.services.get_mut("web").unwrap();
    assert!(web.path_rule.is_some(), "validation keeps the parsed rule in the model");
    web.path_rule = None;
    let domains = domains();
    let inputs = Inputs::new(&p, &model).with_edge(edge(&domains, None)).with_definitions(&definitions);
    let err = desired(&inputs).unwrap_err();
    assert!(err.contains("svc/path_rule was not checked at validation"), "{err}");
}

#[test]
fn the_routes_of_a_desired_state_are_its_routed_services() {
    let d = desired_for(&playground(&[]), COMPOSE, &domains(), None);
    let routes = d.routes();
    // `db` is internal and `worker` not exposed: no route for either.
    assert_eq!(routes.keys().collect::<Vec<_>>(), ["admin", "web"]);
    assert_eq!(&routes["web"], route(service(&d, "web")));
}
