use serde_json::json;

use super::*;
use crate::edge::waking::Sleeping;
use crate::routing::PathRule;
use crate::routing::route::Target;

fn route(id: &str, fqdn: &str, path_rule: Option<&str>, https: bool) -> Route {
    let path_rule = path_rule.map(|text| PathRule::check(text).unwrap());
    let target =
        Target { id: id.into(), port: 8080, upstream: format!("{id}-1"), https, url: format!("http://{fqdn}/") };
    Route::new(fqdn.into(), path_rule.as_ref(), target)
}

fn config(routes: &[Route], acme: Acme) -> Value {
    caddy_config(&EdgeConfig { settings: EdgeSettings::default(), acme, routes, sleep: &Sleeping::default() })
}

fn route_ids(config: &Value, server: &str) -> Vec<String> {
    config["apps"]["http"]["servers"][server]["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["@id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn http_routes_proxy_to_the_container_and_end_in_a_404() {
    let routes = [
        route("p-web", "web-1.localhost", None, false),
        route("p-api", "web-1.localhost", Some("PathPrefix(`/api`)"), false),
    ];
    let c = config(&routes, Acme::default());
    // The longer rule first, the 404 last; no https server, no tls app.
    assert_eq!(route_ids(&c, "http"), ["p-api", "p-web", "play-not-found"]);
    assert!(c["apps"]["http"]["servers"].get("https").is_none());
    assert!(c["apps"].get("tls").is_none());
    assert!(c["apps"].get("pki").is_none());
    let api = &c["apps"]["http"]["servers"]["http"]["routes"][0];
    assert_eq!(api["match"][0]["host"], json!(["web-1.localhost"]));
    assert!(api["match"][0].get("path_regexp").is_some(), "{api}");
    assert_eq!(api["handle"][0]["upstreams"][0]["dial"], "p-api-1:8080");
    assert_eq!(c["apps"]["http"]["servers"]["http"]["listen"], json!([":80"]));
    assert_eq!(c["admin"]["listen"], format!("unix/{ADMIN_SOCKET}"));
}

#[test]
fn https_routes_get_their_server_a_redirect_and_a_certificate_policy() {
    let routes = [route("p-web", "shop.example.com", None, true), route("p-x", "x-1.localhost", None, false)];
    let acme = Acme {
        email: Some("ops@example.com".into()),
        directory: Some("https://pebble:14000/dir".into()),
        trusted_roots: vec!["/etc/play-edge/acme-root.pem".into()],
    };
    let c = config(&routes, acme);
    assert_eq!(route_ids(&c, "http"), ["p-x", "play-https-redirect", "play-not-found"]);
    assert_eq!(route_ids(&c, "https"), ["p-web", "play-not-found"]);
    let policy = &c["apps"]["tls"]["automation"]["policies"][0];
    assert_eq!(policy["subjects"], json!(["shop.example.com"]));
    assert_eq!(policy["issuers"][0]["module"], "acme");
    assert_eq!(policy["issuers"][0]["email"], "ops@example.com");
    assert_eq!(policy["issuers"][0]["ca"], "https://pebble:14000/dir");
    assert_eq!(policy["issuers"][0]["trusted_roots_pem_files"], json!(["/etc/play-edge/acme-root.pem"]));
    // HTTP-01 only: TLS-ALPN would be validated on port 443 of the host.
    assert_eq!(policy["issuers"][0]["challenges"], json!({"tls-alpn": {"disabled": true}}));
    assert!(c["apps"].get("pki").is_none(), "no internal CA with ACME: {c}");
}

#[test]
fn the_internal_ca_issues_without_an_email_and_installs_no_trust_in_the_container() {
    let routes = [route("p-web", "shop.example.com", None, true)];
    let c = config(&routes, Acme::default());
    let policy = &c["apps"]["tls"]["automation"]["policies"][0];
    assert_eq!(policy["subjects"], json!(["shop.example.com"]));
    assert_eq!(policy["issuers"], json!([{"module": "internal"}]));
    // Caddy would otherwise try (and fail) to add its root to the
    // container's trust store at every start.
    assert_eq!(c["apps"]["pki"], json!({"certificate_authorities": {"local": {"install_trust": false}}}));
}

#[test]
fn only_https_hosts_are_certificate_subjects_and_the_http_server_stays_plain() {
    let routes = [
        route("p-b", "b.example.com", None, true),
        route("p-a", "a.example.com", Some("PathPrefix(`/x`)"), true),
        route("p-a2", "a.example.com", None, true),
        route("p-x", "x-1.localhost", None, false),
    ];
    let c = config(&routes, Acme { email: Some("ops@example.com".into()), ..Acme::default() });
    let policies = c["apps"]["tls"]["automation"]["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 1);
    assert_eq!(policies[0]["subjects"], json!(["a.example.com", "b.example.com"]), "each host once, sorted");
    assert!(policies[0]["issuers"][0].get("ca").is_none(), "no directory: Caddy's default (Let's Encrypt)");
    let redirect = &c["apps"]["http"]["servers"]["http"]["routes"][1];
    assert_eq!(redirect["@id"], "play-https-redirect");
    assert_eq!(redirect["match"][0]["host"], json!(["a.example.com", "b.example.com"]));
    // The http server listens on the HTTP port only, which is what keeps
    // Caddy's automatic HTTPS (certificates, redirects) off its hosts; the
    // HTTP port Caddy knows is the same, so HTTP-01 is answered there.
    assert_eq!(c["apps"]["http"]["servers"]["http"]["listen"], json!([":80"]));
    assert_eq!(c["apps"]["http"]["http_port"], 80);
    assert_eq!(c["apps"]["http"]["https_port"], 443);
}

#[test]
fn the_order_and_hash_do_not_depend_on_the_order_routes_come_in() {
    let a = route("a", "a.localhost", None, false);
    let b = route("b", "b.localhost", None, false);
    let one = config(&[a.clone(), b.clone()], Acme::default());
    let two = config(&[b, a], Acme::default());
    assert_eq!(one, two);
    assert_eq!(config_hash(&one), config_hash(&two));
}

#[test]
fn the_redirect_names_a_non_default_https_port() {
    let routes = [route("p-web", "shop.example.com", None, true)];
    let settings = EdgeSettings { http_port: 18080, https_port: 18443, ..EdgeSettings::default() };
    let c = caddy_config(&EdgeConfig { settings, acme: Acme::default(), routes: &routes, sleep: &Sleeping::default() });
    let redirect = &c["apps"]["http"]["servers"]["http"]["routes"][0];
    assert_eq!(redirect["handle"][0]["headers"]["Location"][0], "https://{http.request.host}:18443{http.request.uri}");
    assert_eq!(c["apps"]["http"]["servers"]["https"]["listen"], json!([":18443"]));
}

#[test]
fn a_sleeping_playgrounds_route_wakes_it_holds_requests_and_logs_its_host() {
    let routes = [route("p-web", "web-1.localhost", None, false), route("q-web", "web-2.localhost", None, false)];
    let sleep =
        Sleeping { waking: [("p-web".to_owned(), 7)].into(), watched_hosts: ["web-1.localhost".to_owned()].into() };
    let c = caddy_config(&EdgeConfig {
        settings: EdgeSettings::default(),
        acme: Acme::default(),
        routes: &routes,
        sleep: &sleep,
    });
    let http = &c["apps"]["http"]["servers"]["http"];
    let sleeping = &http["routes"][0];
    assert_eq!(sleeping["@id"], "p-web");
    // Every answer closes its connection (the route switches on wake).
    assert_eq!(sleeping["handle"][0]["response"]["set"]["Connection"][0], "close");
    let steps = sleeping["handle"][1]["routes"].as_array().unwrap();
    // The quiet paths, the wake subrequest, bodies to the listener, the
    // waiting page, then the held proxy to the real container.
    assert_eq!(steps.len(), 5);
    assert_eq!(steps[1]["handle"][0]["rewrite"]["uri"], "/wake/7");
    assert_eq!(steps[4]["handle"][0]["upstreams"][0]["dial"], "p-web-1:8080");
    assert_eq!(steps[4]["handle"][0]["load_balancing"]["try_duration"], "30s");
    // The awake Playground's route is an ordinary proxy.
    assert_eq!(http["routes"][1]["handle"][0]["handler"], "reverse_proxy");
    assert_eq!(http["errors"]["routes"].as_array().unwrap().len(), 1);
    // A hold that failed: a browser's page load gets the waiting page (its
    // script shows the error), anything else the error; both close.
    let failed = http["errors"]["routes"][0]["handle"][0]["routes"].as_array().unwrap();
    assert!(failed[0]["match"][0]["header_regexp"]["Accept"].is_object());
    assert!(failed[0]["handle"][0]["body"].as_str().unwrap().contains("X-Play-Wake"));
    assert_eq!(failed[1]["handle"][0]["headers"]["X-Play-Sleeping"][0], "failed");
    assert!(failed.iter().all(|r| r["handle"][0]["close"] == true));
    assert_eq!(http["logs"]["logger_names"]["web-1.localhost"], "play");
    assert!(http["logs"]["logger_names"].get("web-2.localhost").is_none());
    assert!(c["apps"]["http"]["servers"]["play-wake"]["listen"][0].as_str().unwrap().ends_with("wake.sock"));
    assert_eq!(c["logging"]["logs"]["play-activity"]["writer"]["output"], "stdout");
    // Without sleep, none of it.
    let plain = config(&routes, Acme::default());
    assert!(plain.get("logging").is_none());
    assert!(plain["apps"]["http"]["servers"].get("play-wake").is_none());
    assert!(plain["apps"]["http"]["servers"]["http"].get("logs").is_none());
}
