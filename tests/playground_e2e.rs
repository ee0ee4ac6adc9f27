//! Playgrounds converged on a real host: the API records desired state, the
//! Playground reconciler (under the reconcile runtime, leases in the store)
//! makes it true over the harness's sshd on the machine's Docker engine.
//!
//! Covered: a 3-service Playground (web healthy-gated on db, a worker)
//! goes in_progress -> running with every service healthy and listed by
//! `docker-compose -p`; a crash mid-creation (the runtime aborted, leases not
//! released) followed by another replica leaves exactly one container per
//! service; drift (a container removed, one killed) is repaired; DELETE
//! leaves no container, network or volume and removes the row; a service
//! to build fails terminally at `image_build`; a short TTL destroys the
//! Playground on time with `playground.expired`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

mod support;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_core::metrics::Metrics;
use play_core::store::events;
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use play_reconcilers::playground::{PlaygroundConfig, PlaygroundReconciler};
use play_reconcilers::runtime::{Backoff, Config, Handle, Runtime};
use serde_json::{Value, json};
use support::sshd::Sshd;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const COMPOSE: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
      timeout: 2s
      retries: 3
    volumes:
      - data:/data
  web:
    image: play-test/busybox:1
    command: ["httpd", "-f", "-p", "8080", "-h", "/www"]
    depends_on:
      db:
        condition: service_healthy
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
  worker:
    image: play-test/busybox:1
    command: sh -c 'while true; do sleep 1; done'
volumes:
  data: {}
"#;

struct World {
    _turn: tokio::sync::MutexGuard<'static, ()>,
    app: TestApp,
    gateway: DockerHostGateway,
    playroom: i64,
    /// This test's installation id: every filter below includes it, so a
    /// test never sees or removes another test's (or installation's)
    /// Playground with the same id.
    installation: String,
    _sshd: Sshd,
}

