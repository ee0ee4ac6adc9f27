//! `/api/launch_defaults` (issue #52, item 6) over the real router and
//! store: the account's Playroom for schedules and triggers that have
//! none. Idle ones take it when it is set, new ones when a version turns
//! them on; one that has a Playroom keeps it; the Playroom's delete
//! clears it. Scopes, another account's Playroom and bad input are
//! refused and change nothing.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use crate::support::templates::{create_template, create_version, other_account, patch};
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};
use serde_json::{Value, json};

const NIGHTLY: &str = "svc:\n  job_mode: true\n  schedule_config: {enabled: true, cron: \"0 3 * * *\"}\nservices:\n  job:\n    image: play-test/busybox:1\n";
const PULLS: &str = "svc:\n  trigger_config: {enabled: true, event_type: pull_request, repo_url: \"https://github.com/o/site\"}\nservices:\n  web:\n    build: .\n    labels:\n      svc/repo_url: https://github.com/o/site\n";

async fn room(app: &TestApp, token: &str, name: &str) -> i64 {
    let made = app.post("/api/playrooms", token, json!({"playroom": {"name": name, "host": "h"}})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    made.body["id"].as_i64().unwrap()
}

async fn put(app: &TestApp, token: &str, body: Value) -> play_api::testing::Response {
    app.request(axum::http::Method::PUT, "/api/launch_defaults", Some(token), Some(body)).await
}

/// The first schedule's or trigger's row as the API shows it.
async fn first(app: &TestApp, kind: &str) -> Value {
    app.get(&format!("/api/{kind}s"), &app.admin).await.body[0].clone()
}

#[tokio::test]
async fn idle_settings_take_the_default_and_new_ones_start_without_another_call() {
    let app = TestApp::new().await;
    let shown = app.get("/api/launch_defaults", &app.admin).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.text);
    assert_eq!(shown.body, json!({"playroom_id": null, "pull_requests_allowed": false}));

    let idle = create_template(&app, &app.admin, "idle", "").await;
    create_version(&app, &app.admin, idle, NIGHTLY, false).await;
    assert!(first(&app, "schedule").await["condition"].as_str().unwrap().contains("PUT /api/launch_defaults"));
    let mine = room(&app, &app.admin, "room").await;
    let elsewhere = room(&app, &app.admin, "elsewhere").await;
    let set = put(&app, &app.admin, json!({"playroom_id": mine})).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    assert_eq!(set.body, json!({"playroom_id": mine, "pull_requests_allowed": true}));
    let schedule = first(&app, "schedule").await;
    assert_eq!((schedule["playroom_id"].as_i64(), &schedule["condition"]), (Some(mine), &Value::Null), "{schedule}");

    // A new template's version turns a schedule on: it runs there, and
    // the version warns of nothing.
    let fresh = create_template(&app, &app.admin, "fresh", "").await;
    let created = create_version(&app, &app.admin, fresh, NIGHTLY, false).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    assert!(!created.text.contains("svc.schedule_config"), "no idle warning: {}", created.text);
    let all = app.get("/api/schedules", &app.admin).await.body;
    let made = all.as_array().unwrap().iter().find(|s| s["template_id"] == fresh).unwrap();
    assert_eq!((made["playroom_id"].as_i64(), &made["condition"]), (Some(mine), &Value::Null), "{made}");

    // One that has a Playroom of its own keeps it when the default moves.
    let path = format!("/api/schedules/{}", made["id"]);
    patch(&app, &path, &app.admin, Some(json!({"schedule": {"playroom_id": elsewhere}}))).await;
    put(&app, &app.admin, json!({"playroom_id": elsewhere})).await;
    put(&app, &app.admin, json!({"playroom_id": mine})).await;
    assert_eq!(app.get(&path, &app.admin).await.body["playroom_id"], elsewhere);

    // Switched off then on again by versions, a schedule whose Playroom
    // was taken away adopts the default again.
    patch(&app, &path, &app.admin, Some(json!({"schedule": {"playroom_id": null}}))).await;
    create_version(&app, &app.admin, fresh, "services:\n  job:\n    image: play-test/busybox:1\n", false).await;
    create_version(&app, &app.admin, fresh, NIGHTLY, false).await;
    assert_eq!(app.get(&path, &app.admin).await.body["playroom_id"], mine);

    // The Playroom's delete clears the default; settings wait again.
    put(&app, &app.admin, json!({"playroom_id": elsewhere})).await;
    patch(&app, &path, &app.admin, Some(json!({"schedule": {"playroom_id": mine}}))).await;
    let gone = app.delete(&format!("/api/playrooms/{elsewhere}"), &app.admin).await;
    assert!(gone.status.is_success(), "{}", gone.text);
    assert_eq!(app.get("/api/launch_defaults", &app.admin).await.body["playroom_id"], Value::Null);
    let later = create_template(&app, &app.admin, "later", "").await;
    let warned = create_version(&app, &app.admin, later, NIGHTLY, false).await;
    assert!(warned.text.contains("PUT /api/launch_defaults"), "{}", warned.text);
}

