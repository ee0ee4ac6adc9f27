//! Playspecs over the real router and store: classification, validation,
//! LOCKED, mounted files and registry credentials.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::{Method, StatusCode};
use play_api::testing::{Response, TestApp};
use serde_json::{Value, json};

const COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    ports: ["8080:80"]
    depends_on:
      db: {condition: service_healthy}
  db:
    image: postgres:16
    healthcheck:
      test: ["CMD", "pg_isready"]
  worker:
    build:
      context: ./worker
      dockerfile: Dockerfile.worker
"#;

async fn create(app: &TestApp, body: Value) -> Response {
    app.post("/api/playspecs", &app.admin, json!({"playspec": body})).await
}

async fn created(app: &TestApp) -> i64 {
    let r =
        create(app, json!({"name": "shop", "description": "web + db + worker", "base_compose_yaml": COMPOSE})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["id"].as_i64().unwrap()
}

/// A Playground row of Playspec `playspec_id` on a new Playroom (the
/// reconciler is not running: only the lock matters).
async fn reference_from_playground(app: &TestApp, playspec_id: i64, status: &str) {
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "r", "host": "h"}})).await;
    insert_playground(app, room.body["id"].as_i64().unwrap(), playspec_id, "pg", status).await;
}

async fn insert_playground(app: &TestApp, room: i64, playspec_id: i64, name: &str, status: &str) {
    let now = play_model::time::to_db(&play_model::time::now());
    sqlx::query(
        "INSERT INTO playgrounds (account_id, playroom_id, playspec_id, name, status, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
    )
    .bind(app.account_id)
    .bind(room)
    .bind(playspec_id)
    .bind(name)
    .bind(status)
    .bind(&now)
    .execute(app.store().pool())
    .await
    .unwrap();
}

async fn upload(app: &TestApp, id: i64, parts: &[(&str, Option<&str>, &[u8])]) -> Response {
    app.post_multipart(&format!("/api/playspecs/{id}/add_mounted_file"), parts).await
}

#[tokio::test]
async fn create_classifies_services_and_shows_the_detail() {
    let app = TestApp::new().await;
    let r = create(&app, json!({"name": "shop", "base_compose_yaml": COMPOSE, "persist_volumes": true})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!((r.body["locked"].as_bool(), r.body["playground_count"].as_i64()), (Some(false), Some(0)));
    assert_eq!(r.body["persist_volumes"], true);
    let services = r.body["services"].as_array().unwrap();
    let by_name = |n: &str| services.iter().find(|s| s["name"] == n).unwrap().clone();
    assert_eq!(by_name("web")["type"], "static");
    assert_eq!(by_name("web")["image"], "play-test/busybox:1");
    assert_eq!(
        by_name("web")["exposure"],
        json!({"enabled": true, "port": 80, "subdomain": "web", "visibility": "external"})
    );
    assert_eq!(by_name("worker")["type"], "dynamic");
    assert_eq!(by_name("worker")["dockerfile_path"], "Dockerfile.worker");
    assert_eq!(by_name("db")["exposure"]["enabled"], false);
    assert_eq!(r.body["mounted_files"], json!([]));
    assert_eq!(r.body["credentials"], json!([]));
    let id = r.body["id"].as_i64().unwrap();

    let services = app.get(&format!("/api/playspecs/{id}/services"), &app.admin).await;
    assert_eq!(services.body.as_array().unwrap().len(), 3);

    let list = app.get("/api/playspecs", &app.admin).await;
    let mut keys: Vec<_> = list.body[0].as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "created_at",
            "description",
            "id",
            "locked",
            "name",
            "persist_volumes",
            "playground_count",
            "playzone_id",
            "sleep_after",
            "updated_at"
        ]
    );
}

