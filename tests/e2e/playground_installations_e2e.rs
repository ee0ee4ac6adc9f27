//! Two play installations (two databases) sharing one Docker engine: their
//! Playground ids collide (each starts at 1), yet each converges its own
//! containers and destroying one leaves the other's untouched, because host
//! objects carry the installation's id and project names include it.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::docker::{ensure_busybox_image, project_containers};
use crate::support::sshd::Sshd;
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_core::metrics::Metrics;
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use play_reconcilers::playground::PlaygroundConfig;
use play_reconcilers::runtime::Config;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const COMPOSE: &str = "services:\n  app:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n";

struct Installation {
    app: TestApp,
    project: String,
    id: i64,
}

async fn installation(sshd: &Sshd, gateway: &DockerHostGateway, shutdown: &CancellationToken) -> Installation {
    let app = TestApp::with(TestApp::default_config(), Arc::new(gateway.clone())).await;
    let (_, pg) = crate::support::app::create_playground(&app, sshd.playroom_body("box"), "same", COMPOSE).await;
    let shared = crate::support::world::shared(&app, gateway);
    let playgrounds =
        shared.playgrounds(PlaygroundConfig { poll_interval: Duration::from_millis(300), ..Default::default() });
    let config = Config { resync_every: Duration::from_millis(500), ..Config::default() };
    tokio::spawn(shared.runtime(playgrounds, config, "local").run(shutdown.child_token()));
    Installation { id: pg["id"].as_i64().unwrap(), project: pg["compose_project"].as_str().unwrap().to_owned(), app }
}

impl Installation {
    async fn status(&self) -> (StatusCode, Value) {
        let r = self.app.get(&format!("/api/playgrounds/{}", self.id), &self.app.admin).await;
        (r.status, r.body)
    }

    async fn wait(&self, what: &str, ok: impl Fn(StatusCode, &Value) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (status, body) = self.status().await;
            if ok(status, &body) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {status} {body:#}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

struct Cleanup(Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for project in &self.0 {
            crate::support::docker::remove_labelled(&format!("com.docker.compose.project={project}"));
        }
    }
}

#[tokio::test]
async fn two_installations_with_the_same_playground_id_stay_apart() {
    ensure_busybox_image();
    let sshd = Sshd::start();
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(10)), Arc::new(Metrics::new()));
    let shutdown = CancellationToken::new();
    let a = installation(&sshd, &gateway, &shutdown).await;
    let b = installation(&sshd, &gateway, &shutdown).await;
    let _cleanup = Cleanup(vec![a.project.clone(), b.project.clone()]);
    assert_eq!(a.id, b.id, "both databases start their ids at 1");
    assert_ne!(a.project, b.project, "project names differ by installation");

    let running = |_: StatusCode, body: &Value| body["status"] == "running";
    a.wait("a running", running).await;
    b.wait("b running", running).await;
    assert_eq!(project_containers(&a.project), [format!("{}-app-1", a.project)]);
    assert_eq!(project_containers(&b.project), [format!("{}-app-1", b.project)]);

    // Destroying a's Playground must not touch b's container.
    let b_container = project_containers(&b.project);
    a.app.delete(&format!("/api/playgrounds/{}", a.id), &a.app.admin).await;
    a.wait("a destroyed", |status, _| status == StatusCode::NOT_FOUND).await;
    assert!(project_containers(&a.project).is_empty());
    // Let b's reconciler resync a few times: it must still see exactly its own.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(project_containers(&b.project), b_container);
    assert_eq!(b.status().await.1["status"], "running");
    shutdown.cancel();
}
