//! Finding 4 of issue #10: every connection play makes, not only
//! `test_connection`, goes through the pinned host key check; the first
//! contact of any path pins; a Playroom's host cannot be changed under its
//! Playgrounds in a way that would orphan them.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;
use std::time::Duration;

use crate::support::sshd::Sshd;
use axum::http::{Method, StatusCode};
use play_api::testing::TestApp;
use play_core::metrics::Metrics;
use play_model::host::FailureKind;
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use play_store::playrooms;
use serde_json::json;

#[tokio::test]
async fn the_first_contact_of_a_reconciler_pins_and_a_changed_key_is_refused() {
    let mut sshd = Sshd::start();
    let app = TestApp::new().await;
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(5)), Arc::new(Metrics::new()))
        .with_pins(app.store().clone());
    // A Playroom nobody ran test_connection on.
    let r = app.post("/api/playrooms", &app.admin, sshd.playroom_body("box")).await;
    let id = r.body["id"].as_i64().unwrap();
    assert_eq!(r.body["host_key"], json!(null));

    // The path a reconciler takes: pinned on first contact.
    let (_, target) = playrooms::target(app.store(), &app.state.secrets, app.account_id, id).await.unwrap();
    gateway.docker(&target).await.unwrap().ping().await.unwrap();
    let detail = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!(detail.body["host_key"].as_str(), Some(sshd.host_key.as_str()), "{}", detail.text);
    assert!(detail.body["host_key_pinned_at"].is_string());

    // A new connection of any path (a fresh gateway: another replica) is
    // checked against it.
    sshd.change_host_key();
    let other = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(5)), Arc::new(Metrics::new()))
        .with_pins(app.store().clone());
    let (_, target) = playrooms::target(app.store(), &app.state.secrets, app.account_id, id).await.unwrap();
    let err = other.connection(&target).await.unwrap_err();
    assert_eq!(err.kind(), FailureKind::HostKeyMismatch, "{err}");
}

#[tokio::test]
async fn a_racing_first_contact_with_another_key_is_refused() {
    let sshd = Sshd::start();
    let app = TestApp::new().await;
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(5)), Arc::new(Metrics::new()))
        .with_pins(app.store().clone());
    let r = app.post("/api/playrooms", &app.admin, sshd.playroom_body("box")).await;
    let id = r.body["id"].as_i64().unwrap();
    // The target was read before another path pinned a different key.
    let (_, target) = playrooms::target(app.store(), &app.state.secrets, app.account_id, id).await.unwrap();
    let other = play_model::ssh_keys::generate_ed25519("").unwrap().public_openssh;
    play_store::playroom_checks::pin_first_contact(app.store(), id, &other).await.unwrap();
    let err = gateway.connection(&target).await.unwrap_err();
    assert_eq!(err.kind(), FailureKind::HostKeyMismatch, "{err}");
}

#[tokio::test]
async fn a_host_change_under_playgrounds_keeps_the_pin_or_is_refused() {
    let app = TestApp::new().await;
    let pin = play_model::ssh_keys::generate_ed25519("").unwrap().public_openssh;
    let room = app
        .post("/api/playrooms", &app.admin, json!({"playroom": {"name": "r", "host": "10.0.0.1", "host_key": pin}}))
        .await;
    let id = room.body["id"].as_i64().unwrap();
    let patch = |fields: serde_json::Value| {
        let app = &app;
        async move {
            app.request(
                Method::PATCH,
                &format!("/api/playrooms/{id}"),
                Some(&app.admin),
                Some(json!({"playroom": fields})),
            )
            .await
        }
    };
    // No Playgrounds: a move drops the pin (it was the old host's).
    let r = patch(json!({"host": "10.0.0.2"})).await;
    assert_eq!((r.status, r.body["host_key"].clone()), (StatusCode::OK, json!(null)), "{}", r.text);
    let r = patch(json!({"host_key": pin})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);

    let spec = app
        .post(
            "/api/playspecs",
            &app.admin,
            json!({"playspec": {"name": "s", "base_compose_yaml": "services:\n  web:\n    image: x\n"}}),
        )
        .await;
    let pg = app
        .post(
            "/api/playgrounds",
            &app.admin,
            json!({"playground": {"name": "p", "playspec_id": spec.body["id"], "playroom_id": id}}),
        )
        .await;
    assert_eq!(pg.status, StatusCode::CREATED, "{}", pg.text);

    // With a Playground: a move keeps the pin (only the same machine is
    // reached at the new address) ...
    let r = patch(json!({"host": "10.0.0.3", "port": 2222})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["host_key"].as_str(), Some(pin.trim()), "{}", r.text);
    // ... and one that drops or replaces it is refused, changing nothing.
    let other = play_model::ssh_keys::generate_ed25519("").unwrap().public_openssh;
    for host_key in [json!(null), json!(other)] {
        let r = patch(json!({"host": "10.0.0.4", "host_key": host_key})).await;
        r.assert_error(StatusCode::CONFLICT, "CONFLICT");
    }
    let detail = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!((detail.body["host"].as_str(), detail.body["port"].as_i64()), (Some("10.0.0.3"), Some(2222)));
}

/// A Playroom without a private key was dialled with an empty key on every
/// pass (and every event-watcher retry), failing with a parser's message
/// about PEM data. Its Playgrounds now say what to fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_playroom_without_a_key_is_reported_on_its_playgrounds() {
    let w = crate::support::world::World::start().await;
    let room = w
        .app
        .post("/api/playrooms", &w.app.admin, json!({"playroom": {"name": "keyless", "host": "127.0.0.1", "port": 9}}))
        .await;
    let room = room.body["id"].as_i64().unwrap();
    let spec = w.playspec("keyless", "services:\n  web:\n    image: play-test/busybox:1\n").await;
    let r = w
        .app
        .post(
            "/api/playgrounds",
            &w.app.admin,
            json!({"playground": {"name": "k", "playspec_id": spec, "playroom_id": room}}),
        )
        .await;
    let id = r.body["id"].as_i64().unwrap();
    let _running = w.runtime("replica-a", Duration::from_secs(2));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let status = w.app.get(&format!("/api/playgrounds/{id}/status"), &w.app.admin).await;
        if status.body["error_message"].as_str().is_some_and(|m| m.contains("no SSH private key")) {
            assert_ne!(status.body["status"], "running", "{}", status.text);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the missing key was not reported: {}", status.text);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
