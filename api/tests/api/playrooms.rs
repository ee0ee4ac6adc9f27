//! Playroom CRUD, validation and secrecy over the real router and store.
//! Connection tests against a real sshd are in the workspace's
//! `tests/e2e/playrooms_e2e.rs`.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::{Method, StatusCode};
use play_api::testing::TestApp;
use play_model::ssh_keys;
use serde_json::{Value, json};

fn private_key() -> String {
    ssh_keys::generate_ed25519("t").unwrap().private_openssh
}

async fn create(app: &TestApp, body: Value) -> i64 {
    let r = app.post("/api/playrooms", &app.admin, json!({"playroom": body})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["id"].as_i64().unwrap()
}

#[tokio::test]
async fn create_show_list_update_delete() {
    let app = TestApp::new().await;
    let key = private_key();
    let r = app
        .post(
            "/api/playrooms",
            &app.admin,
            json!({"playroom": {"name": "staging", "host": "10.0.0.5", "port": 2222, "user": "deploy",
                   "ssh_private_key": key, "domains": ["apps.example.com"], "acme_email": "ops@example.com"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert!(!r.text.contains("PRIVATE KEY"), "the private key must never be returned: {}", r.text);
    let id = r.body["id"].as_i64().unwrap();
    assert_eq!(r.body["status"], "active");
    assert_eq!(r.body["port"], 2222);
    assert_eq!(r.body["user"], "deploy");
    assert_eq!(r.body["tutorial"], false);
    assert_eq!(r.body["trusted"], false);
    assert_eq!(r.body["has_private_key"], true);
    assert!(r.body["ssh_public_key"].as_str().unwrap().starts_with("ssh-ed25519 "));
    assert_eq!(r.body["domains"], json!(["apps.example.com"]));
    assert_eq!(r.body["host_key"], Value::Null);

    // The list shows the spec's list fields only.
    let list = app.get("/api/playrooms", &app.admin).await;
    let item = &list.body[0];
    let mut keys: Vec<_> = item.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["created_at", "host", "id", "name", "port", "status", "tutorial", "updated_at", "user"]);

    let r = app
        .request(
            Method::PATCH,
            &format!("/api/playrooms/{id}"),
            Some(&app.admin),
            Some(json!({"playroom": {"name": "prod", "trusted": true}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        (r.body["name"].as_str(), r.body["trusted"].as_bool(), r.body["port"].as_i64()),
        (Some("prod"), Some(true), Some(2222))
    );

    let detail = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!(detail.body["name"], "prod");
    assert!(!detail.text.contains("PRIVATE KEY"));

    assert_eq!(app.delete(&format!("/api/playrooms/{id}"), &app.admin).await.status, StatusCode::NO_CONTENT);
    app.get(&format!("/api/playrooms/{id}"), &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn the_private_key_is_sealed_at_rest() {
    use sqlx::Row;
    let app = TestApp::new().await;
    let key = private_key();
    let id = create(&app, json!({"name": "a", "host": "h.example.com", "ssh_private_key": key})).await;
    let stored: String = sqlx::query("SELECT ssh_private_key FROM playrooms WHERE id = $1")
        .bind(id)
        .fetch_one(app.store().pool())
        .await
        .unwrap()
        .try_get("ssh_private_key")
        .unwrap();
    assert!(stored.starts_with("v1:") && !stored.contains("PRIVATE"), "{stored}");
}

#[tokio::test]
async fn defaults_apply_when_port_and_user_are_omitted() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"name": "a", "host": "h.example.com"})).await;
    let r = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!((r.body["port"].as_i64(), r.body["user"].as_str()), (Some(22), Some("root")));
    assert_eq!(r.body["docker_socket"], "/var/run/docker.sock");
    assert_eq!((r.body["connection"].as_str(), r.body["has_private_key"].as_bool()), (Some("ssh"), Some(false)));
}

#[tokio::test]
async fn invalid_fields_are_reported_together_and_nothing_is_written() {
    let app = TestApp::new().await;
    let before = (app.count("playrooms").await, app.count("events").await);
    let r = app
        .post(
            "/api/playrooms",
            &app.admin,
            json!({"playroom": {"name": " ", "host": "http://x", "port": 70000, "user": "Root",
                   "ssh_private_key": "hello", "domains": ["ok.example.com", "Bad"], "acme_email": "nope",
                   "host_key": "garbage", "docker_socket": "relative"}}),
        )
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let mut fields: Vec<_> = details.as_object().unwrap().keys().cloned().collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "playroom.acme_email",
            "playroom.docker_socket",
            "playroom.domains[1]",
            "playroom.host",
            "playroom.host_key",
            "playroom.name",
            "playroom.port",
            "playroom.ssh_private_key",
            "playroom.user"
        ]
    );
    assert_eq!((app.count("playrooms").await, app.count("events").await), before);

    let r = app.post("/api/playrooms", &app.admin, json!({"playroom": {}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(details["playroom.name"], json!(["is required"]));
    assert_eq!(details["playroom.host"], json!(["is required"]));
}

#[tokio::test]
async fn private_key_problems_have_clear_messages() {
    let app = TestApp::new().await;
    let public = ssh_keys::generate_ed25519("t").unwrap().public_openssh;
    let r = app
        .post("/api/playrooms", &app.admin, json!({"playroom": {"name": "a", "host": "h", "ssh_private_key": public}}))
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["playroom.ssh_private_key"][0].as_str().unwrap().contains("public key"), "{details}");
}

#[tokio::test]
async fn duplicate_names_are_refused_per_account() {
    let app = TestApp::new().await;
    create(&app, json!({"name": "a", "host": "h"})).await;
    let r = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "a", "host": "h2"}})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    // Another account may use the name.
    let other = app.new_account("other").await;
    let token = app.key_for(other, play_model::scopes::ScopeSet::all(), None).await;
    let r = app.post("/api/playrooms", &token, json!({"playroom": {"name": "a", "host": "h"}})).await;
    assert_eq!(r.status, StatusCode::CREATED);
}

#[tokio::test]
async fn another_accounts_playroom_is_404_everywhere() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"name": "a", "host": "h"})).await;
    let other = app.new_account("other").await;
    let token = app.key_for(other, play_model::scopes::ScopeSet::all(), None).await;
    let path = format!("/api/playrooms/{id}");
    app.get(&path, &token).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.request(Method::PATCH, &path, Some(&token), Some(json!({"playroom": {"name": "x"}})))
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.delete(&path, &token).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    for action in ["generate_ssh_key", "test_connection"] {
        app.post(&format!("{path}/{action}"), &token, json!({}))
            .await
            .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    }
    assert!(app.get("/api/playrooms", &token).await.body.as_array().unwrap().is_empty());
}