#[tokio::test]
async fn a_pull_request_trigger_acts_on_the_default_only_if_both_keys_may_read_playzones() {
    let app = TestApp::new().await;
    let mine = room(&app, &app.admin, "room").await;
    let without_read: ScopeSet =
        [Scope::ImportTemplatesRead, Scope::ImportTemplatesWrite, Scope::PlaygroundsWrite].into_iter().collect();
    let limited = app.key_for(app.account_id, without_read, None).await;
    let set = put(&app, &limited, json!({"playroom_id": mine})).await;
    assert_eq!(set.body, json!({"playroom_id": mine, "pull_requests_allowed": false}), "{}", set.text);
    let id = create_template(&app, &app.admin, "pulls", "").await;
    create_version(&app, &app.admin, id, PULLS, false).await;
    let trigger = first(&app, "trigger").await;
    assert_eq!(trigger["playroom_id"], mine);
    assert!(trigger["condition"].as_str().unwrap().contains("playzones:read"), "{trigger}");

    // Chosen by a key that may read, it acts; written by one that may
    // not, a new trigger still waits.
    let other = create_template(&app, &app.admin, "pulls-two", "").await;
    put(&app, &app.admin, json!({"playroom_id": mine})).await;
    let author = app.key_for(app.account_id, without_read, None).await;
    create_version(&app, &author, other, PULLS, false).await;
    let all = app.get("/api/triggers", &app.admin).await.body;
    let second = all.as_array().unwrap().iter().find(|t| t["template_id"] == other).unwrap();
    assert!(second["condition"].as_str().unwrap().contains("playzones:read"), "{second}");
    let third = create_template(&app, &app.admin, "pulls-three", "").await;
    create_version(&app, &app.admin, third, PULLS, false).await;
    let all = app.get("/api/triggers", &app.admin).await.body;
    let acting = all.as_array().unwrap().iter().find(|t| t["template_id"] == third).unwrap();
    assert_eq!((acting["playroom_id"].as_i64(), &acting["condition"]), (Some(mine), &Value::Null), "{acting}");
}

