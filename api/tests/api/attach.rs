//! `POST /api/playzones/attach` over the real router, store and play's own
//! Git host: a Playzone that reads a repository through the account's
//! installation (no token), made once per account and repository; every
//! refusal; access lost when the repository or the installation goes.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use crate::support::hosted::Hosted;
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::repository::Reach;
use play_model::scm::FullName;
use play_model::scopes::{Scope, ScopeSet};
use play_store::playzone_access;
use serde_json::json;

async fn reach(app: &TestApp, playzone: i64) -> Reach {
    playzone_access::access(app.store(), &app.state.secrets, playzone).await.unwrap().reach
}

async fn generation(app: &TestApp, playzone: i64) -> i64 {
    let row = sqlx::query("SELECT generation FROM playzones WHERE id = $1").bind(playzone);
    sqlx::Row::get(&row.fetch_one(app.store().pool()).await.unwrap(), "generation")
}

fn full(text: &str) -> FullName {
    FullName::parse("t", text).unwrap()
}

#[tokio::test]
async fn attach_makes_one_tokenless_playzone_per_repository_and_returns_it_again() {
    let h = Hosted::new().await;
    let app = &h.app;
    let made = app.post("/api/repos", &app.admin, json!({"name": "app", "auto_init": true})).await;
    // A Playzone of that name exists already: attach picks the next name.
    let taken = json!({"playzone": {"name": "app", "scm_url": "https://git.example.com/x/app.git"}});
    assert_eq!(app.post("/api/playzones", &app.admin, taken).await.status, StatusCode::CREATED);

    let first = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": "default/app"})).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
    let zone = &first.body;
    assert_eq!(zone["name"], "app-2");
    assert_eq!(zone["scm_url"], made.body["repo"]["clone_url"]);
    assert_eq!((zone["private"].as_bool(), zone["has_credentials"].as_bool()), (Some(true), Some(false)));
    let id = zone["id"].as_i64().unwrap();
    assert_eq!(reach(app, id).await, Reach::Builtin(full("default/app")), "read through the installation");

    let again = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": "default/app"})).await;
    assert_eq!((again.status, again.body["id"].as_i64()), (StatusCode::OK, Some(id)));

    app.post("/api/repos", &app.admin, json!({"name": "race", "auto_init": true})).await;
    let attach = || app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": "default/race"}));
    let (a, b) = tokio::join!(attach(), attach());
    assert_eq!(a.body["id"], b.body["id"], "two attaches at once make one Playzone: {} {}", a.text, b.text);
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::CREATED]);
    assert_eq!(app.count("playzones").await, 3);
}

#[tokio::test]
async fn attach_refuses_bad_names_unknown_and_foreign_private_repositories() {
    let h = Hosted::new().await;
    let app = &h.app;
    app.post("/api/repos", &app.admin, json!({"name": "secret", "auto_init": true})).await;
    app.post("/api/repos", &app.admin, json!({"name": "open", "private": false, "auto_init": true})).await;
    let other = app.new_account("other").await;
    let other_key = app.key_for(other, ScopeSet::all(), None).await;

    for bad in ["default", "default/", "../etc/passwd", "default/App", "default/x.git", "a/b/c"] {
        let r = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": bad})).await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert!(details["repo_full_name"].is_array(), "{bad}: {details}");
    }
    let unknown = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": "default/nope"})).await;
    unknown.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    let foreign = app.post("/api/playzones/attach", &other_key, json!({"repo_full_name": "default/secret"})).await;
    foreign.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    let no_scope = app.key_for(app.account_id, [Scope::PlayzonesRead].into_iter().collect(), None).await;
    let r = app.post("/api/playzones/attach", &no_scope, json!({"repo_full_name": "default/open"})).await;
    r.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert_eq!(app.count("playzones").await, 0, "no refusal wrote anything");

    // A public repository of play's own host may be read by every account.
    let shared = app.post("/api/playzones/attach", &other_key, json!({"repo_full_name": "default/open"})).await;
    assert_eq!(shared.status, StatusCode::CREATED, "{}", shared.text);
    let shared_id = shared.body["id"].as_i64().unwrap();
    assert_eq!(reach(app, shared_id).await, Reach::Builtin(full("default/open")));
    // Made private later: the other account loses access, and is told so.
    sqlx::query("UPDATE repositories SET private = 1 WHERE name = 'open'").execute(app.store().pool()).await.unwrap();
    let Reach::Lost(reason) = reach(app, shared_id).await else { panic!("access must be lost") };
    assert!(reason.contains("private to another account"), "{reason}");

    let bare = TestApp::new().await;
    let r = bare.post("/api/playzones/attach", &bare.admin, json!({"repo_full_name": "default/open"})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "SCM_APP_REQUIRED");
}

