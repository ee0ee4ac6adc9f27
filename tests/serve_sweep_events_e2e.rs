//! `play serve` wires the Playroom sweep and the Docker event wake-ups: with
//! the resync an hour away, a killed container of a Playground is started
//! again within seconds, and a container labelled for a Playground id
//! without a row is removed by the sweep (every 2 s here). A Playroom is
//! watched from its first Playground's first pass: with the resync and the
//! watch list's refresh both 5 min away, a container killed in a fresh
//! Playroom's first seconds is repaired within seconds too.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::docker::{ensure_busybox_image, project_containers};
use support::sshd::Sshd;

const COMPOSE: &str = "services:\n  app:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n";

/// `play serve`, killed when dropped so a failing assertion leaves no
/// process behind.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(data_dir: &Path, database_url: &str, port: u16, settings: &[&str]) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_play"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(settings)
        .env("PLAY_DATA_DIR", data_dir)
        .env("PLAY_DATABASE_URL", database_url)
        .env("PLAY_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start play serve");
    Server(child)
}

struct Api {
    base: String,
    token: String,
    client: reqwest::Client,
}

impl Api {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.client.request(method, format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let (status, body) = self.call(reqwest::Method::POST, path, Some(body)).await;
        assert_eq!(status, 201, "POST {path}: {body}");
        body
    }

    async fn metrics(&self) -> String {
        self.client.get(format!("{}/metrics", self.base)).send().await.unwrap().text().await.unwrap()
    }
}

/// Waits up to `limit` for `ok`, polling.
async fn eventually(what: &str, limit: Duration, mut ok: impl AsyncFnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !ok().await {
        assert!(started.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    started.elapsed()
}

fn running(container: &str) -> bool {
    let out = Command::new("docker").args(["inspect", "--format", "{{.State.Running}}", container]).output();
    out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "true")
}

/// Removes everything of the installation (and the test's own objects).
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        support::docker::remove_labelled(&self.0);
    }
}

/// A running `play serve` with `settings`, its API and store.
struct Served {
    api: Api,
    store: play_core::store::Store,
    installation: String,
    child: Server,
    _data: tempfile::TempDir,
    _sqlite_dir: Option<tempfile::TempDir>,
    _cleanup: Cleanup,
}

async fn start(settings: &[&str]) -> Served {
    ensure_busybox_image();
    let data = tempfile::tempdir().unwrap();
    let (database_url, sqlite_dir) = play_core::testing::fresh_database_url().await;
    let port = support::free_port();
    let child = serve(data.path(), &database_url, port, settings);
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    eventually("play serve healthy", Duration::from_secs(30), async || {
        client.get(format!("{base}/healthz")).send().await.is_ok_and(|r| r.status().is_success())
    })
    .await;
    let token = std::fs::read_to_string(data.path().join("admin.token")).unwrap().trim().to_owned();
    let store = play_core::store::Store::connect(&database_url).await.unwrap();
    let installation = store.installation().await.unwrap();
    let cleanup = Cleanup(format!("dev.play.installation={installation}"));
    Served {
        api: Api { base, token, client },
        store,
        installation,
        child,
        _data: data,
        _sqlite_dir: sqlite_dir,
        _cleanup: cleanup,
    }
}

impl Served {
    /// A Playroom on `sshd`, a Playspec and a Playground: (id, project).
    async fn playground(&self, sshd: &Sshd) -> (i64, String) {
        let api = &self.api;
        let room = api.post("/api/playrooms", sshd.playroom_body("box")).await;
        let spec = api.post("/api/playspecs", json!({"playspec": {"name": "app", "base_compose_yaml": COMPOSE}})).await;
        let pg = api
            .post(
                "/api/playgrounds",
                json!({"playground": {"name": "app", "playspec_id": spec["id"], "playroom_id": room["id"]}}),
            )
            .await;
        (pg["id"].as_i64().unwrap(), pg["compose_project"].as_str().unwrap().to_owned())
    }

    async fn wait_running(&self, id: i64) {
        eventually("the Playground running", Duration::from_secs(60), async || {
            self.api.call(reqwest::Method::GET, &format!("/api/playgrounds/{id}"), None).await.1["status"] == "running"
        })
        .await;
    }

