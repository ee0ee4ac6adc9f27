//! Import templates over the real router and store: CRUD, versions (also
//! under concurrency), the public catalog across accounts, fuzzy search,
//! categories and launch.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use play_api::testing::{Response, TestApp};
use play_core::compose::{Policy, parse_compose};
use play_core::scopes::ScopeSet;
use play_core::store::events;
use serde_json::{Value, json};

const BODY: &str = r#"
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
const DATABASES: i64 = 1;
const WEB: i64 = 2;

async fn create_template(app: &TestApp, token: &str, name: &str, description: &str) -> i64 {
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

async fn create_version(app: &TestApp, token: &str, id: i64, body: &str, public: bool) -> Response {
    app.post(
        &format!("/api/import_templates/{id}/create_version"),
        token,
        json!({"template_body": body, "public": public}),
    )
    .await
}

async fn patch(app: &TestApp, path: &str, token: &str, body: Option<Value>) -> Response {
    app.request(Method::PATCH, path, Some(token), body).await
}

async fn other_account(app: &TestApp, name: &str) -> String {
    let id = app.new_account(name).await;
    app.key_for(id, ScopeSet::all(), None).await
}

async fn playroom(app: &TestApp, token: &str) -> i64 {
    let r = app.post("/api/playrooms", token, json!({"playroom": {"name": "room", "host": "h"}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["id"].as_i64().unwrap()
}

fn names(r: &Response) -> Vec<String> {
    r.body.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn crud_with_exact_shapes() {
    let app = TestApp::new().await;
    let r = app
        .post(
            "/api/import_templates",
            &app.admin,
            json!({"import_template": {"name": " PostgreSQL ", "description": "Relational database", "category_id": DATABASES}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let mut keys: Vec<_> = r.body.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        ["category_id", "created_at", "description", "id", "latest_version", "name", "owner", "public", "updated_at"]
    );
    assert_eq!(r.body["name"], "PostgreSQL");
    assert_eq!((r.body["owner"].as_bool(), r.body["public"].as_bool()), (Some(true), Some(false)));
    assert_eq!(r.body["latest_version"], Value::Null);
    let id = r.body["id"].as_i64().unwrap();

    let shown = app.get(&format!("/api/import_templates/{id}"), &app.admin).await;
    assert_eq!(shown.body, r.body);
    assert_eq!(names(&app.get("/api/import_templates", &app.admin).await), ["PostgreSQL"]);

    let r = patch(
        &app,
        &format!("/api/import_templates/{id}"),
        &app.admin,
        Some(json!({"import_template": {"description": "Postgres 16", "category_id": WEB}})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!((r.body["name"].as_str(), r.body["description"].as_str()), (Some("PostgreSQL"), Some("Postgres 16")));
    assert_eq!(r.body["category_id"], WEB);

    assert_eq!(app.delete(&format!("/api/import_templates/{id}"), &app.admin).await.status, StatusCode::NO_CONTENT);
    app.get(&format!("/api/import_templates/{id}"), &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    assert_eq!(app.count("import_templates").await, 0);
}

#[tokio::test]
async fn create_and_update_validate_field_by_field() {
    let app = TestApp::new().await;
    let r = app.post("/api/import_templates", &app.admin, json!({"import_template": {"description": "x"}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let keys: Vec<_> = details.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["import_template.category_id", "import_template.name"]);

    let r = app
        .post(
            "/api/import_templates",
            &app.admin,
            json!({"import_template": {"name": "  ", "description": "d".repeat(2001), "category_id": 1}}),
        )
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let keys: Vec<_> = details.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["import_template.description", "import_template.name"]);

    let r = app
        .post("/api/import_templates", &app.admin, json!({"import_template": {"name": "a", "category_id": 999}}))
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["import_template.category_id"][0].as_str().unwrap().contains("no category"), "{details}");

    let r = app.post("/api/import_templates", &app.admin, json!({"import_template": {"name": "a", "extra": 1}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["import_template.extra"].is_array(), "{details}");
    assert_eq!(app.count("import_templates").await, 0);

    let id = create_template(&app, &app.admin, "taken", "").await;
    let r = app
        .post("/api/import_templates", &app.admin, json!({"import_template": {"name": "taken", "category_id": 1}}))
        .await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let other = create_template(&app, &app.admin, "other", "").await;
    let r = patch(
        &app,
        &format!("/api/import_templates/{other}"),
        &app.admin,
        Some(json!({"import_template": {"name": "taken"}})),
    )
    .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["import_template.name"][0].as_str().unwrap().contains("already exists"), "{details}");
    let r = patch(
        &app,
        &format!("/api/import_templates/{id}"),
        &app.admin,
        Some(json!({"import_template": {"category_id": 0}})),
    )
    .await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(app.get(&format!("/api/import_templates/{id}"), &app.admin).await.body["category_id"], DATABASES);
}

#[tokio::test]
async fn categories_are_seeded_and_read_only() {
    let app = TestApp::new().await;
    let r = app.get("/api/template_categories", &app.admin).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let all = r.body.as_array().unwrap();
    assert_eq!(all[0], json!({"id": 1, "name": "Databases", "slug": "databases"}));
    let slugs: Vec<_> = all.iter().map(|c| c["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["databases", "web", "devtools", "monitoring", "messaging", "ai", "cms", "other"]);
    let r = app.post("/api/template_categories", &app.admin, json!({"name": "x", "slug": "x"})).await;
    r.assert_error(StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED");
    assert_eq!(app.delete("/api/template_categories", &app.admin).await.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(app.count("template_categories").await, 8);
}

#[tokio::test]
async fn versions_are_validated_numbered_and_listed() {
    let app = TestApp::new().await;
    let id = create_template(&app, &app.admin, "pg", "").await;
    let r = create_version(&app, &app.admin, id, BODY, false).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!((r.body["version"].as_i64(), r.body["public"].as_bool()), (Some(1), Some(false)));
    assert_eq!(r.body["template_body"], BODY);
    assert_eq!(r.body["variables"]["DB_PASSWORD"]["required"], true);
    assert!(r.body["warnings"].is_array());

    // Invalid bodies: field-addressed as validate_template returns them.
    let unused = BODY.replace("    SECRET: {name: \"Session secret\"}\n", "    SECRET: {}\n    UNUSED: {}\n");
    let details = create_version(&app, &app.admin, id, &unused, false)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert_eq!(details.as_object().unwrap().keys().collect::<Vec<_>>(), ["svc.variables.UNUSED"]);
    let undeclared = BODY.replace("$$var__DB_NAME", "$$var__NOPE");
    let details = create_version(&app, &app.admin, id, &undeclared, false)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    let keys: Vec<_> = details.as_object().unwrap().keys().cloned().collect();
    assert!(keys.contains(&"svc.variables.DB_NAME".to_owned()), "{details}");
    assert!(keys.iter().any(|k| k.starts_with("services.db.environment")), "{details}");
    let bad_label = BODY.replace("svc/expose: \"80\"", "svc/expose: \"99999\"");
    let details = create_version(&app, &app.admin, id, &bad_label, false)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert_eq!(details.as_object().unwrap().keys().collect::<Vec<_>>(), ["services.web.labels.svc/expose"]);
    let details = create_version(&app, &app.admin, id, "just text", false)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert_eq!(details.as_object().unwrap().keys().collect::<Vec<_>>(), ["template_body"]);
    let huge = format!("{BODY}\n#{}\n", "x".repeat(play_core::compose::MAX_COMPOSE_BYTES));
    let details = create_version(&app, &app.admin, id, &huge, false)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert!(details["template_body"][0].as_str().unwrap().contains("at most"), "{details}");
    let r =
        app.post(&format!("/api/import_templates/{id}/create_version"), &app.admin, json!({"template_body": 5})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(app.count("import_template_versions").await, 1);

    let r = create_version(&app, &app.admin, id, BODY, true).await;
    assert_eq!(r.body["version"], 2, "{}", r.text);
    let list = app.get(&format!("/api/import_templates/{id}/versions"), &app.admin).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.text);
    let numbers: Vec<_> = list.body.as_array().unwrap().iter().map(|v| v["version"].as_i64().unwrap()).collect();
    assert_eq!(numbers, [1, 2]);
    let mut keys: Vec<_> = list.body[0].as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["created_at", "id", "public", "template_body", "template_id", "variables", "version"]);
    let t = app.get(&format!("/api/import_templates/{id}"), &app.admin).await;
    assert_eq!((t.body["latest_version"].as_i64(), t.body["public"].as_bool()), (Some(2), Some(true)));

    // A deleted version's number is not reused.
    let v2 = list.body[1]["id"].as_i64().unwrap();
    let r = app.delete(&format!("/api/import_templates/{id}/destroy_version?version_id={v2}"), &app.admin).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert_eq!(create_version(&app, &app.admin, id, BODY, false).await.body["version"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_create_version_numbers_are_sequential() {
    let app = Arc::new(TestApp::new().await);
    let id = create_template(&app, &app.admin, "busy", "").await;
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                let r = create_version(&app, &app.admin, id, BODY, false).await;
                assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
                r.body["version"].as_i64().unwrap()
            })
        })
        .collect();
    let mut numbers = Vec::new();
    for task in tasks {
        numbers.push(task.await.unwrap());
    }
    numbers.sort();
    assert_eq!(numbers, (1..=10).collect::<Vec<_>>());
    let listed = app.get(&format!("/api/import_templates/{id}/versions"), &app.admin).await;
    let listed: BTreeSet<_> = listed.body.as_array().unwrap().iter().map(|v| v["version"].as_i64().unwrap()).collect();
    assert_eq!(listed, (1..=10).collect());
}

#[tokio::test]
async fn the_catalog_shows_public_versions_to_every_account_and_only_owners_write() {
    let app = TestApp::new().await;
    let other = other_account(&app, "other").await;
    let id = create_template(&app, &app.admin, "pg", "Postgres").await;
    let v1 = create_version(&app, &app.admin, id, BODY, false).await.body["id"].as_i64().unwrap();
    let v2 = create_version(&app, &app.admin, id, BODY, false).await.body["id"].as_i64().unwrap();
    let path = format!("/api/import_templates/{id}");

    // Private: invisible to the other account.
    app.get(&path, &other).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.get(&format!("{path}/versions"), &other).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    assert!(names(&app.get("/api/import_templates", &other).await).is_empty());

    // Version 1 public: the template and that version only.
    let r = patch(&app, &format!("{path}/toggle_public?version_id={v1}"), &app.admin, None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!((r.body["version"].as_i64(), r.body["public"].as_bool()), (Some(1), Some(true)));
    let seen = app.get(&path, &other).await;
    assert_eq!(seen.status, StatusCode::OK, "{}", seen.text);
    assert_eq!(
        (seen.body["owner"].as_bool(), seen.body["public"].as_bool(), seen.body["latest_version"].as_i64()),
        (Some(false), Some(true), Some(1))
    );
    assert_eq!(app.get(&path, &app.admin).await.body["latest_version"], 2);
    let versions = app.get(&format!("{path}/versions"), &other).await;
    assert_eq!(versions.body.as_array().unwrap().len(), 1, "{}", versions.text);
    assert_eq!(names(&app.get("/api/import_templates", &other).await), ["pg"]);
    assert_eq!(names(&app.get("/api/import_templates?mine=true", &other).await), Vec::<String>::new());
    assert_eq!(names(&app.get("/api/import_templates?mine=false", &other).await), ["pg"]);
    assert_eq!(names(&app.get("/api/import_templates?category_id=1", &other).await), ["pg"]);
    assert!(names(&app.get("/api/import_templates?category_id=2", &other).await).is_empty());
    app.get("/api/import_templates?nope=1", &other)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");

    // Only the owner writes: everything else is 404, and nothing changes.
    let update = json!({"import_template": {"name": "mine now"}});
    patch(&app, &path, &other, Some(update)).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.delete(&path, &other).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    create_version(&app, &other, id, BODY, true).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    patch(&app, &format!("{path}/toggle_public?version_id={v1}"), &other, None)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.delete(&format!("{path}/destroy_version?version_id={v1}"), &other)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    assert_eq!(app.count("import_template_versions").await, 2);
    assert_eq!(app.get(&path, &app.admin).await.body["name"], "pg");

    // toggle_public flips back (version_id in a JSON body this time).
    let r = patch(&app, &format!("{path}/toggle_public"), &app.admin, Some(json!({"version_id": v1}))).await;
    assert_eq!(r.body["public"], false, "{}", r.text);
    app.get(&path, &other).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    // `public` sets instead of flipping, idempotently.
    for _ in 0..2 {
        let r = patch(&app, &format!("{path}/toggle_public?version_id={v2}&public=true"), &app.admin, None).await;
        assert_eq!(r.body["public"], true, "{}", r.text);
    }

    // Parameter errors.
    let d = patch(&app, &format!("{path}/toggle_public"), &app.admin, None)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert_eq!(d.as_object().unwrap().keys().collect::<Vec<_>>(), ["version_id"]);
    let d = patch(&app, &format!("{path}/toggle_public?version_id={v1}"), &app.admin, Some(json!({"version_id": v2})))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert_eq!(d.as_object().unwrap().keys().collect::<Vec<_>>(), ["version_id"]);
    app.delete(&format!("{path}/destroy_version?version_id={v1}&public=true"), &app.admin)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    app.delete(&format!("{path}/destroy_version?version_id=999999"), &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");

    // A version of another template is not this template's.
    let second = create_template(&app, &app.admin, "second", "").await;
    patch(&app, &format!("/api/import_templates/{second}/toggle_public?version_id={v1}"), &app.admin, None)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn search_is_fuzzy_ranked_limited_and_scoped_to_visible_templates() {
    let app = TestApp::new().await;
    let other = other_account(&app, "other").await;
    for (name, description) in [
        ("Grafana", "Dashboards for Prometheus and PostgreSQL"),
        ("MySQL", "Relational database"),
        ("PostgreSQL", "Relational database with a persistent volume"),
        ("WordPress", "Blog with MySQL"),
    ] {
        create_template(&app, &app.admin, name, description).await;
    }
    // Another account's: one public (found), one private (never found).
    let public = create_template(&app, &other, "Postgres Exporter", "metrics").await;
    create_version(&app, &other, public, BODY, true).await;
    let private = create_template(&app, &other, "Postgres Private", "hidden").await;
    create_version(&app, &other, private, BODY, false).await;

    let r = app.get("/api/import_templates/search?query=postgress", &app.admin).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let found = names(&r);
    assert_eq!(found[0], "PostgreSQL", "{found:?}");
    assert!(found.contains(&"Postgres Exporter".to_owned()), "{found:?}");
    assert!(!found.contains(&"Postgres Private".to_owned()), "{found:?}");
    assert!(!found.contains(&"MySQL".to_owned()), "{found:?}");
    assert_eq!(r.body[0]["owner"], true);

    assert_eq!(names(&app.get("/api/import_templates/search?query=graf", &app.admin).await)[0], "Grafana");
    assert_eq!(names(&app.get("/api/import_templates/search?query=wordpres", &app.admin).await)[0], "WordPress");
    assert_eq!(names(&app.get("/api/import_templates/search?query=mysql", &app.admin).await), ["MySQL", "WordPress"]);
    assert!(names(&app.get("/api/import_templates/search?query=kubernetes", &app.admin).await).is_empty());
    let hidden = names(&app.get("/api/import_templates/search?query=private", &app.admin).await);
    assert!(hidden.is_empty(), "{hidden:?}");

    for n in 0..12 {
        create_template(&app, &app.admin, &format!("Redis cache {n}"), "").await;
    }
    assert_eq!(names(&app.get("/api/import_templates/search?query=redis", &app.admin).await).len(), 10);

    for bad in ["", "query=", "query=%20%20", "query=--"] {
        let details = app
            .get(&format!("/api/import_templates/search?{bad}"), &app.admin)
            .await
            .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
            .clone();
        assert!(details["query"].is_array(), "{bad}: {details}");
    }
}

#[tokio::test]
async fn launch_compiles_the_template_into_a_playspec() {
    let app = TestApp::new().await;
    let room = playroom(&app, &app.admin).await;
    let id = create_template(&app, &app.admin, "pg", "").await;
    create_version(&app, &app.admin, id, BODY, false).await;
    let second = create_version(&app, &app.admin, id, &BODY.replace("postgres:16", "postgres:17"), false).await;
    let v2 = second.body["id"].as_i64().unwrap();

    let r = app
        .post(
            &format!("/api/import_templates/{id}/launch"),
            &app.admin,
            json!({"playroom_id": room, "variables": {"DB_PASSWORD": "s3cretPassw0rd"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!((r.body["template_id"].as_i64(), r.body["version"].as_i64()), (Some(id), Some(2)));
    assert_eq!(r.body["generated_keys"], json!(["SECRET"]));
    let name = r.body["playspec_name"].as_str().unwrap();
    assert!(name.starts_with("pg-") && name.len() == 9, "{name}");
    let playspec_id = r.body["playspec_id"].as_i64().unwrap();

    let playspec = app.get(&format!("/api/playspecs/{playspec_id}"), &app.admin).await;
    assert_eq!(playspec.status, StatusCode::OK, "{}", playspec.text);
    // The launch recorded the desired Playground, which locks the Playspec.
    let playground = app.get(&format!("/api/playgrounds/{}", r.body["playground_id"]), &app.admin).await;
    assert_eq!(playground.status, StatusCode::OK, "{}", playground.text);
    assert_eq!(
        (playground.body["status"].as_str(), playground.body["playspec_id"].as_i64()),
        (Some("in_progress"), Some(playspec_id))
    );
    assert_eq!(playground.body["name"].as_str(), Some(name));
    assert_eq!(playspec.body["locked"], true);
    let yaml = playspec.body["base_compose_yaml"].as_str().unwrap().to_owned();
    assert!(!yaml.contains("svc:") && !yaml.contains("$$var__") && !yaml.contains("$$random__"), "{yaml}");
    let (report, model) = parse_compose(&yaml, &Policy::UNTRUSTED);
    assert!(report.valid, "{:?}", report.errors);
    let model = model.unwrap();
    let env = |service: &str, key: &str| model.services[service].environment.get(key).cloned().flatten().unwrap();
    assert_eq!(model.services["db"].image.as_deref(), Some("postgres:17"));
    assert_eq!(env("db", "POSTGRES_PASSWORD"), "s3cretPassw0rd");
    assert_eq!(env("db", "POSTGRES_DB"), "app");
    let secret = env("web", "SESSION_SECRET");
    assert_eq!(secret.len(), 16);
    assert!(secret.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{secret}");
    assert_eq!(env("web", "OTHER"), secret);
    let services = playspec.body["services"].as_array().unwrap();
    assert_eq!(services.len(), 2);
    assert_eq!(services.iter().find(|s| s["name"] == "web").unwrap()["exposure"]["enabled"], true);

    // An explicit version and name; the name must be free.
    let body = json!({"playroom_id": room, "version": 1, "name": "my db", "variables": {"DB_PASSWORD": "abcdefgh12"}});
    let r = app.post(&format!("/api/import_templates/{id}/launch"), &app.admin, body.clone()).await;
    assert_eq!((r.status, r.body["version"].as_i64()), (StatusCode::CREATED, Some(1)), "{}", r.text);
    assert_eq!(r.body["playspec_name"], "my db");
    let first = r.body["playspec_id"].as_i64().unwrap();
    let d = app
        .post(&format!("/api/import_templates/{id}/launch"), &app.admin, body)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert_eq!(d.as_object().unwrap().keys().collect::<Vec<_>>(), ["name"]);

    // Destroying the version, then the template, leaves the Playspecs as they were.
    let before = app.get(&format!("/api/playspecs/{playspec_id}"), &app.admin).await.body;
    let r = app.delete(&format!("/api/import_templates/{id}/destroy_version?version_id={v2}"), &app.admin).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get(&format!("/api/playspecs/{playspec_id}"), &app.admin).await.body, before);
    assert_eq!(app.delete(&format!("/api/import_templates/{id}"), &app.admin).await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get(&format!("/api/playspecs/{playspec_id}"), &app.admin).await.body, before);
    assert_eq!(app.get(&format!("/api/playspecs/{first}"), &app.admin).await.status, StatusCode::OK);
}

#[tokio::test]
async fn launch_refuses_bad_variables_and_unknown_objects() {
    let app = TestApp::new().await;
    let other = other_account(&app, "other").await;
    let room = playroom(&app, &app.admin).await;
    let id = create_template(&app, &app.admin, "pg", "").await;
    let path = format!("/api/import_templates/{id}/launch");

    // No versions yet.
    app.post(&path, &app.admin, json!({"playroom_id": room}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
    create_version(&app, &app.admin, id, BODY, false).await;

    let cases = [
        (json!({}), "variables.DB_PASSWORD", "is required"),
        (json!({"DB_PASSWORD": ""}), "variables.DB_PASSWORD", "is required"),
        (json!({"DB_PASSWORD": "short"}), "variables.DB_PASSWORD", "does not match"),
        (json!({"DB_PASSWORD": "abcdefgh12", "NOPE": "x"}), "variables.NOPE", "not a variable"),
        (json!({"DB_PASSWORD": ["a"]}), "variables.DB_PASSWORD", "must be a string"),
    ];
    for (variables, key, message) in cases {
        let d = app
            .post(&path, &app.admin, json!({"playroom_id": room, "variables": variables}))
            .await
            .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
            .clone();
        assert_eq!(d.as_object().unwrap().keys().collect::<Vec<_>>(), [key], "{variables}: {d}");
        assert!(d[key][0].as_str().unwrap().contains(message), "{variables}: {d}");
    }
    let d = app
        .post(&path, &app.admin, json!({"variables": {}}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert_eq!(d.as_object().unwrap().keys().collect::<Vec<_>>(), ["playroom_id"]);
    let d = app
        .post(&path, &app.admin, json!({"playroom_id": room, "name": "", "variables": {}}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert_eq!(d.as_object().unwrap().keys().collect::<Vec<_>>(), ["name", "variables.DB_PASSWORD"]);

    let ok = json!({"DB_PASSWORD": "abcdefgh12"});
    app.post(&path, &app.admin, json!({"playroom_id": 999999, "variables": ok}))
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.post(&path, &app.admin, json!({"playroom_id": room, "version": 7, "variables": ok}))
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    // Another account cannot see the private template, nor use our Playroom.
    let other_room = playroom(&app, &other).await;
    app.post(&path, &other, json!({"playroom_id": other_room, "variables": ok}))
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    assert_eq!(app.count("playspecs").await, 0);

    // Public: the other account launches on its own Playroom, not on ours.
    let versions = app.get(&format!("/api/import_templates/{id}/versions"), &app.admin).await;
    let v1 = versions.body[0]["id"].as_i64().unwrap();
    patch(&app, &format!("/api/import_templates/{id}/toggle_public?version_id={v1}"), &app.admin, None).await;
    app.post(&path, &other, json!({"playroom_id": room, "variables": ok}))
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    let r = app.post(&path, &other, json!({"playroom_id": other_room, "variables": ok})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(app.count("playspecs").await, 1);
}

#[tokio::test]
async fn launch_applies_the_playroom_policy() {
    let app = TestApp::new().await;
    let room = playroom(&app, &app.admin).await;
    let id = create_template(&app, &app.admin, "priv", "").await;
    let body = "services:\n  app:\n    image: play-test/busybox:1\n    privileged: true\n";
    assert_eq!(create_version(&app, &app.admin, id, body, false).await.status, StatusCode::CREATED);
    let d = app
        .post(&format!("/api/import_templates/{id}/launch"), &app.admin, json!({"playroom_id": room}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert!(d.as_object().unwrap().keys().any(|k| k.starts_with("services.app.privileged")), "{d}");
    assert_eq!(app.count("playspecs").await, 0);
}

#[tokio::test]
async fn writes_record_template_events() {
    let app = TestApp::new().await;
    let id = create_template(&app, &app.admin, "pg", "").await;
    let v = create_version(&app, &app.admin, id, BODY, false).await.body["id"].as_i64().unwrap();
    patch(&app, &format!("/api/import_templates/{id}/toggle_public?version_id={v}"), &app.admin, None).await;
    patch(
        &app,
        &format!("/api/import_templates/{id}"),
        &app.admin,
        Some(json!({"import_template": {"description": "x"}})),
    )
    .await;
    app.delete(&format!("/api/import_templates/{id}/destroy_version?version_id={v}"), &app.admin).await;
    app.delete(&format!("/api/import_templates/{id}"), &app.admin).await;
    // A refused write records nothing.
    app.post("/api/import_templates", &app.admin, json!({"import_template": {"name": ""}})).await;
    let all = events::list_for_account(app.store(), app.account_id).await.unwrap();
    let template_events: Vec<_> =
        all.iter().filter(|e| e.entity_type == "template").map(|e| (e.event_type.as_str(), e.entity_id)).collect();
    assert_eq!(
        template_events,
        [
            ("template.created", id),
            ("template.updated", id),
            ("template.updated", id),
            ("template.updated", id),
            ("template.updated", id),
            ("template.destroyed", id),
        ]
    );
}

#[tokio::test]
async fn the_template_quota_is_enforced() {
    use play_core::model::quota::Resource;
    use play_core::store::quotas;
    let app = TestApp::new().await;
    quotas::set_account_limit(app.store(), app.account_id, Resource::ImportTemplates, 1).await.unwrap();
    create_template(&app, &app.admin, "one", "").await;
    app.post("/api/import_templates", &app.admin, json!({"import_template": {"name": "two", "category_id": 1}}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "QUOTA_EXCEEDED");
    assert_eq!(app.count("import_templates").await, 1);
}

#[tokio::test]
async fn launch_links_a_build_service_to_the_playzone_of_its_repository() {
    let app = TestApp::new().await;
    let room = playroom(&app, &app.admin).await;
    let id = create_template(&app, &app.admin, "shop", "").await;
    let body = "services:\n  web:\n    build: .\n    labels:\n      svc/repo_url: https://git.example.org/team/shop.git\n  db:\n    image: postgres:16\n";
    let r = create_version(&app, &app.admin, id, body, false).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let launch = |name: &'static str| {
        let app = &app;
        async move {
            let path = format!("/api/import_templates/{id}/launch");
            app.post(&path, &app.admin, json!({"playroom_id": room, "name": name})).await
        }
    };
    let r = launch("shop-1").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let created = r.body["playzones_created"].as_array().unwrap().clone();
    assert_eq!(created.len(), 1, "{}", r.text);
    let zone = created[0].as_i64().unwrap();
    let spec = app.get(&format!("/api/playspecs/{}", r.body["playspec_id"]), &app.admin).await.body;
    let web = spec["services"].as_array().unwrap().iter().find(|s| s["name"] == "web").unwrap().clone();
    assert_eq!((web["type"].as_str(), web["playzone_id"].as_i64()), (Some("dynamic"), Some(zone)));
    // Launched again: the same Playzone.
    let r = launch("shop-2").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["playzones_created"], json!([]));
    assert_eq!(app.count("playzones").await, 1);
    // A template naming a metadata address as its repository: refused,
    // nothing written.
    let hostile = body.replace("https://git.example.org/team/shop.git", "http://169.254.169.254/latest/meta-data");
    create_version(&app, &app.admin, id, &hostile, false).await;
    let before = (app.count("playzones").await, app.count("playspecs").await, app.count("playgrounds").await);
    let r = launch("evil").await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details.as_object().unwrap().keys().any(|k| k.contains("svc/repo_url")), "{details}");
    let after = (app.count("playzones").await, app.count("playspecs").await, app.count("playgrounds").await);
    assert_eq!(after, before);
}