#[tokio::test]
async fn deleting_a_playroom_with_active_playgrounds_is_409() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"name": "a", "host": "h"})).await;
    let now = play_model::time::to_db(&play_model::time::now());
    sqlx::query("INSERT INTO playgrounds (account_id, playroom_id, name, status, created_at, updated_at) VALUES ($1, $2, 'pg', 'running', $3, $3)")
        .bind(app.account_id)
        .bind(id)
        .bind(&now)
        .execute(app.store().pool())
        .await
        .unwrap();
    app.delete(&format!("/api/playrooms/{id}"), &app.admin).await.assert_error(StatusCode::CONFLICT, "CONFLICT");
    assert_eq!(app.get(&format!("/api/playrooms/{id}"), &app.admin).await.status, StatusCode::OK);
    // Once the Playground is destroyed, the Playroom can go.
    sqlx::query("UPDATE playgrounds SET status = 'destroyed'").execute(app.store().pool()).await.unwrap();
    assert_eq!(app.delete(&format!("/api/playrooms/{id}"), &app.admin).await.status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn generate_ssh_key_returns_only_the_public_half_and_replaces_the_key() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"name": "a", "host": "h", "ssh_private_key": private_key()})).await;
    let first = app.get(&format!("/api/playrooms/{id}"), &app.admin).await.body["ssh_public_key"].clone();
    let r = app.post(&format!("/api/playrooms/{id}/generate_ssh_key"), &app.admin, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(!r.text.contains("PRIVATE"));
    let public = r.body["ssh_public_key"].as_str().unwrap();
    assert!(public.starts_with("ssh-ed25519 "));
    assert_eq!(r.body["fingerprint"].as_str().unwrap(), ssh_keys::public_key_fingerprint(public).unwrap());
    let detail = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!(detail.body["ssh_public_key"], public);
    assert_ne!(detail.body["ssh_public_key"], first);
}

