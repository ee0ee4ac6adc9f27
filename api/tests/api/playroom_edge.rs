//! `playroom.edge` (the edge's settings) and `edge_status` over the real
//! router and store: defaults, merging on update, field-by-field
//! validation, and the edge reconciler's wakes.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use play_api::testing::{NoHosts, Response, TestApp};
use play_core::wake::{ChannelWaker, Kind};
use serde_json::{Value, json};

async fn create(app: &TestApp, extra: Value) -> Response {
    let mut body = json!({"name": "box", "host": "10.0.0.5"});
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    app.post("/api/playrooms", &app.admin, json!({"playroom": body})).await
}

async fn patch(app: &TestApp, id: i64, body: Value) -> Response {
    app.request(Method::PATCH, &format!("/api/playrooms/{id}"), Some(&app.admin), Some(json!({"playroom": body}))).await
}

fn defaults() -> Value {
    json!({"enabled": true, "http_port": 80, "https_port": 443, "tls": "auto"})
}

fn fields(details: &Value) -> Vec<String> {
    let mut keys: Vec<String> = details.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn create_takes_defaults_for_absent_keys_and_the_detail_shows_the_edge() {
    let app = TestApp::new().await;
    let r = create(&app, json!({})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["edge"], defaults());
    assert_eq!(r.body["edge_status"], Value::Null, "no pass yet");

    let r = create(&app, json!({"name": "b", "edge": {"http_port": 8080, "tls": "internal"}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["edge"], json!({"enabled": true, "http_port": 8080, "https_port": 443, "tls": "internal"}));
    let id = r.body["id"].as_i64().unwrap();
    let shown = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!(shown.body["edge"], r.body["edge"]);
    // The list keeps the spec's list fields only.
    let list = app.get("/api/playrooms", &app.admin).await;
    assert!(list.body[1].get("edge").is_none(), "{}", list.text);

    // `null` and `{}` are absent keys.
    let r = create(&app, json!({"name": "c", "edge": null})).await;
    assert_eq!(r.body["edge"], defaults());
    let r = create(&app, json!({"name": "d", "edge": {"enabled": null, "http_port": null}})).await;
    assert_eq!(r.body["edge"], defaults());
}

#[tokio::test]
async fn update_merges_the_given_keys_into_the_stored_settings() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"edge": {"http_port": 8080}})).await.body["id"].as_i64().unwrap();
    let r = patch(&app, id, json!({"edge": {"https_port": 8443}})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["edge"], json!({"enabled": true, "http_port": 8080, "https_port": 8443, "tls": "auto"}));
    let r = patch(&app, id, json!({"edge": {"tls": "off", "enabled": false}})).await;
    assert_eq!(r.body["edge"], json!({"enabled": false, "http_port": 8080, "https_port": 8443, "tls": "off"}));
    let r = patch(&app, id, json!({"name": "renamed"})).await;
    assert_eq!(r.body["edge"]["https_port"], 8443, "an update without edge keeps it");
    let r = patch(&app, id, json!({"edge": {}})).await;
    assert_eq!(r.body["edge"], json!({"enabled": false, "http_port": 8080, "https_port": 8443, "tls": "off"}));
    // Swapping the ports in one request is fine.
    let r = patch(&app, id, json!({"edge": {"http_port": 8443, "https_port": 8080}})).await;
    assert_eq!((r.body["edge"]["http_port"].as_i64(), r.body["edge"]["https_port"].as_i64()), (Some(8443), Some(8080)));
}

