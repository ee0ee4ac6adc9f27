//! TLS on the edge end to end, one Playroom with the domain `apps.test`
//! per test, Debian's Caddy as the edge image, `curl` as the client:
//! - `tls: auto` with an `acme_email`: the edge gets its certificate from
//!   a real ACME server (pebble, on the edge network, HTTP-01 validated on
//!   the edge's HTTP port, names resolved by pebble's DNS test server);
//!   the HTTPS URL answers with a chain that verifies against pebble's
//!   root, HTTP redirects there, and HTTP/3 is published where Caddy
//!   advertises it;
//! - `tls: internal` without one: HTTPS with a certificate from Caddy's
//!   local authority, which the edge does not try to install in its own
//!   trust store;
//! - `tls: off`: plain HTTP only.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::caddy::{edge_config, ensure_caddy_image};
use crate::support::pebble::{self, Pebble};
use crate::support::world::{Running, World, inspect};
use crate::support::{free_port, wait_until};
use play_model::edge::TlsMode;
use play_model::edge::settings::EdgeChanges;
use play_model::model::playroom::PlayroomFields;
use play_reconcilers::edge::EdgeConfig;
use serde_json::{Value, json};

const COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    command: ["sh", "-c", "echo served-by-web > /www/index.html && exec httpd -f -p 8080 -h /www"]
    labels:
      svc/expose: "8080"
"#;
const DOMAIN: &str = "apps.test";
/// The service's host: its name under the Playroom's domain.
const HOST: &str = "web.apps.test";

/// A Playroom under [`DOMAIN`] with its edge on free ports.
struct Edge {
    world: World,
    http_port: u16,
    https_port: u16,
    admin_dir: tempfile::TempDir,
}

impl Edge {
    async fn start(tls: TlsMode, acme_email: Option<&str>) -> Edge {
        ensure_caddy_image();
        crate::support::require_binary("/usr/bin/curl", "curl");
        let world = World::start().await;
        let (http_port, https_port) = (free_port(), free_port());
        world
            .update_playroom(PlayroomFields {
                domains: Some(vec![DOMAIN.to_owned()]),
                acme_email: Some(acme_email.map(str::to_owned)),
                edge: Some(EdgeChanges {
                    enabled: Some(true),
                    http_port: Some(http_port),
                    https_port: Some(https_port),
                    tls: Some(tls),
                }),
                ..PlayroomFields::default()
            })
            .await;
        Edge { world, http_port, https_port, admin_dir: tempfile::tempdir().unwrap() }
    }

    fn runtimes(&self, acme: Option<&Pebble>) -> (Running, Running) {
        self.world.runtimes_with_edge(EdgeConfig {
            acme_directory: acme.map(|_| pebble::DIRECTORY.to_owned()),
            acme_root: acme.map(Pebble::listener_root),
            ..edge_config(self.admin_dir.path())
        })
    }

    /// Launches the Playground and waits until it runs: the exposure of
    /// its service as `/debug` shows it.
    async fn launch(&self) -> Value {
        let spec = self.world.playspec("tls", COMPOSE).await;
        let created = self.world.playground("tls-1", spec, json!({})).await;
        let id = created["id"].as_i64().unwrap();
        self.world.wait_for(id, "running", |status, body| status.is_success() && body["status"] == "running").await;
        let debug = self.world.app.get(&format!("/api/playgrounds/{id}/debug"), &self.world.app.admin).await;
        let exposure = debug.body["services_configuration"][0]["exposure"].clone();
        assert_eq!(exposure["fqdn"], HOST, "{exposure}");
        assert_eq!(exposure["routed"], true, "{exposure}");
        exposure
    }

    fn https_url(&self, path: &str) -> String {
        format!("https://{HOST}:{}{path}", self.https_port)
    }

