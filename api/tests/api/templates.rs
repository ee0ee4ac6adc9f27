//! Import templates over the real router and store: CRUD, the public
//! catalog across accounts, fuzzy search, categories, events and the
//! quota. Versions are tested in `template_versions.rs`, launch in
//! `template_launch.rs`.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use crate::support::templates::{BODY, DATABASES, WEB, create_template, create_version, other_account, patch};
use axum::http::StatusCode;
use play_api::testing::{Response, TestApp};
use play_store::events;
use serde_json::{Value, json};

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

    // The detail is the record plus its schedule and trigger (none yet).
    let shown = app.get(&format!("/api/import_templates/{id}"), &app.admin).await;
    let mut expected = r.body.clone();
    expected["schedule"] = Value::Null;
    expected["trigger"] = Value::Null;
    assert_eq!(shown.body, expected);
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
    use play_model::model::quota::Resource;
    use play_store::quotas;
    let app = TestApp::new().await;
    quotas::set_account_limit(app.store(), app.account_id, Resource::ImportTemplates, 1).await.unwrap();
    create_template(&app, &app.admin, "one", "").await;
    app.post("/api/import_templates", &app.admin, json!({"import_template": {"name": "two", "category_id": 1}}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "QUOTA_EXCEEDED");
    assert_eq!(app.count("import_templates").await, 1);
}
