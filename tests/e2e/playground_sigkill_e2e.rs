//! Crash safety of the real binary: `play serve` is killed with SIGKILL
//! while a Playground is half created, started again on the same data
//! directory, and must converge to exactly one container per service with
//! no orphaned networks or volumes; DELETE then leaves nothing behind.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::docker::{ensure_busybox_image, project_containers};
use crate::support::serve::Play;
use crate::support::sshd::Sshd;

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

fn docker_lines(args: &[&str]) -> Vec<String> {
    let out = crate::support::run(Command::new("docker").args(args));
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

#[tokio::test]
async fn sigkill_during_creation_then_restart_converges_without_duplicates_or_orphans() {
    ensure_busybox_image();
    let sshd = Sshd::start();
    let play = Play::new().await.serve_args(&["--resync-interval", "2s"]);
    let mut server = play.serve().await;
    let pg = server.playground(sshd.playroom_body("box"), "crashy", COMPOSE).await;
    let id = pg["id"].as_i64().unwrap();
    let project = pg["compose_project"].as_str().unwrap().to_owned();
    // The harness removes what this installation made (its label) when
    // `play` is dropped, even when an assertion fails.

    // Kill the process as soon as creation is under way but not finished.
    let deadline = Instant::now() + Duration::from_secs(60);
    while project_containers(&project).is_empty() {
        assert!(Instant::now() < deadline, "no container was ever created");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.kill();
    let created = project_containers(&project);
    assert!(created.len() < 3, "killed too late to test anything: {created:?}");

    let server = play.serve().await;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (_, detail) = server.get(&format!("/api/playgrounds/{id}")).await;
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

    let (status, _) = server.call(reqwest::Method::DELETE, &format!("/api/playgrounds/{id}"), None).await;
    assert_eq!(status, 202);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, _) = server.get(&format!("/api/playgrounds/{id}")).await;
        if status == 404 {
            break;
        }
        assert!(Instant::now() < deadline, "the Playground was never destroyed");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(project_containers(&project).is_empty() && networks(&project).is_empty() && volumes(&project).is_empty());

    let mut server = server;
    server.terminate();
    assert!(server.wait_exit(Duration::from_secs(60)).await.success(), "a clean stop after SIGTERM");
}
