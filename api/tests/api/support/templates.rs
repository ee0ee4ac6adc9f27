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