#[tokio::test]
async fn host_keys_can_be_given_and_moving_the_host_drops_the_pin() {
    let app = TestApp::new().await;
    let host_key = ssh_keys::generate_ed25519("host").unwrap().public_openssh;
    let id = create(&app, json!({"name": "a", "host": "h", "host_key": format!("h {host_key}")})).await;
    let r = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    let stored = r.body["host_key"].as_str().unwrap();
    assert!(host_key.starts_with(stored), "known_hosts form is normalised: {stored}");
    assert_eq!(r.body["host_key_fingerprint"].as_str().unwrap(), ssh_keys::public_key_fingerprint(&host_key).unwrap());
    assert!(r.body["host_key_pinned_at"].is_string());

    let path = format!("/api/playrooms/{id}");
    let r = app.request(Method::PATCH, &path, Some(&app.admin), Some(json!({"playroom": {"tutorial": true}}))).await;
    assert!(r.body["host_key"].is_string(), "an unrelated change keeps the pin");
    let r = app
        .request(Method::PATCH, &path, Some(&app.admin), Some(json!({"playroom": {"host": "other.example.com"}})))
        .await;
    assert_eq!(r.body["host_key"], Value::Null, "a new host drops the old pin");
    let fp = ssh_keys::public_key_fingerprint(&host_key).unwrap();
    let r = app.request(Method::PATCH, &path, Some(&app.admin), Some(json!({"playroom": {"host_key": fp}}))).await;
    assert_eq!(r.body["host_key"], fp.as_str());
    let r = app.request(Method::PATCH, &path, Some(&app.admin), Some(json!({"playroom": {"host_key": null}}))).await;
    assert_eq!(r.body["host_key"], Value::Null);
}

#[tokio::test]
async fn local_playrooms_need_the_operators_permission() {
    let app = TestApp::new().await;
    let r = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "here", "connection": "local"}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["playroom.connection"][0].as_str().unwrap().contains("disabled"));

    let app =
        TestApp::with_config(play_api::ApiConfig { allow_local_playrooms: true, ..TestApp::default_config() }).await;
    let id = create(&app, json!({"name": "here", "connection": "local"})).await;
    let r = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!((r.body["connection"].as_str(), r.body["host"].as_str()), (Some("local"), Some("localhost")));
}

#[tokio::test]
async fn test_connection_without_a_key_is_invalid_state() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"name": "a", "host": "h"})).await;
    let r = app.post(&format!("/api/playrooms/{id}/test_connection"), &app.admin, json!({})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
}

#[tokio::test]
async fn playroom_changes_write_events() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"name": "a", "host": "h"})).await;
    app.request(
        Method::PATCH,
        &format!("/api/playrooms/{id}"),
        Some(&app.admin),
        Some(json!({"playroom": {"name": "b"}})),
    )
    .await;
    app.delete(&format!("/api/playrooms/{id}"), &app.admin).await;
    let events = play_store::events::list_for_account(app.store(), app.account_id).await.unwrap();
    let kinds: Vec<_> = events.iter().filter(|e| e.entity_type == "playroom").map(|e| e.event_type.as_str()).collect();
    assert_eq!(kinds, ["playroom.created", "playroom.updated", "playroom.destroyed"]);
}

#[tokio::test]
async fn the_playroom_quota_applies() {
    let app = TestApp::with_config(play_api::ApiConfig {
        quotas: play_model::model::quota::QuotaLimits::parse("playrooms=1").unwrap(),
        ..TestApp::default_config()
    })
    .await;
    create(&app, json!({"name": "a", "host": "h"})).await;
    let r = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "b", "host": "h"}})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "QUOTA_EXCEEDED");
}