#[tokio::test]
async fn validate_compose_reports_and_creates_nothing() {
    let app = TestApp::new().await;
    let before = app.count("playspecs").await;
    let r = app.post("/api/playspecs/validate_compose", &app.admin, json!({"compose_yaml": COMPOSE})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["valid"], true);
    let web = r.body["services"].as_array().unwrap().iter().find(|s| s["name"] == "web").unwrap().clone();
    assert_eq!(web["ports"], json!(["8080:80"]));

    let privileged = "services:\n  x:\n    image: a\n    privileged: true\n";
    let r = app.post("/api/playspecs/validate_compose", &app.admin, json!({"compose_yaml": privileged})).await;
    assert_eq!(r.body["valid"], false);
    assert_eq!(r.body["errors"][0]["path"], "services.x.privileged", "{}", r.text);

    // Under a trusted Playroom's policy the same file is fine.
    let room =
        app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "t", "host": "h", "trusted": true}})).await;
    let r = app
        .post(
            "/api/playspecs/validate_compose",
            &app.admin,
            json!({"compose_yaml": privileged, "playroom_id": room.body["id"]}),
        )
        .await;
    assert_eq!(r.body["valid"], true, "{}", r.text);

    let r = app.post("/api/playspecs/validate_compose", &app.admin, json!({"compose_yaml": ""})).await;
    assert_eq!(r.body["valid"], false);
    assert_eq!(app.count("playspecs").await, before);
}

#[tokio::test]
async fn bad_compose_and_fields_are_422_and_write_nothing() {
    let app = TestApp::new().await;
    let before = (app.count("playspecs").await, app.count("events").await);
    let r = create(
        &app,
        json!({"name": " ", "base_compose_yaml": "services:\n  web:\n    image: a\n    ports: [\"99999:80\"]\n"}),
    )
    .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details.get("playspec.name").is_some(), "{details}");
    assert!(
        details.as_object().unwrap().keys().any(|k| k.starts_with("playspec.base_compose_yaml.services.web.ports")),
        "{details}"
    );
    let r = create(&app, json!({})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(details["playspec.base_compose_yaml"], json!(["is required"]));
    assert_eq!((app.count("playspecs").await, app.count("events").await), before);
}

#[tokio::test]
async fn service_overrides_are_checked_against_the_compose_text() {
    let app = TestApp::new().await;
    let r = create(
        &app,
        json!({"name": "s", "base_compose_yaml": COMPOSE, "services": [
            {"name": "web", "exposure": {"enabled": true, "port": 80, "subdomain": "shop", "visibility": "internal"}},
            {"name": "worker", "workdir": "/srv/worker"}
        ]}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let web = r.body["services"].as_array().unwrap().iter().find(|s| s["name"] == "web").unwrap().clone();
    assert_eq!(web["exposure"]["subdomain"], "shop");
    assert_eq!(web["exposure"]["visibility"], "internal");

    let r = create(
        &app,
        json!({"name": "t", "base_compose_yaml": COMPOSE, "services": [
            {"name": "nope"}, {"name": "web", "type": "dynamic"}, {"name": "db", "exposure": {"enabled": true, "subdomain": "Bad"}}
        ]}),
    )
    .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let mut keys: Vec<_> = details.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "playspec.services[0].name",
            "playspec.services[1].type",
            "playspec.services[2].exposure.port",
            "playspec.services[2].exposure.subdomain"
        ]
    );
}

#[tokio::test]
async fn untrusted_policy_refusals_are_warnings_on_the_playspec() {
    let app = TestApp::new().await;
    let r = create(
        &app,
        json!({"name": "p", "base_compose_yaml": "services:\n  x:\n    image: a\n    privileged: true\n"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let warning = &r.body["warnings"][0];
    assert_eq!(warning["path"], "services.x.privileged");
    assert!(warning["message"].as_str().unwrap().starts_with("refused on untrusted Playrooms"));
}

#[tokio::test]
async fn a_playspec_used_by_a_playground_is_locked() {
    let app = TestApp::new().await;
    let id = created(&app).await;
    reference_from_playground(&app, id, "running").await;
    let path = format!("/api/playspecs/{id}");
    let detail = app.get(&path, &app.admin).await;
    assert_eq!((detail.body["locked"].as_bool(), detail.body["playground_count"].as_i64()), (Some(true), Some(1)));
    app.request(Method::PATCH, &path, Some(&app.admin), Some(json!({"playspec": {"description": "x"}})))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "LOCKED");
    app.delete(&path, &app.admin).await.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "LOCKED");
    upload(&app, id, &[("file", Some("a.env"), b"A=1"), ("mount_path", None, b"/app/.env")])
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "LOCKED");
    let cred = json!({"registry_type": "generic", "registry_url": "127.0.0.1:5000", "username": "u", "secret": "s"});
    app.post(&format!("{path}/add_registry_credential"), &app.admin, cred)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "LOCKED");

    // Unlocked again once the Playground is destroyed.
    sqlx::query("UPDATE playgrounds SET status = 'destroyed'").execute(app.store().pool()).await.unwrap();
    let r = app.request(Method::PATCH, &path, Some(&app.admin), Some(json!({"playspec": {"description": "x"}}))).await;
    assert_eq!((r.status, r.body["locked"].as_bool()), (StatusCode::OK, Some(false)));
    assert_eq!(app.delete(&path, &app.admin).await.status, StatusCode::NO_CONTENT);
}

