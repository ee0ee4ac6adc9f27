//! Exposure on a real host: a Playroom with a domain, a Playspec with an
//! exposed service (`svc/subdomain`, a `svc/path_rule` holding `||`) and a
//! `service_subdomains` override on another. Once `running`, no container
//! carries routing labels (the edge is configured through its admin API,
//! see `edge_e2e.rs`), `/debug` shows each route, routed containers (only
//! they) are on the shared edge network, two Playgrounds
//! converging at once share one edge network (a duplicate of its name, as
//! racing replicas can leave on engines before API 1.44, is removed), and
//! destroying them leaves it in place.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::docker::{ensure_busybox_image, remove_labelled};
use crate::support::sshd::Sshd;
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_core::metrics::Metrics;
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use play_reconcilers::playground::PlaygroundConfig;
use play_reconcilers::runtime::Config;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    command: ["httpd", "-f", "-p", "8080", "-h", "/www"]
    labels:
      svc/expose: "8080"
      svc/subdomain: shop
      svc/path_rule: "PathPrefix(`/api`) || Path(`/x`)"
  admin:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    labels:
      svc/expose: "9000"
  db:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
"#;

const DOMAIN: &str = "apps.example.test";

/// On drop (a failed assertion included): stops the reconcile runtime
/// first, so it cannot recreate anything, then removes everything of this
/// test's installation (containers, networks, the edge network included).
struct Cleanup {
    installation: String,
    runtime: Option<(CancellationToken, JoinHandle<()>)>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some((shutdown, task)) = self.runtime.take() {
            shutdown.cancel();
            task.abort();
            // Let an engine call already under way finish.
            std::thread::sleep(Duration::from_secs(1));
        }
        remove_labelled(&format!("dev.play.installation={}", self.installation));
    }
}

fn docker_json(args: &[&str]) -> Value {
    let out = crate::support::run(Command::new("docker").args(args));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn labels(container: &str) -> BTreeMap<String, String> {
    serde_json::from_value(docker_json(&["inspect", "-f", "{{json .Config.Labels}}", container])).unwrap()
}

fn routing_labels(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels.iter().filter(|(k, _)| k.starts_with("traefik.")).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn networks_of(container: &str) -> Vec<String> {
    let networks = docker_json(&["inspect", "-f", "{{json .NetworkSettings.Networks}}", container]);
    networks.as_object().unwrap().keys().cloned().collect()
}

/// Ids of the networks named exactly `name`.
fn networks_named(name: &str) -> Vec<String> {
    let out = crate::support::run(Command::new("docker").args([
        "network",
        "ls",
        "--filter",
        &format!("name={name}"),
        "--format",
        "{{.ID}} {{.Name}}",
    ]));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, n)| *n == name)
        .map(|(id, _)| id.to_owned())
        .collect()
}

/// Creates a network through the engine's API without `CheckDuplicate`;
/// returns its id.
fn create_unchecked_network(name: &str, installation: &str) -> String {
    crate::support::require_binary("/usr/bin/curl", "curl");
    let body =
        json!({"Name": name, "Labels": {"dev.play.installation": installation, "dev.play.edge": "true"}}).to_string();
    let out = crate::support::run(Command::new("curl").args([
        "-sf",
        "--unix-socket",
        "/var/run/docker.sock",
        "-H",
        "Content-Type: application/json",
        "-d",
        &body,
        "http://localhost/networks/create",
    ]));
    let created: Value = serde_json::from_slice(&out.stdout).unwrap();
    created["Id"].as_str().unwrap().to_owned()
}

