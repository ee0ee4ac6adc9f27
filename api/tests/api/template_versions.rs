//! Import template versions over the real router and store: validated,
//! numbered (also under concurrency, never reused) and listed.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::support::templates::{BODY, create_template, create_version};
use axum::http::StatusCode;
use play_api::testing::TestApp;
use serde_json::{Value, json};

/// The field errors of a version of template `id` with `body`, refused.
async fn refused(app: &TestApp, id: i64, body: &str) -> Value {
    create_version(app, &app.admin, id, body, false)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone()
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
    let details = refused(&app, id, &unused).await;
    assert_eq!(details.as_object().unwrap().keys().collect::<Vec<_>>(), ["svc.variables.UNUSED"]);
    let undeclared = BODY.replace("$$var__DB_NAME", "$$var__NOPE");
    let details = refused(&app, id, &undeclared).await;
    let keys: Vec<_> = details.as_object().unwrap().keys().cloned().collect();
    assert!(keys.contains(&"svc.variables.DB_NAME".to_owned()), "{details}");
    assert!(keys.iter().any(|k| k.starts_with("services.db.environment")), "{details}");
    let bad_label = BODY.replace("svc/expose: \"80\"", "svc/expose: \"99999\"");
    let details = refused(&app, id, &bad_label).await;
    assert_eq!(details.as_object().unwrap().keys().collect::<Vec<_>>(), ["services.web.labels.svc/expose"]);
    let details = refused(&app, id, "just text").await;
    assert_eq!(details.as_object().unwrap().keys().collect::<Vec<_>>(), ["template_body"]);
    let huge = format!("{BODY}\n#{}\n", "x".repeat(play_model::compose::MAX_COMPOSE_BYTES));
    let details = refused(&app, id, &huge).await;
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
