//! Relative paths of a Compose file (issue #13, item 10) through the real
//! router and store: on an untrusted Playroom a relative bind or secret
//! file runs only when one of the Playspec's mounted files provides it,
//! the refusal names the entry, the path and the upload that provides it,
//! and the attack forms (climbing out with `..`, absolute host paths, the
//! Docker socket) stay refused whatever files the Playspec holds.
//!
//! Links: a mounted file is the uploaded bytes, written by play as one
//! regular file and read back without following links before it is bound
//! (`tests/e2e/playground_files_e2e.rs`), so no project path can be a link.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::testing::PROJECT_COMPOSE;
use serde_json::{Value, json};

async fn untrusted_room(app: &TestApp) -> i64 {
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "shared", "host": "h"}})).await;
    assert_eq!(room.status, StatusCode::CREATED, "{}", room.text);
    room.body["id"].as_i64().unwrap()
}

async fn playspec(app: &TestApp, name: &str, yaml: &str) -> i64 {
    let r =
        app.post("/api/playspecs", &app.admin, json!({"playspec": {"name": name, "base_compose_yaml": yaml}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["id"].as_i64().unwrap()
}

/// Uploads `content` with the project path `path` (mounted at `mount`).
async fn upload(app: &TestApp, spec: i64, path: &str, mount: &str) -> (StatusCode, Value) {
    let parts: Vec<(&str, Option<&str>, &[u8])> =
        vec![("file", Some("f"), b"content"), ("mount_path", None, mount.as_bytes()), ("path", None, path.as_bytes())];
    let r = app.post_multipart(&format!("/api/playspecs/{spec}/add_mounted_file"), &parts).await;
    (r.status, r.body)
}

async fn create_playground(app: &TestApp, spec: i64, room: i64, name: &str) -> (StatusCode, Value) {
    let r = app
        .post(
            "/api/playgrounds",
            &app.admin,
            json!({"playground": {"name": name, "playspec_id": spec, "playroom_id": room}}),
        )
        .await;
    (r.status, r.body)
}

async fn update(app: &TestApp, spec: i64, body: Value) -> (StatusCode, Value) {
    let path = format!("/api/playspecs/{spec}/update_mounted_file");
    let r = app.request(axum::http::Method::PATCH, &path, Some(&app.admin), Some(body)).await;
    (r.status, r.body)
}

fn messages(body: &Value, field: &str) -> String {
    body["error"]["details"][field].to_string()
}

#[tokio::test]
async fn a_relative_bind_and_secret_run_once_mounted_files_provide_them() {
    let app = TestApp::new().await;
    let room = untrusted_room(&app).await;
    let spec = playspec(&app, "project", PROJECT_COMPOSE).await;

    let (status, body) = create_playground(&app, spec, room, "early").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let bind = messages(&body, "playspec.base_compose_yaml.services.web.volumes[0]");
    assert!(bind.contains("./nginx.conf") && bind.contains("add_mounted_file with path `nginx.conf`"), "{body}");
    let secret = messages(&body, "playspec.base_compose_yaml.secrets.db_password.file");
    assert!(secret.contains("add_mounted_file with path `db_password.txt`"), "{body}");
    let validate = |playspec_id: Option<i64>| {
        let body = json!({"compose_yaml": PROJECT_COMPOSE, "playroom_id": room, "playspec_id": playspec_id});
        let app = &app;
        async move { app.post("/api/playspecs/validate_compose", &app.admin, body).await.body["valid"].clone() }
    };
    assert_eq!(validate(Some(spec)).await, false);

    let (status, file) = upload(&app, spec, "./nginx.conf", "/etc/app/app.conf").await;
    assert_eq!(status, StatusCode::CREATED, "{file}");
    assert_eq!(file["path"], "nginx.conf", "stored normalised");
    let (status, file) = upload(&app, spec, "password.txt", "/run/secrets/db_password").await;
    assert_eq!(status, StatusCode::CREATED, "{file}");
    assert_eq!(validate(Some(spec)).await, false, "`password.txt` is not `db_password.txt`");
    // A file's project path can be corrected in place.
    let r = update(&app, spec, json!({"mounted_file_id": file["id"], "path": "./db_password.txt"})).await;
    assert_eq!((r.0, &r.1["path"]), (StatusCode::OK, &json!("db_password.txt")), "{}", r.1);

    assert_eq!(validate(Some(spec)).await, true, "the Playspec's files provide both paths");
    assert_eq!(validate(None).await, false, "without a Playspec no path resolves");
    let detail = app.get(&format!("/api/playspecs/{spec}"), &app.admin).await;
    assert!(!detail.text.contains("refused on untrusted"), "{}", detail.text);
    let (status, body) = create_playground(&app, spec, room, "ready").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[tokio::test]
async fn attack_forms_stay_refused_whatever_files_the_playspec_holds() {
    let app = TestApp::new().await;
    let room = untrusted_room(&app).await;
    let spec = playspec(&app, "attacks", "services:\n  web:\n    image: x\n").await;
    // A project path is relative and stays inside the project.
    for (path, fragment) in [("../../etc/passwd", "`..`"), ("/etc/passwd", "absolute"), ("a\\b", "relative path")] {
        let (status, body) = upload(&app, spec, path, "/etc/x").await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {body}");
        assert!(messages(&body, "path").contains(fragment), "{path}: {body}");
    }
    assert_eq!(app.count("playspec_mounted_files").await, 0);
    // Files at the paths the attacks name do not make them resolve.
    for (path, mount) in [("etc/passwd", "/p"), ("docker.sock", "/s"), ("var/run/docker.sock", "/v")] {
        assert_eq!(upload(&app, spec, path, mount).await.0, StatusCode::CREATED);
    }
    // A path names one file or one folder.
    let (status, body) = upload(&app, spec, "etc/passwd/x", "/q").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(messages(&body, "path").contains("already provides `etc/passwd`"), "{body}");
    let (_, other) = upload(&app, spec, "other.txt", "/o").await;
    for (path, fragment) in [("../../etc/passwd", "`..`"), ("etc", "already provides `etc/passwd`")] {
        let (status, body) = update(&app, spec, json!({"mounted_file_id": other["id"], "path": path})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {body}");
        assert!(messages(&body, "path").contains(fragment), "{path}: {body}");
    }
    let (status, body) = update(&app, spec, json!({"mounted_file_id": other["id"], "path": ""})).await;
    assert_eq!((status, &body["path"]), (StatusCode::OK, &Value::Null), "`\"\"` removes the path: {body}");

    for (i, (volume, fragment)) in [
        ("../../etc/passwd:/x", "`..` segment"),
        ("./etc/../../etc/passwd:/x", "`..` segment"),
        ("/etc/passwd:/x", "bind-mounting a host path"),
        ("/var/run/docker.sock:/var/run/docker.sock", "Docker socket"),
        ("./docker.sock:/var/run/docker.sock", "Docker socket"),
        ("./var/run/docker.sock:/var/run/docker.sock", "Docker socket"),
    ]
    .into_iter()
    .enumerate()
    {
        let yaml = format!("services:\n  web:\n    image: x\n    volumes: [\"{volume}\"]\n");
        let attack = playspec(&app, &format!("a{i}"), &yaml).await;
        // The same files, on the Playspec that would use them.
        for (path, mount) in [("etc/passwd", "/p"), ("docker.sock", "/s"), ("var/run/docker.sock", "/v")] {
            assert_eq!(upload(&app, attack, path, mount).await.0, StatusCode::CREATED);
        }
        let before = app.count("playgrounds").await;
        let (status, body) = create_playground(&app, attack, room, &format!("g{i}")).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{volume}: {body}");
        let message = messages(&body, "playspec.base_compose_yaml.services.web.volumes[0]");
        assert!(message.contains(fragment), "{volume}: {body}");
        assert_eq!(app.count("playgrounds").await, before, "nothing recorded for {volume}");
    }
}