async fn wait_for(app: &TestApp, id: i64, what: &str, ok: impl Fn(StatusCode, &Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let r = app.get(&format!("/api/playgrounds/{id}"), &app.admin).await;
        if ok(r.status, &r.body) {
            return r.body;
        }
        if Instant::now() >= deadline {
            let status = app.get(&format!("/api/playgrounds/{id}/status"), &app.admin).await;
            panic!("timed out waiting for {what}: {} {}\nstatus: {}", r.status, r.text, status.text);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn running(status: StatusCode, body: &Value) -> bool {
    status == StatusCode::OK && body["status"] == "running"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exposed_services_share_one_edge_network_without_routing_labels() {
    ensure_busybox_image();
    let sshd = Sshd::start();
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(10)), Arc::new(Metrics::new()));
    let app = TestApp::with(TestApp::default_config(), Arc::new(gateway.clone())).await;
    let mut room = sshd.playroom_body("box");
    room["playroom"]["domains"] = json!([DOMAIN]);
    room["playroom"]["acme_email"] = json!("ops@example.test");
    // Routes exist with the edge on; no edge loop runs here.
    room["playroom"]["edge"] = json!({"enabled": true});
    let room = app.post("/api/playrooms", &app.admin, room).await;
    assert_eq!(room.status, StatusCode::CREATED, "{}", room.text);
    let spec = app
        .post("/api/playspecs", &app.admin, json!({"playspec": {"name": "shop", "base_compose_yaml": COMPOSE}}))
        .await;
    assert_eq!(spec.status, StatusCode::CREATED, "{}", spec.text);
    let mut ids = Vec::new();
    for (name, admin) in [("pr-1", "admin-pr-1"), ("pr-2", "admin-pr-2")] {
        let pg = app
            .post(
                "/api/playgrounds",
                &app.admin,
                json!({"playground": {"name": name, "playspec_id": spec.body["id"], "playroom_id": room.body["id"],
                       "service_subdomains": {"admin": admin}}}),
            )
            .await;
        assert_eq!(pg.status, StatusCode::CREATED, "{}", pg.text);
        ids.push((pg.body["id"].as_i64().unwrap(), pg.body["compose_project"].as_str().unwrap().to_owned()));
    }
    let installation = play_store::playgrounds::get(app.store(), app.account_id, ids[0].0).await.unwrap().installation;
    let mut cleanup = Cleanup { installation: installation.clone(), runtime: None };
    let edge = play_model::desired::edge_network_name(&installation, room.body["id"].as_i64().unwrap());

    // Two networks of the edge network's name, as a race between replicas
    // leaves them (the engine's API only refuses a duplicate name when
    // asked to, and the CLI always asks): the older one is kept.
    let duplicates: Vec<String> = (0..2).map(|_| create_unchecked_network(&edge, &installation)).collect();
    assert_eq!(networks_named(&edge).len(), 2);

    // Both Playgrounds converge at once.
    let shared = crate::support::world::shared(&app, &gateway);
    let playgrounds =
        shared.playgrounds(PlaygroundConfig { poll_interval: Duration::from_millis(300), ..Default::default() });
    let config = Config { resync_every: Duration::from_millis(500), ..Config::default() };
    let runtime = shared.runtime(playgrounds, config, "local");
    let shutdown = CancellationToken::new();
    cleanup.runtime = Some((shutdown.clone(), tokio::spawn(runtime.run(shutdown.clone()))));
    for (id, _) in &ids {
        wait_for(&app, *id, "running", running).await;
    }
    assert_eq!(networks_named(&edge), [duplicates[0][..12].to_owned()], "one edge network, the older");
    let edge_labels: BTreeMap<String, String> =
        serde_json::from_value(docker_json(&["network", "inspect", "-f", "{{json .Labels}}", &edge])).unwrap();
    assert_eq!(edge_labels.get("dev.play.installation"), Some(&installation));
    assert_eq!(edge_labels.get("dev.play.edge").map(String::as_str), Some("true"));
    assert!(!edge_labels.contains_key("dev.play.playground"), "{edge_labels:?}");

    let (id, project) = &ids[0];
    let container = |service: &str| format!("{project}-{service}-1");
    let web = labels(&container("web"));
    assert!(routing_labels(&web).is_empty(), "{web:?}");
    assert!(routing_labels(&labels(&container("admin"))).is_empty());
    assert!(routing_labels(&labels(&container("db"))).is_empty());
    assert!(networks_of(&container("web")).contains(&edge), "{:?}", networks_of(&container("web")));
    assert!(networks_of(&container("admin")).contains(&edge));
    assert!(!networks_of(&container("db")).contains(&edge), "db is not exposed");

    // /compose and /debug show the same labels and hashes as the host.
    let compose = app.get(&format!("/api/playgrounds/{id}/compose"), &app.admin).await;
    assert_eq!(compose.status, StatusCode::OK, "{}", compose.text);
    let yaml = compose.body["compose_yaml"].as_str().unwrap();
    let (report, model) = play_model::compose::parse_rendered(yaml);
    assert!(report.valid, "{:?}", report.errors);
    let model = model.unwrap();
    for service in ["web", "admin", "db"] {
        let shown: BTreeMap<String, String> = model.services[service].labels.clone().into_iter().collect();
        assert_eq!(routing_labels(&shown), routing_labels(&labels(&container(service))), "{service}");
    }
    let debug = app.get(&format!("/api/playgrounds/{id}/debug"), &app.admin).await;
    assert_eq!(debug.body["generated_compose_yaml"], compose.body["compose_yaml"]);
    assert_eq!(debug.body["edge_network"], edge);
    for service in debug.body["services_configuration"].as_array().unwrap() {
        let name = service["name"].as_str().unwrap();
        let on_host = labels(&container(name));
        assert_eq!(service["config_hash"], on_host["com.docker.compose.config-hash"], "{name}");
    }
    let web_debug = debug.body["services_configuration"].as_array().unwrap().iter().find(|s| s["name"] == "web");
    assert_eq!(
        web_debug.unwrap()["exposure"]["rule"],
        format!("Host(`shop.{DOMAIN}`) && (PathPrefix(`/api`) || Path(`/x`))")
    );
    let admin_debug = debug.body["services_configuration"].as_array().unwrap().iter().find(|s| s["name"] == "admin");
    assert_eq!(admin_debug.unwrap()["exposure"]["fqdn"], format!("admin-pr-1.{DOMAIN}"));

    // Docker Compose reads the document (1.29 predates the top-level
    // `name:`, so it gets the project with -p instead).
    let without_name: String = yaml.lines().filter(|l| !l.starts_with("name:")).map(|l| format!("{l}\n")).collect();
    let mut child = Command::new("docker-compose")
        .args(["-p", project, "-f", "-", "config", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), without_name.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "docker-compose config: {}\n{without_name}", String::from_utf8_lossy(&out.stderr));

    // Destroying both Playgrounds leaves the edge network in place.
    for (id, _) in &ids {
        let r = app.delete(&format!("/api/playgrounds/{id}"), &app.admin).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    }
    for (id, _) in &ids {
        wait_for(&app, *id, "the row to be deleted", |status, _| status == StatusCode::NOT_FOUND).await;
    }
    for (_, project) in &ids {
        assert_eq!(crate::support::docker::project_containers(project), Vec::<String>::new());
    }
    assert_eq!(networks_named(&edge).len(), 1, "the edge network outlives the Playgrounds");
    if let Some((shutdown, task)) = cleanup.runtime.take() {
        shutdown.cancel();
        task.await.unwrap();
    }
}
