//! The GitHub App's install flow over the real router and store, against
//! the loopback GitHub server: a `state` bound to the account (and to the
//! browser session that asked), used once, accepted only from a browser
//! signed in to that account; the installation connected only if the
//! person's OAuth code sees it; one account per installation.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;

use crate::support::browser::Browser;
use axum::http::{Method, StatusCode};
use play_api::testing::{Response, TestApp};
use play_github::testing::{CLIENT_SECRET, FakeGithub, KeyPair};
use play_model::scopes::{Scope, ScopeSet};

struct Setup {
    app: TestApp,
    github: FakeGithub,
    /// Signed in with the admin key.
    browser: Browser,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let keys = KeyPair::generate(dir.path());
    let github = FakeGithub::start("99", &keys).await;
    github.install(7, "acme", "Organization");
    github.install(9, "victim-org", "Organization");
    github.grant("octocat", 7);
    let api = crate::support::github::api_for(&github, &keys);
    let mut app = TestApp::new().await;
    app.state = app.state.clone().with_github_app(Arc::new(api));
    app.router = play_api::router(app.state.clone());
    let browser = Browser::sign_in(&app, &app.admin).await;
    Setup { app, github, browser, _dir: dir }
}

/// Starts the flow as `token`; the state from the install URL.
async fn start(app: &TestApp, token: &str) -> String {
    let started = app.request(Method::POST, "/api/scm_installations/github", Some(token), None).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.text);
    let url = started.body["install_url"].as_str().unwrap();
    assert!(url.contains("/apps/play-test/installations/new?state="), "{url}");
    url.split("state=").nth(1).unwrap().to_owned()
}

fn setup_path(installation: &str, state: &str, code: &str) -> String {
    format!(
        "/api/scm_installations/github/setup?installation_id={installation}&setup_action=install&state={state}&code={code}"
    )
}

/// GitHub's redirect, followed by `browser`.
async fn come_back(app: &TestApp, browser: &Browser, installation: &str, state: &str, code: &str) -> Response {
    browser.request(app, Method::GET, &setup_path(installation, state, code), None, false).await
}

#[tokio::test]
async fn an_installation_the_person_can_see_is_connected_once_to_the_account() {
    let Setup { app, github, browser, .. } = setup().await;
    let state = start(&app, &app.admin).await;
    let back = come_back(&app, &browser, "7", &state, &github.code_for("octocat")).await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.text);
    assert_eq!(
        (&back.body["provider"], &back.body["external_id"], &back.body["status"]),
        (&"github".into(), &"7".into(), &"active".into())
    );
    let listed = app.get("/api/scm_installations", &app.admin).await;
    assert!(listed.body.as_array().unwrap().iter().any(|i| i["external_id"] == "7"), "{}", listed.text);

    // The state was used: a second visit with it is refused.
    let replay = come_back(&app, &browser, "7", &state, &github.code_for("octocat")).await;
    assert_eq!(replay.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", replay.text);
    assert!(replay.body["error"]["details"]["state"].is_array(), "{}", replay.text);

    // Installing again (GitHub's "update") keeps the one row.
    let again = come_back(&app, &browser, "7", &start(&app, &app.admin).await, &github.code_for("octocat")).await;
    assert_eq!((again.status, &again.body["id"]), (StatusCode::OK, &back.body["id"]));
    assert_eq!(app.count("scm_installations").await, 1);
}

