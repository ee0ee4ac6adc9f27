//! The GitHub App's install flow over the real router and store, against
//! the loopback GitHub server: a `state` bound to the account, used once;
//! the installation connected only if the person's OAuth code sees it;
//! one account per installation.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use play_api::testing::{Response, TestApp};
use play_core::scopes::{Scope, ScopeSet};
use play_github::testing::{CLIENT_SECRET, FakeGithub, KeyPair};

mod support;

struct Setup {
    app: TestApp,
    github: FakeGithub,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let keys = KeyPair::generate(dir.path());
    let github = FakeGithub::start("99", &keys).await;
    github.install(7, "acme", "Organization");
    github.install(9, "victim-org", "Organization");
    github.grant("octocat", 7);
    let api = support::github::api_for(&github, &keys);
    let mut app = TestApp::new().await;
    app.state = app.state.clone().with_github_app(Arc::new(api));
    app.router = play_api::router(app.state.clone());
    Setup { app, github, _dir: dir }
}

/// Starts the flow as `token`; the state from the install URL.
async fn start(app: &TestApp, token: &str) -> String {
    let started = app.request(Method::POST, "/api/scm_installations/github", Some(token), None).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.text);
    let url = started.body["install_url"].as_str().unwrap();
    assert!(url.contains("/apps/play-test/installations/new?state="), "{url}");
    url.split("state=").nth(1).unwrap().to_owned()
}

async fn come_back(app: &TestApp, installation: &str, state: &str, code: &str) -> Response {
    let path = format!(
        "/api/scm_installations/github/setup?installation_id={installation}&setup_action=install&state={state}&code={code}"
    );
    app.request(Method::GET, &path, None, None).await
}

#[tokio::test]
async fn an_installation_the_person_can_see_is_connected_once_to_the_account() {
    let Setup { app, github, .. } = setup().await;
    let state = start(&app, &app.admin).await;
    let back = come_back(&app, "7", &state, &github.code_for("octocat")).await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.text);
    assert_eq!(
        (&back.body["provider"], &back.body["external_id"], &back.body["status"]),
        (&"github".into(), &"7".into(), &"active".into())
    );
    let listed = app.get("/api/scm_installations", &app.admin).await;
    assert!(listed.body.as_array().unwrap().iter().any(|i| i["external_id"] == "7"), "{}", listed.text);

    // The state was used: a second visit with it is refused.
    let replay = come_back(&app, "7", &state, &github.code_for("octocat")).await;
    assert_eq!(replay.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", replay.text);
    assert!(replay.body["error"]["details"]["state"].is_array(), "{}", replay.text);

    // Installing again (GitHub's "update") keeps the one row.
    let again = come_back(&app, "7", &start(&app, &app.admin).await, &github.code_for("octocat")).await;
    assert_eq!((again.status, &again.body["id"]), (StatusCode::OK, &back.body["id"]));
    assert_eq!(app.count("scm_installations").await, 1);
}

#[tokio::test]
async fn another_organisations_installation_id_is_refused() {
    let Setup { app, github, .. } = setup().await;
    // octocat cannot see installation 9: typing its id is not enough.
    let spoofed = come_back(&app, "9", &start(&app, &app.admin).await, &github.code_for("octocat")).await;
    assert_eq!(spoofed.status, StatusCode::NOT_FOUND, "{}", spoofed.text);
    let guessed_code = come_back(&app, "7", &start(&app, &app.admin).await, "guessed").await;
    assert_eq!(guessed_code.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", guessed_code.text);
    assert!(!guessed_code.text.contains(CLIENT_SECRET));
    assert_eq!(app.count("scm_installations").await, 0);
}

#[tokio::test]
async fn an_installation_belongs_to_one_account() {
    let Setup { app, github, .. } = setup().await;
    let ok = come_back(&app, "7", &start(&app, &app.admin).await, &github.code_for("octocat")).await;
    assert_eq!(ok.status, StatusCode::OK);
    let other = app.new_account("other").await;
    let other_key = app.key_for(other, ScopeSet::all(), None).await;
    github.grant("mallory", 7);
    let taken = come_back(&app, "7", &start(&app, &other_key).await, &github.code_for("mallory")).await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.text);
    let others = app.get("/api/scm_installations", &other_key).await;
    assert_eq!(others.body.as_array().unwrap().len(), 0, "{}", others.text);
}

#[tokio::test]
async fn bad_states_and_scopes_change_nothing() {
    let Setup { app, github, .. } = setup().await;
    let expired = start(&app, &app.admin).await;
    sqlx::query("UPDATE scm_install_states SET expires_at = '2000-01-01T00:00:00Z'")
        .execute(app.store().pool())
        .await
        .unwrap();
    let late = come_back(&app, "7", &expired, &github.code_for("octocat")).await;
    assert_eq!(late.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", late.text);
    let forged = come_back(&app, "7", &"A".repeat(43), &github.code_for("octocat")).await;
    assert_eq!(forged.status, StatusCode::UNPROCESSABLE_ENTITY);
    let missing = app.request(Method::GET, "/api/scm_installations/github/setup?installation_id=7", None, None).await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", missing.text);
    let odd = come_back(&app, "7%27%20OR%201=1", &start(&app, &app.admin).await, "x").await;
    assert_eq!(odd.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", odd.text);
    assert_eq!(app.count("scm_installations").await, 0);

    let reader = app.key_for(app.account_id, [Scope::ReposRead].into_iter().collect(), None).await;
    let refused = app.request(Method::POST, "/api/scm_installations/github", Some(&reader), None).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);
}

#[tokio::test]
async fn without_a_configured_app_the_flow_is_not_found() {
    let app = TestApp::new().await;
    let started = app.request(Method::POST, "/api/scm_installations/github", Some(&app.admin), None).await;
    assert_eq!(started.status, StatusCode::NOT_FOUND, "{}", started.text);
    let back = app
        .request(Method::GET, "/api/scm_installations/github/setup?installation_id=7&state=x&code=y", None, None)
        .await;
    assert_eq!(back.status, StatusCode::NOT_FOUND);
}
