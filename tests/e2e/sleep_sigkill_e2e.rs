//! Sleep across a crash, through the real binary (issue #32): a Playground
//! with `sleep_after: 5s` on a Playroom over the harness's sshd falls
//! asleep; `play serve` is killed with SIGKILL and started again; the
//! Playground is still asleep (its containers stopped, its URL answered
//! by the edge's waking route, which Caddy kept), and a request to its URL
//! wakes it and gets the service's own answer.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::time::{Duration, Instant};

use crate::support::caddy::{CADDY_IMAGE, ensure_caddy_image};
use crate::support::docker::{BUSYBOX_IMAGE, ensure_busybox_image};
use crate::support::serve::{Play, Server};
use crate::support::sshd::Sshd;
use serde_json::{Value, json};

async fn wait_status(server: &Server, path: &str, want: &str) -> Value {
    let started = Instant::now();
    loop {
        let (_, body) = server.get(path).await;
        if body["status"] == want {
            return body;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "not {want}: {body}\n{}", server.log_tail(40));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_playground_stays_asleep_across_sigkill_and_wakes_on_a_request() {
    ensure_busybox_image();
    ensure_caddy_image();
    let sshd = Sshd::start();
    // One installation restarted as the same replica (as a single `play
    // serve` on SQLite always is): it takes its own leases back at once.
    // A replica with another id waits for the killed one's leases to expire
    // (`--lease-duration`, 8 s since issue #33), within the edge's hold.
    let play = Play::new()
        .await
        .env("PLAY_EDGE_IMAGE", CADDY_IMAGE)
        .env("PLAY_EDGE_CHECK_INTERVAL", "500ms")
        .env("PLAY_REPLICA_ID", "napper");
    let mut server = play.serve().await;
    let (http_port, https_port) = (crate::support::free_port(), crate::support::free_port());
    let mut room = sshd.playroom_body("box");
    room["playroom"]["edge"] = json!({"enabled": true, "http_port": http_port, "https_port": https_port});
    let room = server.create("/api/playrooms", room).await;
    let compose = format!(
        "services:\n  web:\n    image: {BUSYBOX_IMAGE}\n    command: [\"sh\", \"-c\", \"mkdir -p /www && echo awake > \
         /www/index.html && exec httpd -f -p 8080 -h /www\"]\n    stop_grace_period: 1s\n    labels:\n      \
         svc/expose: \"8080\"\n      svc/subdomain: nap\n"
    );
    let spec =
        server.create("/api/playspecs", json!({"playspec": {"name": "nap", "base_compose_yaml": compose}})).await;
    let pg = server
        .create(
            "/api/playgrounds",
            json!({"playground": {"name": "nap", "playspec_id": spec["id"], "playroom_id": room["id"], "sleep_after": "5s"}}),
        )
        .await;
    let path = format!("/api/playgrounds/{}", pg["id"]);
    wait_status(&server, &path, "running").await;
    let asleep = wait_status(&server, &path, "sleeping").await;
    assert_eq!(asleep["power_reason"], "idle", "{asleep}");

    server.kill();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let server = play.serve().await;
    // Still asleep after the restart: the reconciler converges to it again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, view) = server.get(&path).await;
    assert_eq!((view["status"].as_str(), view["power"].as_str()), (Some("sleeping"), Some("asleep")), "{view}");

    let host = format!("nap-{}.localhost", pg["id"]);
    let http = reqwest::Client::builder()
        .resolve(&host, ([127, 0, 0, 1], http_port).into())
        .timeout(Duration::from_secs(40))
        .build()
        .unwrap();
    let asked = Instant::now();
    let answer = http.get(format!("http://{host}:{http_port}/")).send().await.unwrap();
    let status = answer.status().as_u16();
    let body = answer.text().await.unwrap();
    println!("woken after a restart: first byte after {:?}", asked.elapsed());
    assert_eq!((status, body.trim()), (200, "awake"), "{}", server.log_tail(40));
    let woke = wait_status(&server, &path, "running").await;
    assert_eq!(woke["power_reason"], "request", "{woke}");

    // Issue #51, item 4: requests through the edge are the activity the
    // detail shows, and a request that woke it before a restart does not
    // wake it again after one (the monitor reads the last 15 s of the
    // edge's log again when play starts).
    let url = format!("http://{host}:{http_port}/");
    let started = Instant::now();
    loop {
        assert_eq!(http.get(&url).send().await.unwrap().text().await.unwrap().trim(), "awake");
        let (_, view) = server.get(&path).await;
        if view["last_active_at"].is_string() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "no activity recorded: {view}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let (code, body) = server.post(&format!("{path}/sleep"), json!({})).await;
    assert_eq!(code, 200, "{body}");
    wait_status(&server, &path, "sleeping").await;
    let mut server = server;
    server.kill();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let server = play.serve().await;
    assert!(asked.elapsed() < Duration::from_secs(14), "the wake line is still within the replay");
    // Five seconds without a request: it stays asleep (the old code had
    // it running again within them).
    let watched = Instant::now();
    while watched.elapsed() < Duration::from_secs(5) {
        let (_, view) = server.get(&path).await;
        assert_eq!((view["status"].as_str(), view["power"].as_str()), (Some("sleeping"), Some("asleep")), "{view}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