#[tokio::test]
async fn scopes_another_accounts_playroom_and_bad_input_are_refused_and_change_nothing() {
    let app = TestApp::new().await;
    let mine = room(&app, &app.admin, "room").await;
    let stranger = other_account(&app, "stranger").await;
    let theirs = room(&app, &stranger, "theirs").await;
    let id = create_template(&app, &app.admin, "idle", "").await;
    create_version(&app, &app.admin, id, NIGHTLY, false).await;

    let templates_only: ScopeSet = [Scope::ImportTemplatesRead, Scope::ImportTemplatesWrite].into_iter().collect();
    let key = app.key_for(app.account_id, templates_only, None).await;
    let refused = put(&app, &key, json!({"playroom_id": mine})).await;
    refused.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert!(refused.text.contains("playgrounds:write"), "{}", refused.text);
    let readers: ScopeSet = [Scope::ImportTemplatesRead].into_iter().collect();
    let reader = app.key_for(app.account_id, readers, None).await;
    put(&app, &reader, json!({"playroom_id": null})).await.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");

    let foreign = put(&app, &app.admin, json!({"playroom_id": theirs})).await;
    foreign.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(foreign.body["error"]["details"]["playroom_id"].is_array(), "{}", foreign.text);
    for bad in [json!({"playroom_id": "one"}), json!({"playroom": mine}), json!([mine]), json!({"playroom_id": -1})] {
        let r = put(&app, &app.admin, bad.clone()).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", r.text);
    }
    assert_eq!(app.get("/api/launch_defaults", &app.admin).await.body["playroom_id"], Value::Null);
    assert_eq!(first(&app, "schedule").await["playroom_id"], Value::Null);
    // Clearing needs no right to launch.
    assert_eq!(put(&app, &key, json!({"playroom_id": null})).await.status, StatusCode::OK);
}

/// A Playroom manifest's `launchDefault` (the branches quick start relies
/// on it): `true` makes it the default in the apply's transaction, with
/// `playgrounds:write` only; applying again is `unchanged`; a default
/// moved outside apply is drift and is put back; left out, apply leaves
/// the default alone; a non-boolean is refused under the object's field.
#[tokio::test]
async fn a_playroom_manifest_says_it_is_the_launch_default() {
    use crate::support::apply::{apply, object};
    let app = TestApp::new().await;
    let id = create_template(&app, &app.admin, "idle", "").await;
    create_version(&app, &app.admin, id, NIGHTLY, false).await;
    let manifest = |launch: Value| json!({"objects": [object("Playroom", "box", json!({"host": "127.0.0.1", "launchDefault": launch}))]});
    let no_launch: ScopeSet =
        [Scope::PlayroomsRead, Scope::PlayroomsWrite, Scope::PlayroomsDelete].into_iter().collect();
    let key = app.key_for(app.account_id, no_launch, None).await;
    let refused = apply(&app, &key, manifest(json!(true)), false).await;
    refused.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert_eq!(app.count("playrooms").await, 0, "all or nothing");
    let typo = apply(&app, &app.admin, manifest(json!("yes")), false).await;
    typo.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(typo.body["error"]["details"]["objects[0].spec.launchDefault"].is_array(), "{}", typo.text);

    let made = apply(&app, &app.admin, manifest(json!(true)), false).await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.text);
    let room = made.body["results"][0]["id"].as_i64().unwrap();
    assert_eq!(app.get("/api/launch_defaults", &app.admin).await.body["playroom_id"], room);
    assert_eq!(first(&app, "schedule").await["playroom_id"], room, "the idle schedule took it");
    let again = apply(&app, &app.admin, manifest(json!(true)), false).await;
    assert_eq!(again.body["results"][0]["action"], "unchanged", "{}", again.text);

    put(&app, &app.admin, json!({"playroom_id": null})).await;
    let repaired = apply(&app, &app.admin, manifest(json!(true)), false).await;
    assert_eq!(repaired.body["results"][0]["action"], "configured", "{}", repaired.text);
    assert_eq!(app.get("/api/launch_defaults", &app.admin).await.body["playroom_id"], room);

    let silent = json!({"objects": [object("Playroom", "box", json!({"host": "127.0.0.1", "port": 2222}))]});
    assert_eq!(apply(&app, &app.admin, silent, false).await.status, StatusCode::OK);
    assert_eq!(app.get("/api/launch_defaults", &app.admin).await.body["playroom_id"], room, "left alone");
    apply(&app, &app.admin, manifest(json!(false)), false).await;
    assert_eq!(app.get("/api/launch_defaults", &app.admin).await.body["playroom_id"], Value::Null);
}