    /// SIGTERM, and a clean exit.
    async fn stop(self) {
        self.store.close().await;
        assert!(Command::new("kill").args(["-TERM", &self.child.0.id().to_string()]).status().unwrap().success());
        let mut child = self.child;
        assert!(child.0.wait().unwrap().success(), "a clean stop after SIGTERM");
    }
}

#[tokio::test]
async fn a_container_killed_in_a_fresh_playrooms_first_seconds_is_repaired_at_once() {
    // Only the fix can repair it in time: the resync and the refresh of
    // the watched Playrooms are 5 min away, and the refresh at start-up
    // found no Playroom (none existed yet).
    let served = start(&["--resync-interval", "300s", "--events-refresh", "300s", "--sweep-interval", "1h"]).await;
    let sshd = Sshd::start();
    let (id, project) = served.playground(&sshd).await;
    served.wait_running(id).await;
    // Converged: the pass asked for its next run at expires_at (8 h), so
    // only a Docker event (or the wake-up of a watcher's connect) can run
    // one now.
    let container = format!("{project}-app-1");
    support::run(Command::new("docker").args(["kill", &container]));
    let took =
        eventually("the killed container running again", Duration::from_secs(30), async || running(&container)).await;
    eprintln!("started again {took:?} after docker kill, in the Playroom's first seconds");
    assert_eq!(project_containers(&project), [container]);
    // Through one event stream that stayed open (a stream failing and
    // reconnecting would also wake the Playground, and hide a broken
    // subscription).
    let metrics = served.api.metrics().await;
    let streams: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("play_remote_calls_total{") && l.contains("operation=\"docker GET events\""))
        .collect();
    assert_eq!(streams.len(), 1, "{streams:?}");
    assert!(streams[0].contains("outcome=\"ok\"") && streams[0].ends_with(" 1"), "{streams:?}");
    served.stop().await;
}

#[tokio::test]
async fn play_serve_follows_docker_events_and_sweeps_orphans() {
    let served = start(&["--resync-interval", "1h", "--sweep-interval", "2s"]).await;
    let sshd = Sshd::start();
    let (api, installation) = (&served.api, served.installation.clone());
    let (id, project) = served.playground(&sshd).await;
    served.wait_running(id).await;
    // The Playground's first pass asked for its Playroom to be watched.
    eventually("a Docker event stream open on the Playroom", Duration::from_secs(30), async || {
        api.metrics()
            .await
            .lines()
            .any(|l| l.contains("operation=\"docker GET events\"") && l.contains("outcome=\"ok\""))
    })
    .await;

    let container = format!("{project}-app-1");
    support::run(Command::new("docker").args(["kill", &container]));
    let took =
        eventually("the killed container running again", Duration::from_secs(15), async || running(&container)).await;
    eprintln!("started again {took:?} after docker kill");

    // A container for a Playground id this installation never had. The
    // sweep may remove it between `docker run`'s create and its start
    // (`container is marked for removal`): play got there first, which is
    // what this checks, so that failure is not the test's.
    let orphan = format!("play-sweep-orphan-{}", std::process::id());
    let made = Command::new("docker")
        .args([
            "run",
            "-d",
            "--name",
            &orphan,
            "--label",
            &format!("dev.play.installation={installation}"),
            "--label",
            &format!("dev.play.playground={}", id + 1000),
            "play-test/busybox:1",
            "sleep",
            "3600",
        ])
        .output()
        .expect("docker run");
    let stderr = String::from_utf8_lossy(&made.stderr);
    assert!(made.status.success() || stderr.contains("marked for removal"), "docker run failed: {stderr}");
    eventually("the orphan swept", Duration::from_secs(20), async || {
        !Command::new("docker").args(["inspect", &orphan]).output().is_ok_and(|o| o.status.success())
    })
    .await;
    assert_eq!(project_containers(&project), [container], "the live Playground was left alone");
    assert!(running(&format!("{project}-app-1")));
    served.stop().await;
}
