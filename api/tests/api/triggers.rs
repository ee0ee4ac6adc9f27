//! `/api/triggers` over the real router and store: a template version
//! with an enabled `svc.trigger_config` makes its trigger; where and with
//! what it launches is set with `PATCH` (variables sealed, never shown);
//! scopes, another account, bad settings and bad input. What a trigger
//! does is tested end to end in `tests/e2e/triggers_e2e.rs`.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use crate::support::templates::{
    activate_launch_setting, create_template, create_version, other_account, patch, pause_then_switch_off,
};
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};
use serde_json::json;

const SITE: &str = "svc:\n  variables:\n    WHO: {required: true}\n  trigger_config: {enabled: true, event_type: push, repo_url: \"https://git.example.org/site.git/\", branch: \"feature/*\", max_playgrounds: 3, prop_id: 7, marquee_id: \"09\"}\nservices:\n  web:\n    build: .\n    labels:\n      svc/repo_url: https://git.example.org/site.git\n    environment:\n      WHO: $$var__WHO\n";

#[tokio::test]
async fn a_triggered_template_is_listed_and_acts_once_given_a_playroom() {
    let app = TestApp::new().await;
    let id = create_template(&app, &app.admin, "site", "").await;
    let made = create_version(&app, &app.admin, id, SITE, false).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let listed = app.get("/api/triggers", &app.admin).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    let trigger = &listed.body[0];
    assert_eq!((trigger["template_id"].as_i64(), trigger["event_type"].as_str()), (Some(id), Some("push")));
    assert_eq!(trigger["repo_url"], "https://git.example.org/site.git", "kept without its trailing slash");
    assert_eq!((trigger["branch"].as_str(), trigger["max_playgrounds"].as_u64()), (Some("feature/*"), Some(3)));
    assert_eq!((trigger["prop_id"].as_u64(), trigger["marquee_id"].as_u64()), (Some(7), Some(9)), "as given");
    assert_eq!(trigger["allow_forks"], false, "forks are off by default");
    assert!(trigger["condition"].as_str().unwrap().contains("needs a Playroom"), "{trigger}");
    let path = format!("/api/triggers/{}", trigger["id"]);

    activate_launch_setting(&app, "trigger", &path).await;
    let targets = app.get(&format!("{path}/targets"), &app.admin).await;
    assert_eq!((targets.status, targets.body.as_array().map(Vec::len)), (StatusCode::OK, Some(0)));

    let off = "services:\n  web:\n    image: play-test/busybox:1\n";
    let after = pause_then_switch_off(&app, "trigger", &path, id, off).await;
    assert_eq!((after.body["config_version"].as_i64(), after.body["event_type"].as_str()), (Some(2), None));
}

#[tokio::test]
async fn bad_settings_another_account_and_bad_input_are_refused() {
    let app = TestApp::new().await;
    let id = create_template(&app, &app.admin, "site", "").await;
    for (from, to, field) in [
        ("branch: \"feature/*\"", "branch: \"main;rm -rf /\"", "branch"),
        ("branch: \"feature/*\"", "branch: \"../../etc\"", "branch"),
        ("max_playgrounds: 3", "max_playgrounds: 0", "max_playgrounds"),
        ("max_playgrounds: 3", "max_playgrounds: 51", "max_playgrounds"),
        ("event_type: push", "event_type: tag", "event_type"),
        ("max_playgrounds: 3", "allow_forks: yes-please", "allow_forks"),
    ] {
        let body = SITE.replace(from, to);
        let r = create_version(&app, &app.admin, id, &body, false).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{to}: {}", r.text);
        assert!(r.text.contains(&format!("svc.trigger_config.{field}")), "{}", r.text);
    }
    assert_eq!(app.count("triggers").await, 0, "a refused version makes no trigger");
    create_version(&app, &app.admin, id, SITE, false).await;
    let trigger = app.get("/api/triggers", &app.admin).await.body[0]["id"].as_i64().unwrap();
    let path = format!("/api/triggers/{trigger}");
    let other = other_account(&app, "other").await;
    assert_eq!(app.get(&path, &other).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get(&format!("{path}/targets"), &other).await.status, StatusCode::NOT_FOUND);
    let theirs = patch(&app, &path, &other, Some(json!({"trigger": {"paused": true}}))).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/api/triggers", &other).await.body.as_array().unwrap().len(), 0);

    let unknown_room = patch(&app, &path, &app.admin, Some(json!({"trigger": {"playroom_id": 999}}))).await;
    assert_eq!(unknown_room.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", unknown_room.text);
    assert!(unknown_room.body["error"]["details"]["playroom_id"].is_array());
    let typo = patch(&app, &path, &app.admin, Some(json!({"trigger": {"pause": true}}))).await;
    assert_eq!(typo.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", typo.text);
    let unchanged = app.get(&path, &app.admin).await;
    assert_eq!((unchanged.body["paused"].as_bool(), unchanged.body["playroom_id"].as_i64()), (Some(false), None));
}

/// A pull-request trigger builds a repository the account reads through
/// its GitHub installation, which only a key that may read Playzones may
/// have built (the rule of issue #27, item 2): started by a key without
/// `playzones:read` it does nothing and says why; started again by one
/// with it, it acts. A later start by a key without it takes that back.
#[tokio::test]
async fn a_pull_request_trigger_acts_only_when_started_by_a_key_that_may_read_playzones() {
    let app = TestApp::new().await;
    let id = create_template(&app, &app.admin, "previews", "").await;
    let body = SITE.replace("event_type: push", "event_type: pull_request");
    assert_eq!(create_version(&app, &app.admin, id, &body, false).await.status, StatusCode::CREATED);
    let trigger = app.get("/api/triggers", &app.admin).await.body[0].clone();
    let path = format!("/api/triggers/{}", trigger["id"]);
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "room", "host": "h"}})).await;
    let start = json!({"trigger": {"playroom_id": room.body["id"], "variables": {"WHO": "x"}}});
    let writer: ScopeSet =
        [Scope::ImportTemplatesRead, Scope::ImportTemplatesWrite, Scope::PlaygroundsWrite].into_iter().collect();
    let writer = app.key_for(app.account_id, writer, None).await;
    let started = patch(&app, &path, &writer, Some(start.clone())).await;
    assert_eq!(started.status, StatusCode::OK, "{}", started.text);
    assert!(started.body["condition"].as_str().unwrap().contains("playzones:read"), "{}", started.text);
    let started = patch(&app, &path, &app.admin, Some(start.clone())).await;
    assert!(started.body["condition"].is_null(), "{}", started.text);
    // Changing only the variables keeps who started it.
    let vars = patch(&app, &path, &writer, Some(json!({"trigger": {"variables": {"WHO": "y"}}}))).await;
    assert!(vars.body["condition"].is_null(), "{}", vars.text);
    let again = patch(&app, &path, &writer, Some(start)).await;
    assert!(again.body["condition"].as_str().unwrap().contains("playzones:read"), "{}", again.text);
}