#[tokio::test]
async fn deleting_the_repository_or_its_installation_loses_access_and_says_why() {
    let h = Hosted::new().await;
    let app = &h.app;
    app.post("/api/repos", &app.admin, json!({"name": "app", "auto_init": true})).await;
    let zone = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": "default/app"})).await;
    let id = zone.body["id"].as_i64().unwrap();
    assert_eq!(app.get("/api/repos/default/app", &app.admin).await.body["full_name"], "default/app");

    let installations = app.get("/api/scm_installations", &app.admin).await.body;
    let installation = installations[0]["id"].as_i64().unwrap();
    assert_eq!(installations[0]["provider"], "builtin");
    let kept = app.delete(&format!("/api/scm_installations/{installation}"), &app.admin).await;
    kept.assert_error(StatusCode::CONFLICT, "CONFLICT");

    let other = app.new_account("other").await;
    let other_key = app.key_for(other, ScopeSet::all(), None).await;
    let r = app.delete("/api/repos/default/app", &other_key).await;
    r.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    let before = generation(app, id).await;
    assert_eq!(app.delete("/api/repos/default/app", &app.admin).await.status, StatusCode::NO_CONTENT);
    assert!(!h.repo_path("default/app").exists(), "the host's copy is gone");
    assert_eq!(generation(app, id).await, before + 1, "the attached Playzone is asked to sync at once");
    let Reach::Lost(reason) = reach(app, id).await else { panic!("access must be lost") };
    assert!(reason.contains("attach the repository again"), "{reason}");
    let gone = app.get("/api/repos/default/app", &app.admin).await;
    gone.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");

    // Re-created under the same name, it is a new repository: the old
    // Playzone does not silently follow it.
    app.post("/api/repos", &app.admin, json!({"name": "app", "auto_init": true})).await;
    assert!(matches!(reach(app, id).await, Reach::Lost(_)));
    assert_eq!(app.delete("/api/repos/default/app", &app.admin).await.status, StatusCode::NO_CONTENT);
    let removed = app.delete(&format!("/api/scm_installations/{installation}"), &app.admin).await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT, "{}", removed.text);
    let events: Vec<String> = play_store::events::list_for_account(app.store(), app.account_id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event_type)
        .filter(|t| t.starts_with("repo."))
        .collect();
    assert_eq!(events, ["repo.created", "repo.push", "repo.deleted", "repo.created", "repo.push", "repo.deleted"]);
}

/// Launch and templates may name a repository of play's own Git host by
/// URL: a public one links through the installation (the account's
/// attached Playzone, made once); a private one, even the account's own,
/// is refused with what to do instead, and nothing is written.
#[tokio::test]
async fn a_url_of_play_s_git_host_links_a_public_repository_and_never_a_private_one() {
    let h = Hosted::new().await;
    let app = &h.app;
    app.post("/api/repos", &app.admin, json!({"name": "open", "private": false, "auto_init": true})).await;
    app.post("/api/repos", &app.admin, json!({"name": "secret", "auto_init": true})).await;
    let compose = |url: &str| format!("services:\n  web:\n    build: .\n    labels:\n      svc/repo_url: {url}\n");
    let launcher = app.key_for(app.account_id, [Scope::LaunchWrite].into_iter().collect(), None).await;

    let secret = compose("https://play.example.com/git/default/secret.git");
    let r = app.post("/api/launch", &launcher, json!({"name": "grab", "compose_yaml": secret})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let message = details["compose_yaml.services.web.labels.svc/repo_url"][0].as_str().unwrap();
    assert!(message.contains("private repository") && message.contains("attach"), "{message}");
    let missing = compose("https://play.example.com/git/default/nope");
    let r = app.post("/api/launch", &launcher, json!({"name": "nope", "compose_yaml": missing})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!((app.count("playzones").await, app.count("playspecs").await), (0, 0), "nothing written");

    for (name, url) in [
        ("one", "https://play.example.com/git/default/open.git"),
        ("two", "https://play.example.com/git/default/open/"),
    ] {
        let r = app.post("/api/launch", &launcher, json!({"name": name, "compose_yaml": compose(url)})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }
    let zones = app.get("/api/playzones", &app.admin).await.body;
    assert_eq!(zones.as_array().unwrap().len(), 1, "one Playzone for the repository: {zones}");
    let id = zones[0]["id"].as_i64().unwrap();
    assert_eq!(reach(app, id).await, Reach::Builtin(full("default/open")), "read in place, not over the network");
    let again = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": "default/open"})).await;
    assert_eq!((again.status, again.body["id"].as_i64()), (StatusCode::OK, Some(id)));
}

#[tokio::test]
async fn the_attach_tool_of_mcp_reaches_the_same_route() {
    let h = Hosted::new().await;
    let app = &h.app;
    app.post("/api/repos", &app.admin, json!({"name": "agent", "auto_init": true})).await;
    let call = json!({"name": "attach_repository", "arguments": {"repo_full_name": "default/agent"}});
    let r = app.mcp(Some(&app.admin), "tools/call", call.clone()).await;
    let result = &r.body["result"];
    assert_ne!(result["isError"], true, "{result}");
    let id = result["structuredContent"]["id"].as_i64().unwrap();
    let again = app.mcp(Some(&app.admin), "tools/call", call).await;
    assert_eq!(again.body["result"]["structuredContent"]["id"].as_i64(), Some(id));
    let reader = app.key_for(app.account_id, [Scope::PlayzonesRead].into_iter().collect(), None).await;
    let call = json!({"name": "attach_repository", "arguments": {"repo_full_name": "default/agent"}});
    let refused = app.mcp(Some(&reader), "tools/call", call).await;
    assert_eq!(refused.body["result"]["isError"], true, "{}", refused.text);
}
