//! `POST /api/playzones` on the URL of a repository one of the account's
//! installations reaches (issue #52, item 3): the Playzone reads it through
//! the installation, as `attach` makes one, so a private repository needs
//! no token; none reaching a private one is refused naming the
//! installations tried and pointing to `attach`; a token given, or a URL
//! of anywhere else, is created by URL as before.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use crate::support::github::Github;
use crate::support::hosted::Hosted;
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::repository::Reach;
use play_model::scm::FullName;
use play_model::scm::model::Provider;
use play_model::scopes::ScopeSet;
use play_store::playzone_access;
use serde_json::{Value, json};

fn create(name: &str, url: &str) -> Value {
    json!({"playzone": {"name": name, "scm_url": url}})
}

async fn reach(app: &TestApp, playzone: i64) -> Reach {
    playzone_access::access(app.store(), &app.state.secrets, playzone).await.unwrap().reach
}

#[tokio::test]
async fn a_private_repository_of_plays_git_host_is_read_through_the_installation() {
    let h = Hosted::new().await;
    let app = &h.app;
    let made = app.post("/api/repos", &app.admin, json!({"name": "secret", "auto_init": true})).await;
    let clone_url = made.body["repo"]["clone_url"].as_str().unwrap().to_owned();
    let body = json!({"playzone": {"name": "site", "scm_url": format!("{clone_url}/"), "default_branch": "main"}});
    let zone = app.post("/api/playzones", &app.admin, body).await;
    assert_eq!(zone.status, StatusCode::CREATED, "{}", zone.text);
    assert_eq!((zone.body["name"].as_str(), zone.body["scm_url"].as_str()), (Some("site"), Some(clone_url.as_str())));
    assert_eq!((zone.body["private"].as_bool(), zone.body["has_credentials"].as_bool()), (Some(true), Some(false)));
    assert_eq!(zone.body["default_branch"], "main");
    let id = zone.body["id"].as_i64().unwrap();
    assert_eq!(reach(app, id).await, Reach::Builtin(FullName::parse("t", "default/secret").unwrap()));

    // Once per repository: a second is a conflict that names the first.
    let again = app.post("/api/playzones", &app.admin, create("site-two", &clone_url)).await;
    again.assert_error(StatusCode::CONFLICT, "CONFLICT");
    assert!(again.text.contains("site") && again.text.contains(&format!("id {id}")), "{}", again.text);
    // Bad fields are refused field by field, before anything is written.
    let bad = json!({"playzone": {"name": "", "scm_url": clone_url, "default_branch": "../x"}});
    let details = app.post("/api/playzones", &app.admin, bad).await;
    let details = details.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["playzone.name"].is_array() && details["playzone.default_branch"].is_array(), "{details}");

    // Another account reaches no private repository of this one.
    let other = app.new_account("mallory").await;
    let key = app.key_for(other, ScopeSet::all(), None).await;
    let theirs = app.post("/api/playzones", &key, create("grab", &clone_url)).await;
    let details = theirs.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let message = details["playzone.scm_url"][0].as_str().unwrap();
    assert!(message.contains("default/secret") && message.contains("tried: play's own Git host"), "{message}");
    assert_eq!(app.count("playzones").await, 1, "no refusal wrote anything");
}

#[tokio::test]
async fn a_private_github_repository_is_read_through_the_installation_or_refused_naming_those_tried() {
    // The loopback GitHub is served over http: the by-URL path below is
    // let through the address policy as a test's allowlist would.
    let config = play_api::ApiConfig {
        repository_policy: play_model::playzone::RepositoryPolicy { urls: crate::support::github::loopback_policy() },
        ..TestApp::default_config()
    };
    let g = Github::with_app(TestApp::with_config(config).await).await;
    let app = &g.app;
    let installation = g.connect(app.account_id, 7).await;
    g.github.add_repo(7, "acme/Api", true);
    let head = g.github.commit("acme/Api", "main", &[("compose.yaml", b"services: {}\n")]);
    let web = g.github.api_url();

    let zone = app.post("/api/playzones", &app.admin, create("api", &format!("{web}/acme/api"))).await;
    assert_eq!(zone.status, StatusCode::CREATED, "{}", zone.text);
    assert_eq!(zone.body["scm_url"], format!("{web}/acme/api.git"));
    assert_eq!(zone.body["has_credentials"], false);
    let id = zone.body["id"].as_i64().unwrap();
    let access = g.access(id).await;
    let repository = FullName::parse("t", "acme/api").unwrap();
    assert_eq!(access.reach, Reach::App { provider: Provider::Github, installation: "7".into(), repository });
    assert_eq!(g.branches(id).await, vec![("main".to_owned(), head)], "read with the installation's token");

    // Private, and no installation of the account has it: refused, naming
    // the installation tried and pointing to attach.
    g.github.install(11, "other-org", "Organization");
    g.github.add_repo(11, "other-org/secret", true);
    for (url, tried) in [
        (format!("{web}/acme/missing.git"), format!("tried: github installation {} on acme", installation.id)),
        (format!("{web}/other-org/secret"), "no active github installation on other-org".to_owned()),
    ] {
        let body = json!({"playzone": {"name": "nope", "scm_url": url, "private": true}});
        let refused = app.post("/api/playzones", &app.admin, body).await;
        let details = refused.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        let message = details["playzone.credentials"][0].as_str().unwrap();
        assert!(message.contains(&tried) && message.contains("/api/playzones/attach"), "{url}: {message}");
    }
    assert_eq!(app.count("playzones").await, 1);

    // Not said private: maybe public, made by URL as before; with a token
    // it reads with the token, also as before.
    let public = app.post("/api/playzones", &app.admin, create("maybe", &format!("{web}/other-org/open"))).await;
    assert_eq!(public.status, StatusCode::CREATED, "{}", public.text);
    assert!(matches!(reach(app, public.body["id"].as_i64().unwrap()).await, Reach::Remote), "by URL");
    let body = json!({"playzone": {"name": "token", "scm_url": format!("{web}/other-org/secret"), "private": true,
        "credentials": "ghp_0123456789"}});
    let with_token = app.post("/api/playzones", &app.admin, body).await;
    assert_eq!((with_token.status, &with_token.body["has_credentials"]), (StatusCode::CREATED, &json!(true)));
}

#[tokio::test]
async fn the_message_of_a_private_url_without_a_token_says_what_to_do() {
    let app = TestApp::new().await;
    let body = json!({"playzone": {"name": "x", "scm_url": "https://git.example.org/x.git", "private": true}});
    let refused = app.post("/api/playzones", &app.admin, body).await;
    let details = refused.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let message = details["playzone.credentials"][0].as_str().unwrap();
    assert!(!message.contains("no source-hosting app is installed"), "{message}");
    assert!(message.contains("access token") && message.contains("attach"), "{message}");
}
