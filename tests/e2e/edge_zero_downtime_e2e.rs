//! Zero-downtime rollouts end to end, through the edge (Debian's Caddy) on
//! the harness's sshd and Docker engine:
//! - a client loop of requests through the edge during an image change of
//!   a `svc/zerodowntime` service sees no failed request, and the new
//!   version takes over;
//! - a new version that never answers its health path is stopped, the old
//!   one keeps serving, and the Playground is `failed` with the reason and
//!   a `playground.error` event.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::support::caddy::{edge_config, edge_get, ensure_caddy_image};
use crate::support::docker::BUSYBOX_IMAGE;
use crate::support::world::{World, docker_lines};
use crate::support::{free_port, run};
use play_model::edge::EdgeSettings;
use play_reconcilers::playground::PlaygroundConfig;
use serde_json::json;

/// `web` serves its version (the image tag) at `/`, and `/health`; the tag
/// `bad` never listens.
const COMPOSE: &str = r#"
services:
  web:
    image: play-test/zd:${TAG:-a}
    environment:
      VERSION: ${TAG:-a}
    command: ["sh", "-c", "if [ \"$$VERSION\" = bad ]; then exec sleep 3600; fi; mkdir -p /www && echo $$VERSION > /www/index.html && echo ok > /www/health && exec httpd -f -p 8080 -h /www"]
    labels:
      svc/expose: "8080"
      svc/subdomain: zd
      svc/zerodowntime: "true"
      svc/healthcheck_path: /health
      svc/healthcheck_interval: 200ms
      svc/healthcheck_timeout: 1s
      svc/healthcheck_retries: "5"
"#;

fn tag_images() {
    for tag in ["a", "b", "bad"] {
        run(std::process::Command::new("docker").args(["tag", BUSYBOX_IMAGE, &format!("play-test/zd:{tag}")]));
    }
}

/// Requests `/` through the edge in a loop until `stop`: (total, failed,
/// the bodies seen, in order of first sight).
///
/// Like a browser, it sends a `GET` again once when its connection closed
/// before any answer (RFC 9110, 9.2.2: idempotent requests may be retried
/// then): every change of the edge's config makes Caddy replace its
/// servers, which closes idle keep-alive connections, and a request sent
/// on one at that instant gets no answer. Those retries are counted and
/// printed; an error answer (a 502 from the edge: no upstream) is a failure.
struct Client {
    total: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    retried: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<String>>,
}

impl Client {
    fn start(port: u16, host: String) -> Client {
        let (total, failed, stop) =
            (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let retried = Arc::new(AtomicU64::new(0));
        let (t, f, s, again) = (total.clone(), failed.clone(), stop.clone(), retried.clone());
        let task = tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .resolve(&host, ([127, 0, 0, 1], port).into())
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap();
            let mut seen: Vec<String> = Vec::new();
            while !s.load(Ordering::Relaxed) {
                t.fetch_add(1, Ordering::Relaxed);
                let url = format!("http://{host}:{port}/");
                let answer = match client.get(&url).send().await {
                    Err(e) if !e.is_timeout() => {
                        again.fetch_add(1, Ordering::Relaxed);
                        client.get(&url).send().await
                    }
                    other => other,
                };
                match answer {
                    Ok(r) if r.status().is_success() => {
                        let body = r.text().await.unwrap_or_default().trim().to_owned();
                        if !seen.contains(&body) {
                            seen.push(body);
                        }
                    }
                    Ok(r) => {
                        f.fetch_add(1, Ordering::Relaxed);
                        eprintln!("failed request: {}", r.status());
                    }
                    Err(e) => {
                        f.fetch_add(1, Ordering::Relaxed);
                        eprintln!("failed request: {e}");
                    }
                }
            }
            seen
        });
        Client { total, failed, retried, stop, task }
    }

    /// (requests, failed, retried after a closed connection, bodies seen).
    async fn stop(self) -> (u64, u64, u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        let seen = self.task.await.unwrap();
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        (load(&self.total), load(&self.failed), load(&self.retried), seen)
    }
}