#[tokio::test]
async fn another_organisations_installation_id_is_refused() {
    let Setup { app, github, browser, .. } = setup().await;
    // octocat cannot see installation 9: typing its id is not enough.
    let spoofed = come_back(&app, &browser, "9", &start(&app, &app.admin).await, &github.code_for("octocat")).await;
    assert_eq!(spoofed.status, StatusCode::NOT_FOUND, "{}", spoofed.text);
    let guessed_code = come_back(&app, &browser, "7", &start(&app, &app.admin).await, "guessed").await;
    assert_eq!(guessed_code.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", guessed_code.text);
    assert!(!guessed_code.text.contains(CLIENT_SECRET));
    assert_eq!(app.count("scm_installations").await, 0);
}

/// Issue #49, item 4: GitHub lists an installation to anyone who can read
/// one of its repositories. Only a person who administers the account it
/// is on connects it: an organisation's admin, or the user account's own
/// user; a plain member, or someone who sees another user's installation,
/// is told why and nothing is connected.
#[tokio::test]
async fn only_a_person_who_administers_the_account_connects_its_installation() {
    let Setup { app, github, browser, .. } = setup().await;
    github.grant_member("reader", 7);
    let member = come_back(&app, &browser, "7", &start(&app, &app.admin).await, &github.code_for("reader")).await;
    assert_eq!(member.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", member.text);
    let said = member.body["error"]["details"]["installation_id"][0].as_str().unwrap();
    assert!(said.contains("do not administer") && said.contains("member"), "{said}");

    github.install(12, "octocat", "User");
    github.grant("collaborator", 12);
    let theirs =
        come_back(&app, &browser, "12", &start(&app, &app.admin).await, &github.code_for("collaborator")).await;
    assert_eq!(theirs.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", theirs.text);
    assert!(theirs.text.contains("only octocat can connect it"), "{}", theirs.text);
    assert_eq!(app.count("scm_installations").await, 0, "nothing connected");

    github.grant("octocat", 12);
    let own = come_back(&app, &browser, "12", &start(&app, &app.admin).await, &github.code_for("octocat")).await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.text);
    let admin = come_back(&app, &browser, "7", &start(&app, &app.admin).await, &github.code_for("octocat")).await;
    assert_eq!(admin.status, StatusCode::OK, "an admin of acme: {}", admin.text);
}

#[tokio::test]
async fn an_installation_belongs_to_one_account() {
    let Setup { app, github, browser, .. } = setup().await;
    let ok = come_back(&app, &browser, "7", &start(&app, &app.admin).await, &github.code_for("octocat")).await;
    assert_eq!(ok.status, StatusCode::OK);
    let other = app.new_account("other").await;
    let other_key = app.key_for(other, ScopeSet::all(), None).await;
    github.grant("mallory", 7);
    let theirs = Browser::sign_in(&app, &other_key).await;
    let taken = come_back(&app, &theirs, "7", &start(&app, &other_key).await, &github.code_for("mallory")).await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.text);
    let others = app.get("/api/scm_installations", &other_key).await;
    assert_eq!(others.body.as_array().unwrap().len(), 0, "{}", others.text);
}

#[tokio::test]
async fn bad_states_and_scopes_change_nothing() {
    let Setup { app, github, browser, .. } = setup().await;
    let expired = start(&app, &app.admin).await;
    sqlx::query("UPDATE scm_install_states SET expires_at = '2000-01-01T00:00:00Z'")
        .execute(app.store().pool())
        .await
        .unwrap();
    let late = come_back(&app, &browser, "7", &expired, &github.code_for("octocat")).await;
    assert_eq!(late.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", late.text);
    let forged = come_back(&app, &browser, "7", &"A".repeat(43), &github.code_for("octocat")).await;
    assert_eq!(forged.status, StatusCode::UNPROCESSABLE_ENTITY);
    let missing =
        browser.request(&app, Method::GET, "/api/scm_installations/github/setup?installation_id=7", None, false).await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", missing.text);
    let odd = come_back(&app, &browser, "7%27%20OR%201=1", &start(&app, &app.admin).await, "x").await;
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

#[tokio::test]
async fn the_setup_is_accepted_only_in_a_browser_signed_in_to_the_account_that_asked() {
    let Setup { app, github, browser, .. } = setup().await;
    let code = || github.code_for("octocat");

    // Not signed in: sent to sign in, and back here after; the state stays.
    let state = start(&app, &app.admin).await;
    let anonymous = app.request(Method::GET, &setup_path("7", &state, &code()), None, None).await;
    assert_eq!(anonymous.status, StatusCode::SEE_OTHER, "{}", anonymous.text);
    let location = anonymous.headers[axum::http::header::LOCATION].to_str().unwrap().to_owned();
    assert!(location.starts_with("/sign-in?next=%2Fapi%2Fscm_installations%2Fgithub%2Fsetup%3F"), "{location}");
    assert_eq!(app.count("scm_installations").await, 0);

    // The attack: someone else's state (another account's), opened by a
    // person signed in to their own account. Refused, and the state is
    // used up; nothing is connected to either account.
    let attacker = app.new_account("attacker").await;
    let attacker_key = app.key_for(attacker, ScopeSet::all(), None).await;
    let planted = start(&app, &attacker_key).await;
    let victim = come_back(&app, &browser, "7", &planted, &code()).await;
    assert_eq!(victim.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", victim.text);
    assert!(victim.body["error"]["details"]["state"][0].as_str().unwrap().contains("another play account"));
    assert_eq!(app.count("scm_installations").await, 0);
    let attackers_browser = Browser::sign_in(&app, &attacker_key).await;
    let replay = come_back(&app, &attackers_browser, "7", &planted, &code()).await;
    assert_eq!(replay.status, StatusCode::UNPROCESSABLE_ENTITY, "the refused state is used up: {}", replay.text);

    // A state asked for from a browser session is good in that session
    // only, even for the same account.
    let from_session = browser.request(&app, Method::POST, "/api/scm_installations/github", None, true).await;
    assert_eq!(from_session.status, StatusCode::CREATED, "{}", from_session.text);
    let bound = from_session.body["install_url"].as_str().unwrap().split("state=").nth(1).unwrap().to_owned();
    let second = Browser::sign_in(&app, &app.admin).await;
    let elsewhere = come_back(&app, &second, "7", &bound, &code()).await;
    assert_eq!(elsewhere.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", elsewhere.text);
    let bound = browser.request(&app, Method::POST, "/api/scm_installations/github", None, true).await;
    let bound = bound.body["install_url"].as_str().unwrap().split("state=").nth(1).unwrap().to_owned();
    let same = come_back(&app, &browser, "7", &bound, &code()).await;
    assert_eq!(same.status, StatusCode::OK, "{}", same.text);

    // The state of the first step is still good after signing in.
    sqlx::query("DELETE FROM scm_installations WHERE external_id = '7'").execute(app.store().pool()).await.unwrap();
    let later = come_back(&app, &browser, "7", &state, &code()).await;
    assert_eq!(later.status, StatusCode::OK, "{}", later.text);

    // A session whose key may not write repositories connects nothing.
    let reader = app.key_for(app.account_id, [Scope::ReposRead].into_iter().collect(), None).await;
    let readers_browser = Browser::sign_in(&app, &reader).await;
    let refused = come_back(&app, &readers_browser, "7", &start(&app, &app.admin).await, &code()).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);
}
