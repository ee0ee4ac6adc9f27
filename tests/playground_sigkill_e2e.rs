//! Crash safety of the real binary: `play serve` is killed with SIGKILL
//! while a Playground is half created, started again on the same data
//! directory, and must converge to exactly one container per service with
//! no orphaned networks or volumes; DELETE then leaves nothing behind.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::docker::{ensure_busybox_image, project_containers};
use support::sshd::Sshd;

/// db turns healthy only after a few seconds, and web waits for it: the
/// window in which the process is killed.
const COMPOSE: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: ["sh", "-c", "sleep 4; touch /tmp/ready; sleep 3600"]
    healthcheck:
      test: ["CMD", "test", "-f", "/tmp/ready"]
      interval: 1s
      retries: 30
    volumes:
      - data:/data
  web:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    depends_on:
      db: {condition: service_healthy}
  worker:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
volumes:
  data: {}
"#;

/// `play serve`, killed when dropped so a failing assertion leaves no
/// process behind.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(data_dir: &Path, database_url: &str, port: u16) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_play"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--resync-interval", "2s"])
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
    async fn wait_healthy(&self) {
        for _ in 0..300 {
            if self.client.get(format!("{}/healthz", self.base)).send().await.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("play serve did not become healthy");
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.client.request(method, format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

fn docker_lines(args: &[&str]) -> Vec<String> {
    let out = support::run(Command::new("docker").args(args));
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
    lines.retain(|l| !l.trim().is_empty());
    lines.sort();
    lines
}

fn networks(project: &str) -> Vec<String> {
    docker_lines(&[
        "network",
        "ls",
        "--filter",
        &format!("label=com.docker.compose.project={project}"),
        "--format",
        "{{.Name}}",
    ])
}

fn volumes(project: &str) -> Vec<String> {
    docker_lines(&["volume", "ls", "--filter", &format!("name={project}_"), "--format", "{{.Name}}"])
}

/// Removes every object of a Compose project when dropped.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        support::docker::remove_labelled(&format!("com.docker.compose.project={}", self.0));
        let prefix = format!("name={}_", self.0);
        let listed = Command::new("docker").args(["volume", "ls", "-q", "--filter", &prefix]).output();
        let listed = listed.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        for volume in listed.split_whitespace() {
            let _ = Command::new("docker").args(["volume", "rm", "-f", volume]).output();
        }
    }
}

#[tokio::test]
async fn sigkill_during_creation_then_restart_converges_without_duplicates_or_orphans() {
    ensure_busybox_image();
    let sshd = Sshd::start();
    let data = tempfile::tempdir().unwrap();
    let (database_url, _sqlite_dir) = play_core::testing::fresh_database_url().await;
    let port = support::free_port();
    let mut child = serve(data.path(), &database_url, port);
    let api = Api { base: format!("http://127.0.0.1:{port}"), token: String::new(), client: reqwest::Client::new() };
    api.wait_healthy().await;
    let api = Api { token: std::fs::read_to_string(data.path().join("admin.token")).unwrap().trim().to_owned(), ..api };

    let (status, room) = api.call(reqwest::Method::POST, "/api/playrooms", Some(sshd.playroom_body("box"))).await;
    assert_eq!(status, 201, "{room}");
    let (status, spec) = api
        .call(
            reqwest::Method::POST,
            "/api/playspecs",
            Some(json!({"playspec": {"name": "crashy", "base_compose_yaml": COMPOSE}})),
        )
        .await;
    assert_eq!(status, 201, "{spec}");
    let (status, pg) = api
        .call(
            reqwest::Method::POST,
            "/api/playgrounds",
            Some(json!({"playground": {"name": "crashy", "playspec_id": spec["id"], "playroom_id": room["id"]}})),
        )
        .await;
    assert_eq!(status, 201, "{pg}");
    let id = pg["id"].as_i64().unwrap();
    let project = pg["compose_project"].as_str().unwrap().to_owned();
    // Removes the project's objects even when an assertion fails.
    let _cleanup = Cleanup(project.clone());

    // Kill the process as soon as creation is under way but not finished.
    let deadline = Instant::now() + Duration::from_secs(60);
    while project_containers(&project).is_empty() {
        assert!(Instant::now() < deadline, "no container was ever created");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();
    let created = project_containers(&project);
    assert!(created.len() < 3, "killed too late to test anything: {created:?}");

    let mut child = serve(data.path(), &database_url, port);
    api.wait_healthy().await;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (_, detail) = api.call(reqwest::Method::GET, &format!("/api/playgrounds/{id}"), None).await;
        if detail["status"] == "running" {
            break;
        }
        assert!(Instant::now() < deadline, "did not converge after the restart: {detail:#}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(
        project_containers(&project),
        [format!("{project}-db-1"), format!("{project}-web-1"), format!("{project}-worker-1")]
    );
    assert_eq!(networks(&project), [format!("{project}_default")]);
    assert_eq!(volumes(&project), [format!("{project}_data")]);

    let (status, _) = api.call(reqwest::Method::DELETE, &format!("/api/playgrounds/{id}"), None).await;
    assert_eq!(status, 202);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, _) = api.call(reqwest::Method::GET, &format!("/api/playgrounds/{id}"), None).await;
        if status == 404 {
            break;
        }
        assert!(Instant::now() < deadline, "the Playground was never destroyed");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(project_containers(&project).is_empty() && networks(&project).is_empty() && volumes(&project).is_empty());

    assert!(Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status().unwrap().success());
    assert!(child.0.wait().unwrap().success(), "a clean stop after SIGTERM");
}