/// Each test's store numbers Playgrounds from 1, and play labels host
/// objects by Playground id: tests on one engine take turns.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn world(ttl: Option<Duration>) -> World {
    let turn = ONE_AT_A_TIME.lock().await;
    support::docker::ensure_busybox_image();
    let sshd = Sshd::start();
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(10)), Arc::new(Metrics::new()));
    let mut config = TestApp::default_config();
    if let Some(ttl) = ttl {
        config.playground_ttl = ttl;
    }
    let app = TestApp::with(config, Arc::new(gateway.clone())).await;
    let r = app
        .post(
            "/api/playrooms",
            &app.admin,
            json!({"playroom": {"name": "box", "host": "127.0.0.1", "port": sshd.port, "user": sshd.user}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let playroom = r.body["id"].as_i64().unwrap();
    let key = app.post(&format!("/api/playrooms/{playroom}/generate_ssh_key"), &app.admin, json!({})).await;
    let public = key.body["ssh_public_key"].as_str().unwrap().to_owned();
    let authorized = sshd.dir().join("authorized_keys");
    let mut keys = std::fs::read_to_string(&authorized).unwrap();
    keys.push_str(&format!("\n{public}\n"));
    std::fs::write(&authorized, keys).unwrap();
    let report = app.post(&format!("/api/playrooms/{playroom}/test_connection"), &app.admin, json!({})).await;
    assert_eq!(report.body["ok"], true, "{}", report.text);
    let installation = app.store().installation().await.unwrap();
    World { _turn: turn, app, gateway, playroom, installation, _sshd: sshd }
}

impl World {
    /// A Playspec with `compose` and a Playground on it: (id, compose project).
    async fn playground(&self, name: &str, compose: &str) -> (i64, String) {
        let spec = self
            .app
            .post("/api/playspecs", &self.app.admin, json!({"playspec": {"name": name, "base_compose_yaml": compose}}))
            .await;
        assert_eq!(spec.status, StatusCode::CREATED, "{}", spec.text);
        let r = self
            .app
            .post(
                "/api/playgrounds",
                &self.app.admin,
                json!({"playground": {"name": name, "playspec_id": spec.body["id"], "playroom_id": self.playroom,
                       "env_overrides": {"GREETING": "hi"}}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        (r.body["id"].as_i64().unwrap(), r.body["compose_project"].as_str().unwrap().to_owned())
    }

    /// Starts a runtime for the Playground reconciler as `replica`.
    fn runtime(&self, replica: &str, resync_every: Duration) -> (Handle, CancellationToken, JoinHandle<()>) {
        let store = self.app.store().clone();
        let reconciler = PlaygroundReconciler::new(store.clone(), self.app.state.secrets.clone(), self.gateway.clone())
            .with_config(PlaygroundConfig { poll_interval: Duration::from_millis(500), ..Default::default() });
        let runtime =
            Runtime::new(reconciler, store, Arc::new(Metrics::new())).with_replica_id(replica).with_config(Config {
                resync_every,
                lease_duration: Duration::from_secs(3),
                lease_busy_retry: Duration::from_millis(500),
                backoff: Backoff { initial: Duration::from_millis(200), max: Duration::from_secs(2) },
                ..Config::default()
            });
        let handle = runtime.handle();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(runtime.run(shutdown.clone()));
        (handle, shutdown, task)
    }

    async fn detail(&self, id: i64) -> (StatusCode, Value) {
        let r = self.app.get(&format!("/api/playgrounds/{id}"), &self.app.admin).await;
        (r.status, r.body)
    }

    async fn wait_for(&self, id: i64, what: &str, ok: impl Fn(StatusCode, &Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let (status, body) = self.detail(id).await;
            if ok(status, &body) {
                return body;
            }
            if Instant::now() >= deadline {
                let detail = self.app.get(&format!("/api/playgrounds/{id}/status"), &self.app.admin).await;
                panic!("timed out waiting for {what}; last: {status} {body:#}\nstatus: {}", detail.text);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn event_types(&self) -> Vec<String> {
        events::list_for_account(self.app.store(), self.app.account_id)
            .await
            .unwrap()
            .iter()
            .map(|e| format!("{}.{}", e.entity_type, e.action))
            .collect()
    }
}

fn docker_lines(args: &[&str]) -> Vec<String> {
    let out = support::run(Command::new("docker").args(args));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect()
}

/// Container names labelled for the Playground.
/// Docker filters for Playground `id` of installation `inst`.
fn filters(inst: &str, id: i64) -> [String; 4] {
    [
        "--filter".to_owned(),
        format!("label=dev.play.playground={id}"),
        "--filter".to_owned(),
        format!("label=dev.play.installation={inst}"),
    ]
}

fn containers(w: &World, id: i64) -> Vec<String> {
    let f = filters(&w.installation, id);
    let mut names = docker_lines(&["ps", "-a", &f[0], &f[1], &f[2], &f[3], "--format", "{{.Names}}"]);
    names.sort();
    names
}

/// Labelled networks and volumes, and volumes named for the Playground's
/// project (the engine makes a missing named volume without labels).
fn networks_and_volumes(inst: &str, id: i64) -> Vec<String> {
    let f = filters(inst, id);
    let mut all = docker_lines(&["network", "ls", "-q", &f[0], &f[1], &f[2], &f[3]]);
    all.extend(docker_lines(&["volume", "ls", "-q", &f[0], &f[1], &f[2], &f[3]]));
    let short: String = inst.chars().take(6).collect();
    all.extend(docker_lines(&["volume", "ls", "-q", "--filter", &format!("name=play-{short}-{id}-")]));
    all
}

/// Removes everything of the Playground (volumes too) on drop.
struct Cleanup(String, i64);

impl Cleanup {
    /// Also removes what an earlier, failed run left.
    fn new(w: &World, id: i64) -> Cleanup {
        drop(Cleanup(w.installation.clone(), id));
        Cleanup(w.installation.clone(), id)
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let f = filters(&self.0, self.1);
        let ids = |args: &[&str]| docker_lines(&[args, &[f[0].as_str(), &f[1], &f[2], &f[3]][..]].concat());
        let containers = ids(&["ps", "-aq"]);
        if !containers.is_empty() {
            let _ = Command::new("docker").args(["rm", "-f"]).args(&containers).output();
        }
        let networks = ids(&["network", "ls", "-q"]);
        if !networks.is_empty() {
            let _ = Command::new("docker").args(["network", "rm"]).args(&networks).output();
        }
        let volumes = networks_and_volumes(&self.0, self.1);
        if !volumes.is_empty() {
            let _ = Command::new("docker").args(["volume", "rm", "-f"]).args(&volumes).output();
        }
    }
}

fn running_healthy(status: StatusCode, body: &Value) -> bool {
    status == StatusCode::OK
        && body["status"] == "running"
        && body["services"].as_array().is_some_and(|s| {
            s.len() == 3
                && s.iter().all(|s| s["running"] == true && (s["health"].is_null() || s["health"] == "healthy"))
        })
}

fn container_id(name: &str) -> String {
    docker_lines(&["inspect", "--format", "{{.Id}}", name]).join("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_services_converge_survive_a_crash_and_drift_and_are_destroyed() {
    let w = world(None).await;
    let (id, project) = w.playground("shop", COMPOSE).await;
    let _cleanup = Cleanup::new(&w, id);

    // Replica A starts creating, and dies (aborted, leases not released) as
    // soon as the first container exists.
    let (handle, _shutdown_a, task_a) = w.runtime("replica-a", Duration::from_secs(2));
    handle.wake(id);
    let deadline = Instant::now() + Duration::from_secs(60);
    while containers(&w, id).is_empty() {
        assert!(Instant::now() < deadline, "replica A created nothing");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task_a.abort();
    let _ = task_a.await;

    // Replica B takes over once A's lease expires and converges.
    let (handle, shutdown, task) = w.runtime("replica-b", Duration::from_secs(2));
    handle.wake(id);
    let body = w.wait_for(id, "running with every service healthy", running_healthy).await;
    assert_eq!(body["observed_generation"], body["generation"]);
    assert!(body["last_applied_at"].is_string(), "{body:#}");
    let status = w.app.get(&format!("/api/playgrounds/{id}/status"), &w.app.admin).await;
    assert_eq!(status.body["creation_step"], "ready", "{}", status.text);
    assert_eq!(status.body["error_message"], Value::Null);

    // Exactly one container per service, with Compose's names.
    let expected: Vec<String> = ["db", "web", "worker"].iter().map(|s| format!("{project}-{s}-1")).collect();
    assert_eq!(containers(&w, id), expected);
    let env = docker_lines(&["inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", &expected[2]]);
    assert!(env.contains(&"GREETING=hi".to_owned()), "{env:?}");
    assert!(env.contains(&format!("PLAY_PLAYGROUND_ID={id}")), "{env:?}");
    assert!(env.contains(&format!("PLAY_COMPOSE_PROJECT={project}")), "{env:?}");

    // docker-compose lists the Playground by its project (1.29 needs the
    // file to know the service names; v2 reads only the labels).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("docker-compose.yml"), COMPOSE).unwrap();
    let ps = support::run(Command::new("docker-compose").current_dir(dir.path()).args(["-p", &project, "ps"]));
    let ps = String::from_utf8_lossy(&ps.stdout);
    for name in &expected {
        assert!(ps.contains(name.as_str()), "docker-compose ps does not list {name}:\n{ps}");
    }

    // Drift: the worker removed behind play's back is recreated; the web
    // container killed is started again.
    let worker_before = container_id(&expected[2]);
    support::run(Command::new("docker").args(["rm", "-f", &expected[2]]));
    support::run(Command::new("docker").args(["kill", &expected[1]]));
    handle.wake(id);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let up = docker_lines(&[
            "ps",
            "--filter",
            &format!("label=dev.play.playground={id}"),
            "--filter",
            &format!("label=dev.play.installation={}", w.installation),
            "--filter",
            "status=running",
            "--format",
            "{{.Names}}",
        ]);
        if up.len() == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "drift not repaired: running {up:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_ne!(container_id(&expected[2]), worker_before, "the worker is a new container");
    assert_eq!(containers(&w, id), expected, "still exactly one container per service");
    w.wait_for(id, "running again", running_healthy).await;
    let drift_events = |events: Vec<String>| events.iter().filter(|e| *e == "playground.drift.detected").count();
    let drifts = drift_events(w.event_types().await);
    assert!(drifts >= 1, "the repair reported the drift");

    // Another pass on a converged Playground changes nothing, and reports
    // no drift.
    let ids_before: Vec<String> = expected.iter().map(|n| container_id(n)).collect();
    handle.wake(id);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(expected.iter().map(|n| container_id(n)).collect::<Vec<_>>(), ids_before);
    assert_eq!(drift_events(w.event_types().await), drifts);

    // Delete: everything goes, then the row.
    let r = w.app.delete(&format!("/api/playgrounds/{id}"), &w.app.admin).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    handle.wake(id);
    w.wait_for(id, "the row to be deleted", |status, _| status == StatusCode::NOT_FOUND).await;
    assert_eq!(containers(&w, id), Vec::<String>::new());
    assert_eq!(networks_and_volumes(&w.installation, id), Vec::<String>::new());
    let events = w.event_types().await;
    for expected in ["playground.created", "playground.status.changed", "playground.destroyed"] {
        assert!(events.iter().any(|e| e == expected), "{expected} missing from {events:?}");
    }
    shutdown.cancel();
    task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_to_build_without_a_playzone_fails_terminally_at_image_build() {
    let w = world(None).await;
    let compose = "services:\n  api:\n    build: ./api\n  web:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"60\"]\n";
    let (id, _) = w.playground("built", compose).await;
    let _cleanup = Cleanup::new(&w, id);
    let (handle, shutdown, task) = w.runtime("replica-build", Duration::from_secs(2));
    handle.wake(id);
    let body = w.wait_for(id, "failed", |_, b| b["status"] == "failed").await;
    let status = w.app.get(&format!("/api/playgrounds/{id}/status"), &w.app.admin).await;
    assert_eq!(status.body["error_step"], "image_build", "{}", status.text);
    // It names what is missing and how to give it.
    let message = status.body["error_message"].as_str().unwrap();
    assert!(message.contains("links no Playzone") && message.contains("svc/repo_url"), "{}", status.text);
    assert!(containers(&w, id).is_empty(), "{body:#}");
    assert!(w.event_types().await.iter().any(|e| e == "playground.error"));
    shutdown.cancel();
    task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_playground_is_destroyed_on_time() {
    let w = world(Some(Duration::from_secs(6))).await;
    let compose = "services:\n  app:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n";
    let (id, _) = w.playground("short", compose).await;
    let _cleanup = Cleanup::new(&w, id);
    let (handle, shutdown, task) = w.runtime("replica-ttl", Duration::from_secs(60));
    handle.wake(id);
    w.wait_for(id, "running", |_, b| b["status"] == "running").await;
    assert_eq!(containers(&w, id).len(), 1);
    // No wake from here on: the pass asked for a timer at expires_at.
    let started = Instant::now();
    w.wait_for(id, "the expired row to be deleted", |status, _| status == StatusCode::NOT_FOUND).await;
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(containers(&w, id).is_empty());
    assert!(networks_and_volumes(&w.installation, id).is_empty());
    let events = w.event_types().await;
    assert!(events.iter().any(|e| e == "playground.expired"), "{events:?}");
    assert!(events.iter().any(|e| e == "playground.destroyed"), "{events:?}");
    shutdown.cancel();
    task.await.unwrap();
}