/// Issue #49, item 3: a template version needs only
/// `import_templates:write`; one that points a started pull-request
/// trigger at another repository, another branch pattern or another
/// Compose file takes back what the starting key's `playzones:read`
/// allowed, and the trigger says so until a key that may read starts it
/// again. The same versions from a key that holds `playzones:read` keep
/// it, and so does a version that changes nothing the trigger builds.
#[tokio::test]
async fn a_version_that_redirects_a_pull_request_trigger_takes_back_its_reading() {
    let app = TestApp::new().await;
    let id = create_template(&app, &app.admin, "previews", "").await;
    let body = SITE.replace("event_type: push", "event_type: pull_request");
    assert_eq!(create_version(&app, &app.admin, id, &body, false).await.status, StatusCode::CREATED);
    let path = format!("/api/triggers/{}", app.get("/api/triggers", &app.admin).await.body[0]["id"]);
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "room", "host": "h"}})).await;
    let start = json!({"trigger": {"playroom_id": room.body["id"], "variables": {"WHO": "x"}}});
    let author: ScopeSet = [Scope::ImportTemplatesRead, Scope::ImportTemplatesWrite].into_iter().collect();
    let author = app.key_for(app.account_id, author, None).await;
    let condition = async || app.get(&path, &app.admin).await.body["condition"].clone();
    for redirect in [
        body.replace("site.git", "secret.git"),
        body.replace("branch: \"feature/*\"", "branch: \"release/*\""),
        body.replace("WHO: $$var__WHO", "WHO: $$var__WHO\n      MORE: built-differently"),
    ] {
        let started = patch(&app, &path, &app.admin, Some(start.clone())).await;
        assert!(started.body["condition"].is_null(), "{}", started.text);
        // The same body again changes nothing it builds.
        assert_eq!(create_version(&app, &author, id, &body, false).await.status, StatusCode::CREATED);
        assert!(condition().await.is_null(), "an unchanged body keeps it");
        let made = create_version(&app, &author, id, &redirect, false).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let said = condition().await;
        assert!(said.as_str().is_some_and(|c| c.contains("playzones:read")), "{redirect}: {said}");
        // Back to the first body, by a key that may read: still waits.
        assert_eq!(create_version(&app, &app.admin, id, &body, false).await.status, StatusCode::CREATED);
        assert!(condition().await.as_str().is_some_and(|c| c.contains("playzones:read")));
    }
    let started = patch(&app, &path, &app.admin, Some(start)).await;
    assert!(started.body["condition"].is_null(), "{}", started.text);
    let by_reader = create_version(&app, &app.admin, id, &body.replace("site.git", "secret.git"), false).await;
    assert_eq!(by_reader.status, StatusCode::CREATED, "{}", by_reader.text);
    assert!(condition().await.is_null(), "a key that may read keeps it");
}

/// Triggers count against the account's `triggers` quota (and schedules
/// against `schedules`): a version that turns one on beyond it is refused
/// and writes nothing; a new version of a template whose trigger is on
/// already is not a new trigger.
#[tokio::test]
async fn a_trigger_beyond_the_quota_is_refused_and_a_new_version_of_one_is_not() {
    let app = TestApp::new().await;
    let quota = play_model::model::quota::Resource::Triggers;
    play_store::quotas::set_account_limit(app.store(), app.account_id, quota, 1).await.unwrap();
    let first = create_template(&app, &app.admin, "first", "").await;
    assert_eq!(create_version(&app, &app.admin, first, SITE, false).await.status, StatusCode::CREATED);
    let changed = SITE.replace("max_playgrounds: 3", "max_playgrounds: 4");
    let again = create_version(&app, &app.admin, first, &changed, false).await;
    assert_eq!(again.status, StatusCode::CREATED, "the same trigger, new settings");
    let second = create_template(&app, &app.admin, "second", "").await;
    let versions = app.count("import_template_versions").await;
    let refused = create_version(&app, &app.admin, second, SITE, false).await;
    let details = refused.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "QUOTA_EXCEEDED");
    assert!(refused.text.contains("triggers"), "{details} {}", refused.text);
    assert_eq!(app.count("import_template_versions").await, versions, "nothing written");
    assert_eq!(app.get("/api/triggers", &app.admin).await.body.as_array().map(Vec::len), Some(1));
    // A version without a trigger is fine.
    let plain = "services:\n  web:\n    image: play-test/busybox:1\n";
    assert_eq!(create_version(&app, &app.admin, second, plain, false).await.status, StatusCode::CREATED);
}