#[tokio::test]
async fn one_port_colliding_with_the_stored_other_is_refused_and_nothing_is_written() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"edge": {"https_port": 8443}})).await.body["id"].as_i64().unwrap();
    let before = (app.get(&format!("/api/playrooms/{id}"), &app.admin).await.body, app.count("events").await);
    let r = patch(&app, id, json!({"name": "other", "edge": {"http_port": 8443}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(fields(details), ["playroom.edge.http_port"]);
    assert!(details["playroom.edge.http_port"][0].as_str().unwrap().contains("https_port (8443)"), "{details}");
    let r = patch(&app, id, json!({"edge": {"https_port": 80}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(fields(details), ["playroom.edge.https_port"]);
    let after = (app.get(&format!("/api/playrooms/{id}"), &app.admin).await.body, app.count("events").await);
    assert_eq!(after, before, "a refused update changes nothing");
}

#[tokio::test]
async fn every_edge_key_is_validated_and_hostile_values_are_refused() {
    let app = TestApp::new().await;
    let before = (app.count("playrooms").await, app.count("events").await);
    let cases: &[(Value, &[&str])] = &[
        (json!({"http_port": "80"}), &["playroom.edge.http_port"]),
        (json!({"https_port": "443"}), &["playroom.edge.https_port"]),
        (json!({"http_port": -1}), &["playroom.edge.http_port"]),
        (json!({"http_port": 0}), &["playroom.edge.http_port"]),
        (json!({"https_port": 70000}), &["playroom.edge.https_port"]),
        (json!({"http_port": 80.5}), &["playroom.edge.http_port"]),
        (json!({"http_port": 1e30}), &["playroom.edge.http_port"]),
        (json!({"http_port": 9000, "https_port": 9000}), &["playroom.edge.https_port"]),
        (json!({"https_port": 80}), &["playroom.edge.https_port"]),
        (json!({"http_port": 443}), &["playroom.edge.http_port"]),
        (json!({"tls": "../x"}), &["playroom.edge.tls"]),
        (json!({"tls": "AUTO"}), &["playroom.edge.tls"]),
        (json!({"tls": ""}), &["playroom.edge.tls"]),
        (json!({"tls": 1}), &["playroom.edge.tls"]),
        (json!({"enabled": "yes"}), &["playroom.edge.enabled"]),
        (json!({"admin_port": 2019}), &["playroom.edge.admin_port"]),
        (
            json!({"http_port": 0, "https_port": 70000, "tls": "x"}),
            &["playroom.edge.http_port", "playroom.edge.https_port", "playroom.edge.tls"],
        ),
    ];
    for (edge, expected) in cases {
        let r = create(&app, json!({"edge": edge})).await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert_eq!(fields(details), *expected, "edge {edge}: {}", r.text);
    }
    for edge in [json!("on"), json!([]), json!(true), json!(443)] {
        let r = create(&app, json!({"edge": edge})).await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert_eq!(fields(details), ["playroom.edge"], "edge {edge}");
    }
    // Edge errors come with the other fields' errors.
    let r = create(&app, json!({"name": " ", "edge": {"tls": "x"}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(fields(details), ["playroom.edge.tls", "playroom.name"]);
    assert_eq!((app.count("playrooms").await, app.count("events").await), before, "nothing written");

    // The same rules on update.
    let id = create(&app, json!({})).await.body["id"].as_i64().unwrap();
    let r = patch(&app, id, json!({"edge": {"http_port": 65536, "tls": "../x", "extra": 1}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(fields(details), ["playroom.edge.extra"], "the shape is checked first");
    let r = patch(&app, id, json!({"edge": {"http_port": 65536, "tls": "../x"}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(fields(details), ["playroom.edge.http_port", "playroom.edge.tls"]);
    let r = patch(&app, id, json!({"edge": {"http_port": 1, "https_port": 65535}})).await;
    assert_eq!(r.status, StatusCode::OK, "the bounds are inclusive: {}", r.text);
}

#[tokio::test]
async fn the_detail_shows_what_the_edge_last_did() {
    let app = TestApp::new().await;
    let id = create(&app, json!({})).await.body["id"].as_i64().unwrap();
    sqlx::query(
        "INSERT INTO playroom_edges (playroom_id, config_hash, applied_at, container_id, error, error_at, updated_at) \
         VALUES ($1, 'abc123', '2026-01-02T03:04:05.000000Z', 'c0ffee', 'port 80 in use', \
         '2026-01-02T03:05:00.000000Z', '2026-01-02T03:05:00.000000Z')",
    )
    .bind(id)
    .execute(app.store().pool())
    .await
    .unwrap();
    let r = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let status = &r.body["edge_status"];
    assert_eq!(fields(status), ["applied_at", "config_hash", "container_id", "error", "error_at"], "{}", r.text);
    assert_eq!((status["container_id"].as_str(), status["config_hash"].as_str()), (Some("c0ffee"), Some("abc123")));
    assert_eq!(status["error"], "port 80 in use");
    assert!(status["applied_at"].as_str().unwrap().starts_with("2026-01-02T03:04:05"), "{status}");
    assert!(status["error_at"].as_str().unwrap().starts_with("2026-01-02T03:05:00"), "{status}");
    // Update answers with it too.
    let r = patch(&app, id, json!({"edge": {"enabled": true}})).await;
    assert_eq!(r.body["edge_status"]["container_id"], "c0ffee");
}

#[tokio::test]
async fn create_update_and_delete_wake_the_edge() {
    let waker = ChannelWaker::new();
    let mut wakes = waker.subscribe(Kind::Edge);
    let app = TestApp::with_waker(TestApp::default_config(), Arc::new(NoHosts), Arc::new(waker)).await;
    let id = create(&app, json!({})).await.body["id"].as_i64().unwrap();
    assert_eq!(wakes.try_recv(), Some(id), "create");
    patch(&app, id, json!({"edge": {"http_port": 8080}})).await;
    assert_eq!(wakes.try_recv(), Some(id), "update");
    let refused = patch(&app, id, json!({"edge": {"https_port": 8080}})).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(wakes.try_recv(), None, "a refused update wakes nothing");
    assert_eq!(app.delete(&format!("/api/playrooms/{id}"), &app.admin).await.status, StatusCode::NO_CONTENT);
    assert_eq!(wakes.try_recv(), Some(id), "delete");
}

#[tokio::test]
async fn the_openapi_document_states_the_edge_constraints() {
    let app = TestApp::new().await;
    let doc = app.request(Method::GET, "/api/openapi.json", None, None).await;
    let schemas = &doc.body["components"]["schemas"];
    let input = &schemas["EdgeInput"];
    assert_eq!(input["additionalProperties"], false, "{input}");
    let props = &input["properties"];
    let text = props.to_string();
    for bound in ["\"minimum\":1", "\"maximum\":65535"] {
        assert!(props["http_port"].to_string().contains(bound), "{text}");
        assert!(props["https_port"].to_string().contains(bound), "{text}");
    }
    for mode in ["auto", "internal", "off"] {
        assert!(props["tls"].to_string().contains(mode), "{text}");
    }
    let detail = &schemas["PlayroomDetail"]["allOf"][1]["properties"];
    assert_eq!(detail["edge"]["$ref"], "#/components/schemas/EdgeView", "{detail}");
    assert!(detail["edge_status"].to_string().contains("EdgeStatusView"), "{detail}");
    assert!(schemas["EdgeStatusView"].is_object());
}
