//! Issue #49, item 1: an installation's token never leaves GitHub and
//! never does more than the call needs. An attached Playzone's `scm_url`
//! cannot be moved (the REST route and MCP; apply refused it before); even
//! a row whose URL was moved before the fix is fetched from the provider's
//! own clone URL, and a second loopback Git server, the attacker's, never
//! sees a request; and every token play asks for names one repository and
//! the permission the call needs, which the loopback GitHub enforces
//! endpoint by endpoint.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use crate::support::github::Github;
use axum::http::{Method, StatusCode};
use play_api::testing::TestApp;
use play_git::testing::{Access, Entry, GitServer};
use play_github::testing::IssuedScope;
use play_model::playzone::RepositoryPolicy;
use serde_json::json;

async fn github_with_app_repository() -> (Github, i64, String) {
    // The operator allows the loopback Git servers over http, so the
    // attacker's URL passes the address policy: only the attach rule
    // stands in its way.
    let config = play_api::state::ApiConfig {
        repository_policy: RepositoryPolicy { urls: crate::support::github::loopback_policy() },
        ..play_api::state::ApiConfig::default()
    };
    let g = Github::with_app(TestApp::with_config(config).await).await;
    let row = sqlx::query("SELECT id FROM accounts WHERE name = 'default'");
    let default: i64 = sqlx::Row::get(&row.fetch_one(g.app.store().pool()).await.unwrap(), "id");
    g.connect(default, 7).await;
    g.github.add_repo(7, "acme/app", true);
    let head = g.github.commit("acme/app", "main", &[("compose.yaml", b"services: {}\n")]);
    let attached = g.app.post("/api/playzones/attach", &g.app.admin, json!({"repo_full_name": "acme/app"})).await;
    assert_eq!(attached.status, StatusCode::CREATED, "{}", attached.text);
    let zone = attached.body["id"].as_i64().unwrap();
    (g, zone, head)
}

fn read_scope() -> IssuedScope {
    IssuedScope {
        repositories: Some(vec!["app".into()]),
        permissions: [("contents".to_owned(), "read".to_owned())].into(),
    }
}

#[tokio::test]
async fn an_attached_playzone_never_moves_and_its_token_never_leaves_github() {
    let (g, zone, head) = github_with_app_repository().await;
    let app = &g.app;
    let attacker = GitServer::start();
    attacker.create_repo(
        "x",
        Access::Public,
        &[("main", &[("compose.yaml", Entry::File(b"services: {}\n".to_vec()))])],
    );
    let elsewhere = attacker.url("x");

    // The attack of the issue.
    let body = json!({"playzone": {"scm_url": elsewhere, "private": false}});
    let moved = app.request(Method::PATCH, &format!("/api/playzones/{zone}"), Some(&app.admin), Some(body)).await;
    assert_eq!(moved.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", moved.text);
    assert!(
        moved.body["error"]["details"]["playzone.scm_url"][0].as_str().unwrap().contains("attach"),
        "{}",
        moved.text
    );
    let shown = app.get(&format!("/api/playzones/{zone}"), &app.admin).await;
    assert_eq!(shown.body["scm_url"], format!("{}/acme/app.git", g.github.api_url()), "nothing changed");

    // A row moved before the fix (or by any other path) is still fetched
    // from GitHub's own clone URL of the repository record.
    sqlx::query("UPDATE playzones SET scm_url = $1, private = 0 WHERE id = $2")
        .bind(&elsewhere)
        .bind(zone)
        .execute(app.store().pool())
        .await
        .unwrap();
    assert_eq!(g.branches(zone).await, vec![("main".to_owned(), head)], "read from GitHub");
    assert!(attacker.requests().is_empty(), "the attacker's server saw {:?}", attacker.requests());

    // The fetch's token was limited to this repository and to reading it.
    let asked = g.github.lock().scope_requests.clone();
    assert!(asked.contains(&(7, read_scope())), "{asked:?}");
    assert!(g.github.lock().refused.is_empty(), "{:?}", g.github.lock().refused);
}

#[tokio::test]
async fn each_call_asks_for_its_repository_and_permission_only() {
    let (g, zone, _) = github_with_app_repository().await;
    let app = &g.app;
    g.branches(zone).await;
    let push = json!({"repo": "acme/app", "message": "readme", "files": [{"path": "README.md", "content": "# app\n"}]});
    let pushed = app.post("/api/repos/push", &app.admin, push).await;
    assert_eq!(pushed.status, StatusCode::OK, "{}", pushed.text);
    let made = app
        .post(
            "/api/repos/create_and_push",
            &app.admin,
            json!({"name": "shop", "files": [{"path": "compose.yaml", "content": "services: {}\n"}]}),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);

    let asked = g.github.lock().scope_requests.clone();
    let write = IssuedScope {
        repositories: Some(vec!["app".into()]),
        permissions: [("contents".to_owned(), "write".to_owned())].into(),
    };
    assert!(asked.contains(&(7, read_scope())), "the fetch: {asked:?}");
    assert!(asked.contains(&(7, write)), "the push: {asked:?}");
    for (_, scope) in &asked {
        let names_one = scope.repositories.as_ref().is_some_and(|r| r.len() == 1);
        let creates = scope.repositories.is_none()
            && scope.permissions == [("administration".to_owned(), "write".to_owned())].into();
        assert!(names_one || creates, "only a create asks beyond one repository: {scope:?}");
        assert!(scope.permissions.len() == 1, "one permission a call: {scope:?}");
    }
    assert!(g.github.lock().refused.is_empty(), "enough was asked for: {:?}", g.github.lock().refused);
}