    /// `curl` to [`HOST`] on 127.0.0.1 (either port), with `extra` options.
    fn curl(&self, extra: &[&str], url: &str) -> Output {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "--max-time", "5"]);
        for port in [self.http_port, self.https_port] {
            cmd.args(["--resolve", &format!("{HOST}:{port}:127.0.0.1")]);
        }
        cmd.args(extra).arg(url).output().unwrap()
    }

    /// Waits a few check intervals and asserts that Caddy was loaded one
    /// config only (the one with the route): the config it keeps reads back
    /// equal to play's, so passes touch nothing. Answers the edge's logs.
    async fn loaded_once(&self) -> String {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let logs = self.edge_logs();
        assert_eq!(logs.matches(r#""uri":"/load""#).count(), 1, "{logs}");
        logs
    }

    fn edge_logs(&self) -> String {
        let out = Command::new("docker").args(["logs", &self.world.edge_container()]).output().unwrap();
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Seconds between the `ts` of Caddy's first log line saying `from` and
/// the first saying `to`.
fn logged_interval(logs: &str, from: &str, to: &str) -> Option<f64> {
    let ts = |msg: &str| {
        logs.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["msg"] == msg)
            .and_then(|l| l["ts"].as_f64())
    };
    Some(ts(to)? - ts(from)?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tls_auto_with_an_acme_email_gets_a_certificate_from_pebble_by_http_01() {
    let edge = Edge::start(TlsMode::Auto, Some("ops@apps.test")).await;
    let network = edge.world.create_edge_network();
    let pebble = Pebble::start(&edge.world.installation, &network, edge.http_port);
    let _runtimes = edge.runtimes(Some(&pebble));

    // The edge exists from the first pass, before any route: the test's
    // DNS points the host at it before a certificate is asked for.
    let edge_name = edge.world.edge_container();
    wait_until("the edge container runs", Duration::from_secs(30), || async {
        Command::new("docker")
            .args(["inspect", "--format", "{{.State.Running}}", &edge_name])
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"true"))
    })
    .await;
    let address = inspect(&edge_name, &format!("{{{{(index .NetworkSettings.Networks \"{network}\").IPAddress}}}}"));
    assert!(!address.is_empty(), "the edge has an address on {network}");
    pebble.add_a(HOST, &address);

    assert_eq!(edge.launch().await["tls"], true);
    let url = edge.https_url("/");
    let running_at = Instant::now();
    let root = pebble.issuance_root();
    let verified = |out: &Output| out.status.success() && out.stdout == b"served-by-web\n";
    let waited = Duration::from_secs(60);
    let started = Instant::now();
    while !verified(&edge.curl(&["--cacert", root.to_str().unwrap()], &url)) {
        assert!(
            started.elapsed() < waited,
            "no HTTPS answer verified by pebble's root within {waited:?}\nedge:\n{}\n{}",
            edge.edge_logs(),
            pebble.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let logs = edge.edge_logs();
    let issuance = logged_interval(&logs, "obtaining certificate", "certificate obtained successfully");
    println!(
        "running -> HTTPS verified: {:?}; Caddy's issuance (obtaining -> obtained): {:?} s",
        running_at.elapsed(),
        issuance.unwrap()
    );
    assert!(logs.contains(r#""challenge_type":"http-01""#), "HTTP-01 was the challenge: {logs}");

    // The chain: the leaf for the host, from pebble's intermediate, verified
    // up to the root pebble issues under (and not without it).
    let out = edge.curl(&["-v", "-o", "/dev/null", "--cacert", root.to_str().unwrap()], &url);
    let tls = stderr(&out);
    assert!(tls.contains(&format!("subject: CN={HOST}")), "{tls}");
    assert!(tls.contains("issuer: CN=Pebble Intermediate CA"), "{tls}");
    assert!(tls.contains("SSL certificate verify ok"), "{tls}");
    let chain = openssl_chain(edge.https_port);
    assert_eq!(chain.len(), 2, "leaf and intermediate: {chain:?}");
    assert!(chain[1].0.starts_with("CN = Pebble Intermediate CA") && chain[1].1.starts_with("CN = Pebble Root CA"));
    let other_root = edge.curl(&["--cacert", pebble.listener_root().to_str().unwrap()], &url);
    assert_eq!(other_root.status.code(), Some(60), "another root does not verify it: {}", stderr(&other_root));

    // HTTP redirects to HTTPS on the Playroom's HTTPS port, path and query kept.
    let redirect = edge.curl(
        &["-o", "/dev/null", "-w", "%{http_code} %{redirect_url}"],
        &format!("http://{HOST}:{}/a/b?c=d", edge.http_port),
    );
    let expected = format!("308 {}", edge.https_url("/a/b?c=d"));
    assert_eq!(String::from_utf8_lossy(&redirect.stdout), expected);

    // Caddy advertises HTTP/3 on the HTTPS port; the container publishes it.
    let headers = edge.curl(&["-D-", "-o", "/dev/null", "--cacert", root.to_str().unwrap()], &url);
    let alt_svc = format!("h3=\":{}\"", edge.https_port);
    assert!(String::from_utf8_lossy(&headers.stdout).contains(&alt_svc), "{headers:?}");
    let udp =
        crate::support::run(Command::new("docker").args(["port", &edge_name, &format!("{}/udp", edge.https_port)]));
    assert!(!udp.stdout.is_empty(), "the HTTPS port is published on UDP");
    edge.loaded_once().await;
}

/// `(subject, issuer)` of each certificate the edge presents for [`HOST`].
fn openssl_chain(port: u16) -> Vec<(String, String)> {
    let out = Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}"), "-servername", HOST, "-showcerts"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut chain = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if let Some((_, subject)) = line.split_once(" s:")
            && let Some(issuer) = lines.next().and_then(|l| l.strip_prefix("i:"))
        {
            chain.push((subject.to_owned(), issuer.to_owned()));
        }
    }
    chain
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tls_internal_serves_https_from_caddys_local_authority() {
    let edge = Edge::start(TlsMode::Internal, None).await;
    let _runtimes = edge.runtimes(None);
    assert_eq!(edge.launch().await["tls"], true);
    let url = edge.https_url("/");
    // `-k`: nothing outside the edge trusts its local authority.
    wait_until("the HTTPS URL answers", Duration::from_secs(30), || async {
        let out = edge.curl(&["-k"], &url);
        out.status.success() && out.stdout == b"served-by-web\n"
    })
    .await;
    let tls = stderr(&edge.curl(&["-k", "-v", "-o", "/dev/null"], &url));
    assert!(tls.contains("issuer: CN=Caddy Local Authority"), "{tls}");
    // Without `-k`, the certificate is not trusted.
    assert_eq!(edge.curl(&[], &url).status.code(), Some(60));
    let redirect = edge.curl(&["-o", "/dev/null", "-w", "%{http_code}"], &format!("http://{HOST}:{}/", edge.http_port));
    assert_eq!(String::from_utf8_lossy(&redirect.stdout), "308");
    let logs = edge.loaded_once().await;
    assert!(!logs.contains("failed to install root certificate"), "{logs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tls_off_serves_plain_http_only() {
    // An e-mail does not turn HTTPS on when TLS is off.
    let edge = Edge::start(TlsMode::Off, Some("ops@apps.test")).await;
    let _runtimes = edge.runtimes(None);
    assert_eq!(edge.launch().await["tls"], false);
    let url = format!("http://{HOST}:{}/", edge.http_port);
    wait_until("the HTTP URL answers", Duration::from_secs(30), || async {
        let out = edge.curl(&[], &url);
        out.status.success() && out.stdout == b"served-by-web\n"
    })
    .await;
    // Nothing listens for TLS: no server on the HTTPS port in Caddy.
    let https = edge.curl(&["-k"], &edge.https_url("/"));
    assert!(!https.status.success(), "HTTPS answered with TLS off: {https:?}");
}
