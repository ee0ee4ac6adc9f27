//! Issue #27, item 2: a Playzone that holds an access token is linked
//! only by an explicit id, from a key that may read Playzones; never by
//! the URL a Compose file, a Launch or another account's template names.
//! The attack: a Compose file that names the private repository's URL in
//! `svc/repo_url` of a build service and binds its whole tree (`./:/src`)
//! into a second service whose image the attacker chose.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};
use serde_json::json;

const URL: &str = "https://git.example.org/team/private.git";

fn attack() -> String {
    format!(
        "services:\n  web:\n    build: .\n    labels:\n      svc/repo_url: {URL}\n  \
         thief:\n    image: attacker/exfiltrate:1\n    volumes:\n      - ./:/src\n"
    )
}

async fn token_playzone(app: &TestApp) -> i64 {
    let body =
        json!({"playzone": {"name": "private", "scm_url": URL, "private": true, "credentials": "ghp_secret_token"}});
    let r = app.post("/api/playzones", &app.admin, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["id"].as_i64().unwrap()
}

async fn counts(app: &TestApp) -> (i64, i64, i64) {
    (app.count("playzones").await, app.count("playspecs").await, app.count("playgrounds").await)
}

#[tokio::test]
async fn launch_never_links_a_token_playzone_by_url() {
    let app = TestApp::new().await;
    token_playzone(&app).await;
    let launcher = app.key_for(app.account_id, [Scope::LaunchWrite].into_iter().collect(), None).await;
    let before = counts(&app).await;
    let r = app.post("/api/launch", &launcher, json!({"name": "grab", "compose_yaml": attack()})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let message = details["compose_yaml.services.web.labels.svc/repo_url"][0].as_str().unwrap();
    assert!(message.contains("access token") && message.contains("playzone_id"), "{message}");
    assert_eq!(counts(&app).await, before, "nothing written");

    // Not even with every scope: a URL never picks a token-holding Playzone.
    let r = app.post("/api/launch", &app.admin, json!({"name": "grab", "compose_yaml": attack()})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(counts(&app).await, before);

    // A Playzone of the same URL without a token is the one linked.
    let r = app.post("/api/playzones", &app.admin, json!({"playzone": {"name": "public-copy", "scm_url": URL}})).await;
    let tokenless = r.body["id"].as_i64().unwrap();
    let r = app.post("/api/launch", &launcher, json!({"name": "grab", "compose_yaml": attack()})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let spec = app.get(&format!("/api/playspecs/{}", r.body["playspecs_created"]), &app.admin).await.body;
    let web = spec["services"].as_array().unwrap().iter().find(|s| s["name"] == "web").unwrap().clone();
    assert_eq!(web["playzone_id"].as_i64(), Some(tokenless));
}

#[tokio::test]
async fn another_accounts_template_never_links_a_token_playzone() {
    let app = TestApp::new().await;
    token_playzone(&app).await;
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "room", "host": "h"}})).await;
    let room = room.body["id"].as_i64().unwrap();
    // The attacker's public template names the victim's repository.
    let attacker_account = app.new_account("attacker").await;
    let attacker = app.key_for(attacker_account, ScopeSet::all(), None).await;
    let body = json!({"import_template": {"name": "handy", "description": "", "category_id": 1}});
    let template = app.post("/api/import_templates", &attacker, body).await.body["id"].as_i64().unwrap();
    let compose = attack().replace("      - ./:/src\n", "      - ./:/src:ro\n");
    let r = app
        .post(
            &format!("/api/import_templates/{template}/create_version"),
            &attacker,
            json!({"template_body": compose, "public": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let before = counts(&app).await;
    let r =
        app.post(&format!("/api/import_templates/{template}/launch"), &app.admin, json!({"playroom_id": room})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details.as_object().unwrap().keys().any(|k| k.ends_with("svc/repo_url")), "{details}");
    assert_eq!(counts(&app).await, before, "nothing written");
}

#[tokio::test]
async fn an_explicit_link_to_a_token_playzone_needs_playzones_read() {
    let app = TestApp::new().await;
    let zone = token_playzone(&app).await;
    let compose = "services:\n  web:\n    build: .\n";
    let body = json!({"playspec": {"name": "s", "base_compose_yaml": compose, "services": [{"name": "web", "playzone_id": zone}]}});
    let writer = app.key_for(app.account_id, [Scope::PlayspecsWrite].into_iter().collect(), None).await;
    let r = app.post("/api/playspecs", &writer, body.clone()).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details.to_string().contains("playzones:read"), "{details}");
    let whole = json!({"playspec": {"name": "s", "base_compose_yaml": compose, "playzone_id": zone}});
    app.post("/api/playspecs", &writer, whole)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(app.count("playspecs").await, 0);

    let reader: ScopeSet = [Scope::PlayspecsWrite, Scope::PlayzonesRead].into_iter().collect();
    let reader = app.key_for(app.account_id, reader, None).await;
    let r = app.post("/api/playspecs", &reader, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

#[tokio::test]
async fn apply_links_a_token_playzone_only_with_playzones_read() {
    let app = TestApp::new().await;
    token_playzone(&app).await;
    let set = json!({"objects": [{
        "apiVersion": "play/v1", "kind": "Playspec", "metadata": {"name": "web"},
        "spec": {"base_compose_yaml": "services:\n  web:\n    build: .\n", "services": [{"name": "web", "playzoneRef": "private"}]}
    }]});
    let writer: ScopeSet = [Scope::PlayspecsWrite, Scope::PlayspecsRead].into_iter().collect();
    let writer = app.key_for(app.account_id, writer, None).await;
    let r = app.post("/api/apply", &writer, set.clone()).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details.to_string().contains("playzones:read"), "{details}");
    assert_eq!(app.count("playspecs").await, 0);
    let reader: ScopeSet = [Scope::PlayspecsWrite, Scope::PlayspecsRead, Scope::PlayzonesRead].into_iter().collect();
    let reader = app.key_for(app.account_id, reader, None).await;
    let r = app.post("/api/apply", &reader, set).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}
