//! Service logs read live from a Playroom over SSH: the API finds the
//! service's container by its Compose name on the host and returns its last
//! lines. The container here is started by hand, so the test does not
//! depend on the Playground reconciler.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::support::docker::{Labelled, ensure_busybox_image};
use crate::support::sshd::Sshd;
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_core::metrics::Metrics;
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use serde_json::{Value, json};

/// An API over the harness's sshd with one Playground (services `web` and
/// `db`, none started), and `web`'s container started by hand running
/// `script`: the app, the Playroom as created, the Playground's id, and the
/// guard that removes the container.
async fn with_web_running(sshd: &Sshd, script: &str) -> (TestApp, Value, i64, Labelled) {
    ensure_busybox_image();
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(10)), Arc::new(Metrics::new()));
    let app = TestApp::with(TestApp::default_config(), Arc::new(gateway)).await;
    let compose = "services:\n  web:\n    image: play-test/busybox:1\n  db:\n    image: play-test/busybox:1\n";
    let (room, pg) = crate::support::app::create_playground(&app, sshd.playroom_body("box"), "logs", compose).await;
    let id = pg["id"].as_i64().unwrap();
    let container = play_model::playground::container_name(pg["compose_project"].as_str().unwrap(), "web");
    let label = crate::support::unique_label("playground-logs");
    let cleanup = Labelled(label.clone());
    crate::support::run(Command::new("docker").args([
        "run",
        "-d",
        "--name",
        &container,
        "--label",
        &label,
        "play-test/busybox:1",
        "sh",
        "-c",
        script,
    ]));
    (app, room, id, cleanup)
}

#[tokio::test]
async fn logs_come_back_live_with_tail_limits_and_clear_errors() {
    let mut sshd = Sshd::start();
    let (app, room, id, _cleanup) = with_web_running(&sshd, "for i in 1 2 3; do echo line-$i; done; sleep 60").await;

    let path = format!("/api/playgrounds/{id}/logs/web");
    let mut lines = Vec::new();
    for _ in 0..100 {
        let r = app.get(&format!("{path}?tail=2"), &app.admin).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!((r.body["service"].as_str(), r.body["source"].as_str()), (Some("web"), Some("live")));
        lines = r.body["lines"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_owned()).collect();
        if lines.last().is_some_and(|l| l == "line-3") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(lines, ["line-2", "line-3"]);
    let all = app.get(&path, &app.admin).await;
    assert_eq!(all.body["lines"].as_array().unwrap().len(), 3, "the default tail covers all three lines");

    for bad in ["0", "abc", "-1", "1e3"] {
        let r = app.get(&format!("{path}?tail={bad}"), &app.admin).await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert!(details["tail"].is_array(), "{bad}: {details}");
    }
    app.get(&format!("/api/playgrounds/{id}/logs/ghost"), &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.get(&format!("/api/playgrounds/{id}/logs/db"), &app.admin)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
    app.get("/api/playgrounds/999999/logs/web", &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");

    sshd.stop();
    // Hold the freed port so nothing answers there.
    let (_held, port) = crate::support::refusing_port(sshd.port);
    if port != sshd.port {
        // The Playroom cannot be pointed at the held port instead: it has a
        // Playground, and a move that drops the pinned host key is refused.
        let patch = json!({"playroom": {"port": port, "host_key": null}});
        let path = format!("/api/playrooms/{}", room["id"]);
        let moved = app.request(axum::http::Method::PATCH, &path, Some(&app.admin), Some(patch)).await;
        moved.assert_error(StatusCode::CONFLICT, "CONFLICT");
    }
    let r = app.get(&path, &app.admin).await;
    let details = r.assert_error(StatusCode::BAD_GATEWAY, "HOST_ERROR");
    assert_eq!(details["host"], json!(["unreachable"]), "{}", r.text);
}

/// Finding 8 of issue #10: a read of `tail=1000` lines had no byte bound, so
/// a container writing long lines made play hold (and send) megabytes.
/// Lines are clipped to 4 KiB and a read returns at most 1 MiB, the newest
/// lines first kept.
#[tokio::test]
async fn a_log_read_is_bounded_in_bytes() {
    let sshd = Sshd::start();
    // 1,000 lines of 8,000 bytes: 8 MB, then a last short line.
    let script = "i=0; while [ $i -lt 1000 ]; do printf '%08000d\\n' $i; i=$((i+1)); done; echo the-end; sleep 60";
    let (app, _, id, _cleanup) = with_web_running(&sshd, script).await;
    let path = format!("/api/playgrounds/{id}/logs/web?tail=1000");
    let mut lines: Vec<String> = Vec::new();
    for _ in 0..100 {
        let r = app.get(&path, &app.admin).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        lines = r.body["lines"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_owned()).collect();
        if lines.last().is_some_and(|l| l == "the-end") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(lines.last().map(String::as_str), Some("the-end"), "the newest line is kept");
    let bytes: usize = lines.iter().map(String::len).sum();
    assert!(bytes <= 1024 * 1024, "{bytes} bytes in {} lines", lines.len());
    assert!(lines.iter().all(|l| l.len() <= 4096), "each line clipped");
    assert!(lines.len() > 200 && lines.len() < 1000, "{} lines: bounded by bytes, not by count", lines.len());
}

#[tokio::test]
async fn follow_streams_lines_written_after_it_started_then_ends_at_its_bound() {
    let sshd = Sshd::start();
    let script = "i=0; while true; do echo tick-$i; i=$((i+1)); sleep 1; done";
    let (app, _room, id, _cleanup) = with_web_running(&sshd, script).await;
    let path = format!("/api/playgrounds/{id}/logs/web");
    for _ in 0..100 {
        let r = app.get(&format!("{path}?tail=1"), &app.admin).await;
        if r.status == StatusCode::OK && !r.body["lines"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = app.get(&format!("{path}?tail=1&follow=true&max_seconds=4"), &app.admin).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let ticks: Vec<u64> =
        r.text.lines().filter_map(|l| l.strip_prefix("data: tick-")).map(|n| n.trim().parse().unwrap()).collect();
    assert!(ticks.len() >= 3, "the tail line, then lines written while following: {}", r.text);
    assert!(ticks.windows(2).all(|w| w[1] == w[0] + 1), "in order, none lost: {ticks:?}");
    assert!(r.text.contains("event: end"), "the stream says it ended: {}", r.text);

    app.get(&format!("{path}?follow=maybe"), &app.admin)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    app.get(&format!("{path}?follow=true&max_seconds=0"), &app.admin)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    app.get(&format!("{path}?max_seconds=5"), &app.admin)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let missing = app.get(&format!("/api/playgrounds/{id}/logs/db?follow=true"), &app.admin).await;
    missing.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
}
