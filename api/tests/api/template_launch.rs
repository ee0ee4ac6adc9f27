//! Launching an import template over the real router and store: the
//! template compiled into a Playspec and a desired Playground, its
//! variables checked, the Playroom's policy applied, built services linked
//! to the Playzone of their repository.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use crate::support::templates::{BODY, create_template, create_version, other_account, patch};
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::compose::{Policy, parse_compose};
use serde_json::json;

async fn playroom(app: &TestApp, token: &str) -> i64 {
    let r = app.post("/api/playrooms", token, json!({"playroom": {"name": "room", "host": "h"}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["id"].as_i64().unwrap()
}

/// A Playroom and a template named `name` whose one version is `body`,
/// both the admin's: (Playroom id, template id).
async fn room_and_template(app: &TestApp, name: &str, body: &str) -> (i64, i64) {
    let room = playroom(app, &app.admin).await;
    let id = create_template(app, &app.admin, name, "").await;
    let r = create_version(app, &app.admin, id, body, false).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    (room, id)
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
async fn launch_links_a_build_service_to_the_playzone_of_its_repository() {
    let app = TestApp::new().await;
    let body = "services:\n  web:\n    build: .\n    labels:\n      svc/repo_url: https://git.example.org/team/shop.git\n  db:\n    image: postgres:16\n";
    let (room, id) = room_and_template(&app, "shop", body).await;
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

#[tokio::test]
async fn launch_applies_the_playroom_policy() {
    let app = TestApp::new().await;
    let body = "services:\n  app:\n    image: play-test/busybox:1\n    privileged: true\n";
    let (room, id) = room_and_template(&app, "priv", body).await;
    let d = app
        .post(&format!("/api/import_templates/{id}/launch"), &app.admin, json!({"playroom_id": room}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        .clone();
    assert!(d.as_object().unwrap().keys().any(|k| k.starts_with("services.app.privileged")), "{d}");
    assert_eq!(app.count("playspecs").await, 0);
}

#[tokio::test]
async fn a_templates_sleep_after_is_the_default_of_what_it_launches() {
    let app = TestApp::new().await;
    let body = "svc:\n  sleep_after: 20m\nservices:\n  web:\n    image: play-test/busybox:1\n";
    let (room, id) = room_and_template(&app, "napper", body).await;
    let r = app.post(&format!("/api/import_templates/{id}/launch"), &app.admin, json!({"playroom_id": room})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let playspec = app.get(&format!("/api/playspecs/{}", r.body["playspec_id"]), &app.admin).await;
    assert_eq!(playspec.body["sleep_after"], "20m", "{}", playspec.text);
    let playground = app.get(&format!("/api/playgrounds/{}", r.body["playground_id"]), &app.admin).await;
    assert_eq!(playground.body["sleep_after"], "20m", "{}", playground.text);
    // A value out of bounds is the template body's error.
    let bad = create_template(&app, &app.admin, "insomniac", "").await;
    let r = create_version(&app, &app.admin, bad, &body.replace("20m", "2s"), false).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.text.contains("svc.sleep_after"), "{}", r.text);
}