/// The listing counts each Playspec's own holders in one grouped read:
/// not destroyed Playgrounds, and not another Playspec's.
#[tokio::test]
async fn the_listing_counts_each_playspecs_own_playgrounds() {
    let app = TestApp::new().await;
    let shop = created(&app).await;
    let blog = create(&app, json!({"name": "blog", "base_compose_yaml": COMPOSE})).await.body["id"].as_i64().unwrap();
    let idle = create(&app, json!({"name": "idle", "base_compose_yaml": COMPOSE})).await.body["id"].as_i64().unwrap();
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "r", "host": "h"}})).await;
    let room = room.body["id"].as_i64().unwrap();
    for (name, spec, status) in
        [("a", shop, "running"), ("b", shop, "in_progress"), ("c", shop, "destroyed"), ("d", blog, "failed")]
    {
        insert_playground(&app, room, spec, name, status).await;
    }
    let list = app.get("/api/playspecs", &app.admin).await;
    let counts: Vec<(i64, i64, bool)> = list
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_i64().unwrap(), p["playground_count"].as_i64().unwrap(), p["locked"].as_bool().unwrap()))
        .collect();
    assert_eq!(counts, [(shop, 2, true), (blog, 1, true), (idle, 0, false)]);
    for (id, count) in [(shop, 2), (blog, 1), (idle, 0)] {
        let detail = app.get(&format!("/api/playspecs/{id}"), &app.admin).await;
        assert_eq!(detail.body["playground_count"].as_i64(), Some(count), "{id}");
    }
}

