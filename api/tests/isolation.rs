//! Tenant isolation through the real router and store: each attack of the
//! hardening review (issue #10) sent as a tenant would send it, refused
//! with a field-addressed 422 that records nothing.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::StatusCode;
use play_api::testing::TestApp;
use serde_json::json;

/// Creating a Playspec with `yaml` is refused at `field`, and no row or
/// event is written.
async fn playspec_refused(app: &TestApp, yaml: &str, field: &str, fragment: &str) {
    let (specs, events) = (app.count("playspecs").await, app.count("events").await);
    let r = app
        .post("/api/playspecs", &app.admin, json!({"playspec": {"name": "attack", "base_compose_yaml": yaml}}))
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let messages = details[field].as_array().unwrap_or_else(|| panic!("no error at {field}: {}", r.text));
    assert!(messages.iter().any(|m| m.as_str().unwrap().contains(fragment)), "{field}: {}", r.text);
    assert_eq!((app.count("playspecs").await, app.count("events").await), (specs, events), "nothing recorded");
}

#[tokio::test]
async fn a_playspec_cannot_reach_the_mounted_files_volume() {
    let app = TestApp::new().await;
    playspec_refused(
        &app,
        "services:\n  web:\n    image: x\n    volumes: [\"_play_files:/steal\"]\nvolumes:\n  _play_files: {}\n",
        "playspec.base_compose_yaml.volumes._play_files",
        "must start with a letter or digit",
    )
    .await;
    playspec_refused(
        &app,
        "services:\n  web:\n    image: x\n    volumes: [\"f:/steal\"]\nvolumes:\n  f:\n    external: true\n    name: play-3fa91c-7-shop__play_files\n",
        "playspec.base_compose_yaml.volumes.f.name",
        "reserved",
    )
    .await;
}

#[tokio::test]
async fn a_playspec_cannot_join_the_edge_network_or_carry_play_labels() {
    let app = TestApp::new().await;
    playspec_refused(
        &app,
        "services:\n  web:\n    image: x\n    networks: [e]\nnetworks:\n  e:\n    external: true\n    name: play-3fa91c-edge\n",
        "playspec.base_compose_yaml.networks.e.name",
        "reserved",
    )
    .await;
    playspec_refused(
        &app,
        "services:\n  web:\n    image: x\n    labels: {dev.play.playground: \"1\"}\n",
        "playspec.base_compose_yaml.services.web.labels.dev.play.playground",
        "reserved",
    )
    .await;
}

#[tokio::test]
async fn port_ranges_and_collections_are_bounded_before_any_work() {
    let app = TestApp::new().await;
    playspec_refused(
        &app,
        "services:\n  a:\n    image: x\n    ports: [\"1-65535:1-65535\"]\n",
        "playspec.base_compose_yaml.services",
        "65535 ports",
    )
    .await;
    // The same through validate_compose: a report, not a crash.
    let r = app
        .post(
            "/api/playspecs/validate_compose",
            &app.admin,
            json!({"compose_yaml": "services:\n  a:\n    image: x\n    ports: [\"1-65535:1-65535\", \"1-65535:1-65535/udp\"]\n"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["valid"], false, "{}", r.text);
}

/// Each isolation escape, refused when a Playground would run it on an
/// untrusted Playroom (the Playspec itself records them as warnings: it
/// does not know its Playroom yet).
#[tokio::test]
async fn escapes_are_refused_on_untrusted_playrooms() {
    let app = TestApp::new().await;
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "shared", "host": "h"}})).await;
    let room = room.body["id"].as_i64().unwrap();
    let attacks = [
        ("services:\n  w:\n    image: x\n    security_opt: [\"seccomp={}\"]\n", "services.w.security_opt[0]"),
        ("services:\n  w:\n    image: x\n    security_opt: [\"label=type:spc_t\"]\n", "services.w.security_opt[0]"),
        ("services:\n  w:\n    image: x\n    network_mode: play-3fa91c-edge\n", "services.w.network_mode"),
        (
            "services:\n  w:\n    image: x\n    networks: [o]\nnetworks:\n  o:\n    external: true\n    name: victim_default\n",
            "networks.o.external",
        ),
        (
            "services:\n  w:\n    image: x\n    volumes: [\"v:/v\"]\nvolumes:\n  v:\n    external: true\n    name: victim_db\n",
            "volumes.v.external",
        ),
        (
            "services:\n  w:\n    image: x\n    networks: [l]\nnetworks:\n  l:\n    driver: macvlan\n",
            "networks.l.driver",
        ),
        (
            "services:\n  w:\n    image: x\n    networks: [l]\nnetworks:\n  l:\n    driver: ipvlan\n",
            "networks.l.driver",
        ),
    ];
    for (i, (yaml, path)) in attacks.iter().enumerate() {
        let spec = app
            .post(
                "/api/playspecs",
                &app.admin,
                json!({"playspec": {"name": format!("s{i}"), "base_compose_yaml": yaml}}),
            )
            .await;
        assert_eq!(spec.status, StatusCode::CREATED, "{}", spec.text);
        let before = app.count("playgrounds").await;
        let r = app
            .post(
                "/api/playgrounds",
                &app.admin,
                json!({"playground": {"name": format!("g{i}"), "playspec_id": spec.body["id"], "playroom_id": room}}),
            )
            .await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert!(details[format!("playspec.base_compose_yaml.{path}")].is_array(), "{path}: {}", r.text);
        assert_eq!(app.count("playgrounds").await, before, "nothing recorded for {path}");
    }
}
