//! Import templates' shared setup: a template body with variables of
//! every kind, the seeded categories, and the calls that create templates
//! and versions (used by `templates.rs`, `template_versions.rs` and
//! `template_launch.rs`).

use axum::http::{Method, StatusCode};
use play_api::testing::{Response, TestApp};
use play_model::scopes::ScopeSet;
use serde_json::{Value, json};

/// A template body using every kind of variable: required with a
/// validation, with a default, and random (used twice).
pub const BODY: &str = r#"
svc:
  variables:
    DB_PASSWORD: {name: "Database password", required: true, validation: "/^[A-Za-z0-9]{8,}$/"}
    DB_NAME: {name: "Database", default: "app"}
    SECRET: {name: "Session secret"}
services:
  db:
    image: postgres:16
    environment:
      POSTGRES_PASSWORD: $$var__DB_PASSWORD
      POSTGRES_DB: $$var__DB_NAME
  web:
    image: play-test/busybox:1
    ports: ["8080:80"]
    labels:
      svc/expose: "80"
    environment:
      SESSION_SECRET: $$random__SECRET
      OTHER: $$random__SECRET
"#;

/// Categories seeded by the migration.
pub const DATABASES: i64 = 1;
pub const WEB: i64 = 2;

/// Creates a template of `name` in the Databases category; its id.
pub async fn create_template(app: &TestApp, token: &str, name: &str, description: &str) -> i64 {
    let r = app
        .post(
            "/api/import_templates",
            token,
            json!({"import_template": {"name": name, "description": description, "category_id": DATABASES}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["id"].as_i64().unwrap()
}

/// `POST .../create_version` of template `id` with `body`.
pub async fn create_version(app: &TestApp, token: &str, id: i64, body: &str, public: bool) -> Response {
    app.post(
        &format!("/api/import_templates/{id}/create_version"),
        token,
        json!({"template_body": body, "public": public}),
    )
    .await
}

/// A `PATCH` of `path`, with or without a body.
pub async fn patch(app: &TestApp, path: &str, token: &str, body: Option<Value>) -> Response {
    app.request(Method::PATCH, path, Some(token), body).await
}

/// A key with every scope for a new account named `name`.
pub async fn other_account(app: &TestApp, name: &str) -> String {
    let id = app.new_account(name).await;
    app.key_for(id, ScopeSet::all(), None).await
}

/// A launch setting (a schedule or a trigger: `kind`) at `path` is set to
/// run on a new Playroom with variables: refused without
/// `playgrounds:write` (it launches Playgrounds), then set by the admin,
/// its variables sealed in `kind`'s table and never shown.
pub async fn activate_launch_setting(app: &TestApp, kind: &str, path: &str) {
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "room", "host": "h"}})).await;
    let room = room.body["id"].as_i64().unwrap();
    let body = json!({kind: {"playroom_id": room, "variables": {"WHO": "s3cret-value"}}});
    let templates_only: ScopeSet =
        [play_model::scopes::Scope::ImportTemplatesRead, play_model::scopes::Scope::ImportTemplatesWrite]
            .into_iter()
            .collect();
    let key = app.key_for(app.account_id, templates_only, None).await;
    let refused = patch(app, path, &key, Some(body.clone())).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);
    let set = patch(app, path, &app.admin, Some(body)).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    assert_eq!((set.body["playroom_id"].as_i64(), set.body["has_variables"].as_bool()), (Some(room), Some(true)));
    assert!(set.body["condition"].is_null(), "{}", set.text);
    assert!(!set.text.contains("s3cret-value"), "variables are never shown");
    let table = format!("SELECT variables FROM {kind}s");
    let sealed: Option<String> =
        sqlx::Row::get(&sqlx::query(&table).fetch_one(app.store().pool()).await.unwrap(), "variables");
    assert!(!sealed.unwrap().contains("s3cret-value"), "and stored sealed");
}

/// The launch setting at `path` of template `template`, paused, says so;
/// a later version `off` without its settings switches it off. The answer
/// after that.
pub async fn pause_then_switch_off(app: &TestApp, kind: &str, path: &str, template: i64, off: &str) -> Response {
    let paused = patch(app, path, &app.admin, Some(json!({kind: {"paused": true}}))).await;
    assert_eq!(paused.body["condition"], "paused");
    create_version(app, &app.admin, template, off, false).await;
    let after = app.get(path, &app.admin).await;
    assert!(after.body["condition"].as_str().unwrap().starts_with("disabled"), "{}", after.text);
    after
}