#[tokio::test]
async fn update_reclassifies_when_the_compose_text_changes() {
    let app = TestApp::new().await;
    let id = created(&app).await;
    let r = app
        .request(
            Method::PATCH,
            &format!("/api/playspecs/{id}"),
            Some(&app.admin),
            Some(json!({"playspec": {"base_compose_yaml": "services:\n  only:\n    image: a\n"}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["services"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["name"], "shop");
}

#[tokio::test]
async fn mounted_files_upload_update_and_remove() {
    let app = TestApp::new().await;
    let id = created(&app).await;
    let r = upload(
        &app,
        id,
        &[
            ("file", Some("conf/app.env"), b"PORT=80\n"),
            ("mount_path", None, b"/app/.env"),
            ("target_services[]", None, b"web"),
        ],
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["name"], "app.env");
    assert_eq!(r.body["readonly"], true);
    assert_eq!(r.body["size"], 8);
    assert_eq!(r.body["target_services"], json!(["web"]));
    assert_eq!(r.body["sha256"].as_str().unwrap().len(), 64);
    let file_id = r.body["id"].as_i64().unwrap();

    let detail = app.get(&format!("/api/playspecs/{id}"), &app.admin).await;
    assert_eq!(detail.body["mounted_files"][0]["mount_path"], "/app/.env");
    assert!(!detail.text.contains("PORT=80"), "content is not part of the view");

    let r = app
        .request(
            Method::PATCH,
            &format!("/api/playspecs/{id}/update_mounted_file"),
            Some(&app.admin),
            Some(json!({"mounted_file_id": file_id, "readonly": false, "target_services": ["web", "worker"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        (r.body["readonly"].as_bool(), r.body["target_services"].clone()),
        (Some(false), json!(["web", "worker"]))
    );

    // The same path twice is refused.
    let r = upload(&app, id, &[("file", Some("b"), b"x"), ("mount_path", None, b"/app/.env")]).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");

    let path = format!("/api/playspecs/{id}/remove_mounted_file?mounted_file_id={file_id}");
    assert_eq!(app.delete(&path, &app.admin).await.status, StatusCode::NO_CONTENT);
    app.delete(&path, &app.admin).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.delete(&format!("/api/playspecs/{id}/remove_mounted_file"), &app.admin)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
}

#[tokio::test]
async fn bad_uploads_are_refused_field_by_field() {
    let app = TestApp::new().await;
    let id = created(&app).await;
    let r = upload(
        &app,
        id,
        &[
            ("file", Some("x"), b"1"),
            ("mount_path", None, b"/proc/evil"),
            ("target_services[]", None, b"ghost"),
            ("readonly", None, b"maybe"),
        ],
    )
    .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let mut keys: Vec<_> = details.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["mount_path", "readonly", "target_services[0]"]);
    let r = upload(&app, id, &[("mount_path", None, b"/a")]).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(details["file"], json!(["is required"]));

    let big = vec![b'x'; 1024 * 1024 + 1];
    let r = upload(&app, id, &[("file", Some("big"), &big), ("mount_path", None, b"/big")]).await;
    r.assert_error(StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE");
    assert_eq!(app.count("playspec_mounted_files").await, 0);
    // The largest file is accepted, although its request is over the API's
    // default body limit (1 MiB): the upload route's own limit wins.
    let max = vec![b'y'; 1024 * 1024];
    let r = upload(&app, id, &[("file", Some("max"), &max), ("mount_path", None, b"/max")]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

#[tokio::test]
async fn registry_credentials_keep_their_secret() {
    use sqlx::Row;
    let app = TestApp::new().await;
    let id = created(&app).await;
    let body = json!({"registry_type": "generic", "registry_url": "https://127.0.0.1:5000/", "username": "ci", "secret": "hunter2-token"});
    let r = app.post(&format!("/api/playspecs/{id}/add_registry_credential"), &app.admin, body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["registry_url"], "127.0.0.1:5000");
    assert!(!r.text.contains("hunter2"));
    let cred_id = r.body["id"].as_i64().unwrap();
    let detail = app.get(&format!("/api/playspecs/{id}"), &app.admin).await;
    assert_eq!(detail.body["credentials"][0]["username"], "ci");
    assert!(!detail.text.contains("hunter2"));
    let stored: String = sqlx::query("SELECT secret FROM playspec_registry_credentials")
        .fetch_one(app.store().pool())
        .await
        .unwrap()
        .try_get("secret")
        .unwrap();
    assert!(!stored.contains("hunter2"));
    let opened =
        play_store::playspec_files::credential_secret(app.store(), &app.state.secrets, id, cred_id).await.unwrap();
    assert_eq!(opened, "hunter2-token");

    app.post(&format!("/api/playspecs/{id}/add_registry_credential"), &app.admin, body)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let bad = json!({"registry_type": "s3", "registry_url": "ghcr.io/x", "username": "", "secret": ""});
    let r = app.post(&format!("/api/playspecs/{id}/add_registry_credential"), &app.admin, bad).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(details.as_object().unwrap().len(), 4, "{details}");

    let path = format!("/api/playspecs/{id}/remove_registry_credential?credential_id={cred_id}");
    assert_eq!(app.delete(&path, &app.admin).await.status, StatusCode::NO_CONTENT);
    app.delete(&path, &app.admin).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn another_accounts_playspec_is_404() {
    let app = TestApp::new().await;
    let id = created(&app).await;
    let other = app.new_account("other").await;
    let token = app.key_for(other, play_model::scopes::ScopeSet::all(), None).await;
    app.get(&format!("/api/playspecs/{id}"), &token).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.get(&format!("/api/playspecs/{id}/services"), &token)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.delete(&format!("/api/playspecs/{id}"), &token).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    let r = upload(&app, id, &[("file", Some("a"), b"1"), ("mount_path", None, b"/a")]).await;
    assert_eq!(r.status, StatusCode::CREATED, "the owner can");
    assert!(app.get("/api/playspecs", &token).await.body.as_array().unwrap().is_empty());
}

#[tokio::test]
async fn playspec_changes_write_events() {
    let app = TestApp::new().await;
    let id = created(&app).await;
    upload(&app, id, &[("file", Some("a"), b"1"), ("mount_path", None, b"/a")]).await;
    app.delete(&format!("/api/playspecs/{id}"), &app.admin).await;
    let events = play_store::events::list_for_account(app.store(), app.account_id).await.unwrap();
    let kinds: Vec<_> = events.iter().filter(|e| e.entity_type == "playspec").map(|e| e.event_type.as_str()).collect();
    assert_eq!(kinds, ["playspec.created", "playspec.updated", "playspec.destroyed"]);
}