/// The body of a 2xx answer at `host`'s `/`, trimmed.
async fn answers(port: u16, host: &str) -> Option<String> {
    let (status, body) = edge_get(port, host, "/").await?;
    (200..300).contains(&status).then(|| body.trim().to_owned())
}

/// Rolls Playground `id` out with `TAG=<tag>` (its image and version).
async fn roll_out(world: &World, id: i64, tag: &str) {
    let body = json!({"playground": {"env_overrides": {"TAG": tag}}});
    let r = world.app.post(&format!("/api/playgrounds/{id}/rollout"), &world.app.admin, body).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
}

fn web_containers(project: &str) -> Vec<String> {
    docker_lines(&[
        "ps",
        "-a",
        "--filter",
        &format!("label=com.docker.compose.project={project}"),
        "--format",
        "{{.Names}}",
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_zero_downtime_rollout_drops_no_request_and_an_unhealthy_version_leaves_the_old_serving() {
    ensure_caddy_image();
    let world = World::start().await;
    tag_images();
    let (http_port, https_port) = (free_port(), free_port());
    world.set_edge(EdgeSettings { http_port, https_port, ..EdgeSettings::default() }).await;
    let admin_dir = tempfile::tempdir().unwrap();
    let edge = edge_config(admin_dir.path());
    let playgrounds = PlaygroundConfig {
        poll_interval: Duration::from_millis(500),
        drain: Duration::from_secs(1),
        ..PlaygroundConfig::default()
    };
    let _runtimes = world.runtimes_with_edge_and(edge, playgrounds);
    let spec = world.playspec("zd", COMPOSE).await;
    let created = world.playground("pr-1", spec, json!({})).await;
    let id = created["id"].as_i64().unwrap();
    let project = created["compose_project"].as_str().unwrap().to_owned();
    let host = format!("zd-{id}.localhost");
    world.wait_converged(id, "the first version").await;
    let started = Instant::now();
    while answers(http_port, &host).await.as_deref() != Some("a") {
        assert!(started.elapsed() < Duration::from_secs(20), "version a never answered through the edge");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Roll out version b under a steady stream of requests.
    let client = Client::start(http_port, host.clone());
    tokio::time::sleep(Duration::from_millis(500)).await;
    roll_out(&world, id, "b").await;
    world.wait_converged(id, "the rollout to b").await;
    let started = Instant::now();
    while web_containers(&project).len() != 1 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the old container was not removed: {:?}",
            web_containers(&project)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (total, failed, retried, seen) = client.stop().await;
    println!(
        "zero-downtime rollout a -> b: {total} requests through the edge, {failed} failed, {retried} sent again \
         after a closed keep-alive connection, versions seen {seen:?}"
    );
    assert_eq!(failed, 0, "requests failed during the rollout");
    assert_eq!(seen, ["a", "b"], "the new version took over");
    assert_eq!(answers(http_port, &host).await.as_deref(), Some("b"));

    // A version that never becomes healthy: stopped, b keeps serving.
    let client = Client::start(http_port, host.clone());
    roll_out(&world, id, "bad").await;
    let failed_view = world.wait_for(id, "the failed rollout", |_, body| body["status"] == "failed").await;
    let (total, failed, retried, seen) = client.stop().await;
    println!(
        "unhealthy rollout b -> bad: {total} requests, {failed} failed, {retried} sent again, versions seen {seen:?}"
    );
    assert_eq!(failed, 0);
    assert_eq!(seen, ["b"]);
    let status = world.app.get(&format!("/api/playgrounds/{id}/status"), &world.app.admin).await;
    let message = status.body["error_message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("zero-downtime rollout of `web` failed"), "{message} / {failed_view}");
    assert!(world.event_types().await.iter().any(|t| t == "playground.error"));
    assert_eq!(web_containers(&project).len(), 1, "the unhealthy container is removed: {:?}", web_containers(&project));
    // Held back: the failed version is not tried again on later passes.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(web_containers(&project).len(), 1);
    assert_eq!(answers(http_port, &host).await.as_deref(), Some("b"));
}
