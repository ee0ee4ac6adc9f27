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

/// Finding 8: the number of mounted files per Playspec was unbounded; each
/// becomes a bind mount in every container it targets.
#[tokio::test]
async fn mounted_files_per_playspec_are_bounded() {
    let app = TestApp::new().await;
    let spec = app
        .post(
            "/api/playspecs",
            &app.admin,
            json!({"playspec": {"name": "many", "base_compose_yaml": "services:\n  web:\n    image: x\n"}}),
        )
        .await;
    let path = format!("/api/playspecs/{}/add_mounted_file", spec.body["id"]);
    for i in 0..50 {
        let mount = format!("/etc/f{i}");
        let r = app.post_multipart(&path, &[("file", Some("f"), b"x"), ("mount_path", None, mount.as_bytes())]).await;
        assert_eq!(r.status, StatusCode::CREATED, "file {i}: {}", r.text);
    }
    let before = app.count("playspec_mounted_files").await;
    let r = app.post_multipart(&path, &[("file", Some("f"), b"x"), ("mount_path", None, b"/etc/one-too-many")]).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["file"][0].as_str().unwrap().contains("at most 50"), "{}", r.text);
    assert_eq!(app.count("playspec_mounted_files").await, before);
}

/// Finding 8: `test_connection` connects to the host and writes the pinned
/// key and the check's outcome, so a read-only key may not call it.
#[tokio::test]
async fn test_connection_needs_a_write_scope() {
    use play_model::scopes::{Scope, ScopeSet};
    let app = TestApp::new().await;
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "r", "host": "h"}})).await;
    let path = format!("/api/playrooms/{}/test_connection", room.body["id"]);
    let reader = app.key_for(app.account_id, [Scope::PlayroomsRead].into_iter().collect::<ScopeSet>(), None).await;
    let details = app.post(&path, &reader, json!({})).await.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN").clone();
    assert!(details["scope"][0].as_str().unwrap().contains("playrooms:write"), "{details}");
    let writer = app.key_for(app.account_id, [Scope::PlayroomsWrite].into_iter().collect::<ScopeSet>(), None).await;
    // Allowed now; this Playroom has no key yet, so the check itself is refused.
    app.post(&path, &writer, json!({})).await.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
}

/// A large valid document: 30 services of 1,000 environment entries each
/// (under the 512 KiB limit).
fn large_compose() -> String {
    let mut doc = String::from("services:\n");
    for s in 0..30 {
        doc.push_str(&format!("  s{s}:\n    image: x\n    environment:\n"));
        for e in 0..1000 {
            doc.push_str(&format!("      V{e}: v\n"));
        }
    }
    doc
}

/// Finding 8: Compose validation ran on the async threads, so one large
/// document stalled every request on that thread. On a runtime with one
/// thread, a health check sent while a large document is being validated
/// must answer before the validation does.
#[tokio::test(flavor = "current_thread")]
async fn validation_does_not_stall_other_requests() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let app = TestApp::new().await;
    let doc = large_compose();
    assert!(doc.len() < 512 * 1024);
    let order = AtomicUsize::new(0);
    let validate = async {
        let r = app.post("/api/playspecs/validate_compose", &app.admin, json!({"compose_yaml": doc})).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(r.body["valid"], true, "{}", r.text);
        order.fetch_add(1, Ordering::SeqCst)
    };
    let health = async {
        // Sent once the validation is under way.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let r = app.request(axum::http::Method::GET, "/healthz", None, None).await;
        assert_eq!(r.status, StatusCode::OK);
        order.fetch_add(1, Ordering::SeqCst)
    };
    let (validated_at, healthy_at) = tokio::join!(validate, health);
    assert!(healthy_at < validated_at, "the health check waited for the validation");
}
