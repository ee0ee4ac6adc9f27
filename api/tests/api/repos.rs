//! The repositories facility over the real router, store and play's own
//! Git host (in a temporary folder); what was written is read back with
//! the stock `git` client (apt-get install git).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use crate::support::hosted::{Hosted, git};
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};
use serde_json::{Value, json};

fn field(body: &Value, name: &str) -> String {
    body["error"]["details"][name].to_string()
}

#[tokio::test]
async fn create_push_and_create_and_push_as_the_contract_says() {
    let h = Hosted::new().await;
    let app = &h.app;
    let created = app.post("/api/repos", &app.admin, json!({"name": "app", "description": "An app"})).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let repo = &created.body["repo"];
    assert_eq!(repo["full_name"], "default/app");
    assert_eq!(repo["private"], true, "private by default");
    assert_eq!(repo["default_branch"], "main");
    assert_eq!(repo["clone_url"], "https://play.example.com/git/default/app.git");
    assert_eq!(repo["ssh_url"], Value::Null);

    let files = json!([{"path": "compose.yaml", "content": "services: {}\n"}, {"path": "app/Dockerfile", "content": "FROM scratch\n"}]);
    let pushed =
        app.post("/api/repos/push", &app.admin, json!({"repo": "default/app", "files": files, "message": "Add"})).await;
    assert_eq!(pushed.status, StatusCode::OK, "{}", pushed.text);
    assert_eq!(pushed.body["files_pushed"], 2);
    assert_eq!(pushed.body["commit_sha"].as_str().unwrap().len(), 40);
    let (log, listed) = h.cloned("default/app");
    assert_eq!(log, ["Add"], "one commit for both files, on an empty repository");
    assert_eq!(listed, ["app/Dockerfile", "compose.yaml"]);

    let both = json!({"name": "site", "files": [{"path": "index.html", "content": "<h1>hi</h1>"}]});
    let made = app.post("/api/repos/create_and_push", &app.admin, both).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    assert_eq!(made.body["repo"]["full_name"], "default/site");
    assert_eq!(made.body["commit"]["files_pushed"], 1);
    assert_eq!(h.cloned("default/site").0, ["Initial commit"], "the contract's default message");

    let readme = app.post("/api/repos", &app.admin, json!({"name": "docs", "auto_init": true, "private": false})).await;
    assert_eq!(readme.body["repo"]["private"], false);
    assert_eq!(h.cloned("default/docs").1, ["README.md"]);

    let all = app.get("/api/repos", &app.admin).await;
    let names: Vec<&str> = all.body.as_array().unwrap().iter().map(|r| r["full_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["default/app", "default/site", "default/docs"]);
    let installations = app.get("/api/scm_installations", &app.admin).await;
    assert_eq!(installations.body.as_array().unwrap().len(), 1);
    assert_eq!(installations.body[0]["provider"], "builtin");
}

#[tokio::test]
async fn every_push_is_recorded_with_a_repo_push_event() {
    let h = Hosted::new().await;
    let app = &h.app;
    app.post("/api/repos", &app.admin, json!({"name": "app", "auto_init": true})).await;
    let body = json!({"repo": "default/app", "files": [{"path": "a.txt", "content": "1"}], "message": "a"});
    let first = app.post("/api/repos/push", &app.admin, body.clone()).await;
    assert_eq!(first.body["changed"], true);
    let again = app.post("/api/repos/push", &app.admin, body).await;
    assert_eq!(again.body["changed"], false, "the same files make no commit");
    assert_eq!(again.body["commit_sha"], first.body["commit_sha"]);
    assert_eq!(app.count("repository_pushes").await, 2, "the README and the first push; the no-op is not a push");
    let events = play_store::events::list_for_account(app.store(), app.account_id).await.unwrap();
    let pushes: Vec<_> = events.iter().filter(|e| e.entity_type == "repo" && e.action == "push").collect();
    assert_eq!(pushes.len(), 2);
    let last = pushes.iter().max_by_key(|e| e.id).unwrap().metadata.clone().unwrap();
    assert_eq!(last["repository"], "default/app");
    assert_eq!(last["branch"], "main");
    assert_eq!(last["after"], first.body["commit_sha"]);
    assert!(last["before"].as_str().is_some_and(|s| s.len() == 40));
}

#[tokio::test]
async fn bad_input_is_refused_field_by_field_and_writes_nothing() {
    let h = Hosted::new().await;
    let app = &h.app;
    let missing = app.post("/api/repos", &app.admin, json!({})).await;
    missing.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(field(&missing.body, "name").contains("required"), "{}", missing.text);
    let upper = app.post("/api/repos", &app.admin, json!({"name": "MyApp"})).await;
    upper.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(field(&upper.body, "name").contains("myapp"), "{}", upper.text);
    for name in ["../x", ".git", "a/b", "x.git"] {
        app.post("/api/repos", &app.admin, json!({"name": name}))
            .await
            .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    }
    assert_eq!(app.count("repositories").await, 0);

    app.post("/api/repos", &app.admin, json!({"name": "app", "auto_init": true})).await;
    app.post("/api/repos", &app.admin, json!({"name": "app"})).await.assert_error(StatusCode::CONFLICT, "CONFLICT");
    let head = git(&h.repo_path("default/app"), &["rev-parse", "main"]);
    for path in ["../../etc/passwd", "/etc/passwd", ".git/config", "a\\b", "x/.GIT/hooks/post-update"] {
        let attack = json!({"repo": "default/app", "files": [{"path": "ok.txt", "content": "1"}, {"path": path, "content": "x"}], "message": "m"});
        let refused = app.post("/api/repos/push", &app.admin, attack).await;
        refused.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert!(refused.body["error"]["details"]["files[1].path"].is_array(), "{path}: {}", refused.text);
    }
    assert_eq!(git(&h.repo_path("default/app"), &["rev-parse", "main"]), head, "no refused push moved the branch");
    assert!(!h.dir.path().join("etc").exists());

    let bad_file = json!({"name": "site", "files": [{"path": "../x", "content": ""}]});
    app.post("/api/repos/create_and_push", &app.admin, bad_file)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(!h.repo_path("default/site").exists(), "a refused create_and_push creates no repository");
    assert_eq!(app.count("repositories").await, 1);

    let unknown = json!({"repo": "default/nope", "files": [{"path": "a", "content": ""}], "message": "m"});
    app.post("/api/repos/push", &app.admin, unknown).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn another_accounts_repository_is_not_found_and_scopes_are_enforced() {
    let h = Hosted::new().await;
    let app = &h.app;
    app.post("/api/repos", &app.admin, json!({"name": "app", "auto_init": true})).await;
    let other = app.new_account("other").await;
    let other_key = app.key_for(other, ScopeSet::all(), None).await;
    let push = json!({"repo": "default/app", "files": [{"path": "evil.txt", "content": "x"}], "message": "m"});
    app.post("/api/repos/push", &other_key, push.clone())
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    assert!(app.get("/api/repos", &other_key).await.body.as_array().unwrap().is_empty());
    let theirs = app.post("/api/repos", &other_key, json!({"name": "app"})).await;
    assert_eq!(theirs.body["repo"]["full_name"], "other/app", "names are per owner");

    let read_only = app.key_for(app.account_id, [Scope::ReposRead].into_iter().collect(), None).await;
    app.post("/api/repos/push", &read_only, push).await.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert_eq!(app.get("/api/repos", &read_only).await.status, StatusCode::OK);
    assert_eq!(h.cloned("default/app").1, ["README.md"], "nothing of the other account's push");
}

#[tokio::test]
async fn without_a_source_host_every_route_needs_an_app_and_the_quota_holds() {
    let bare = TestApp::new().await;
    for (path, body) in [
        ("/api/repos", json!({"name": "app"})),
        ("/api/repos/push", json!({"repo": "default/app", "files": [], "message": "m"})),
        ("/api/repos/create_and_push", json!({"name": "app", "files": []})),
    ] {
        bare.post(path, &bare.admin, body).await.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "SCM_APP_REQUIRED");
    }

    let mut config = TestApp::default_config();
    config.quotas.set(play_model::model::quota::Resource::Repositories, 1);
    let h = Hosted::with_app(TestApp::with_config(config).await);
    h.app.post("/api/repos", &h.app.admin, json!({"name": "one"})).await;
    let second = h.app.post("/api/repos", &h.app.admin, json!({"name": "two"})).await;
    second.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "QUOTA_EXCEEDED");
    assert!(!h.repo_path("default/two").exists());
}

#[tokio::test]
async fn the_repository_tools_of_mcp_reach_the_same_routes() {
    let h = Hosted::new().await;
    let app = &h.app;
    let arguments = json!({"name": "agent", "files": [{"path": "main.py", "content": "print('hi')\n"}]});
    let call = json!({"name": "create_repository_and_push", "arguments": arguments});
    let r = app.mcp(Some(&app.admin), "tools/call", call).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let result = &r.body["result"];
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["repo"]["full_name"], "default/agent");
    assert_eq!(h.cloned("default/agent").1, ["main.py"]);

    let push = json!({"repo": "default/agent", "files": [{"path": "../x", "content": ""}], "message": "m"});
    let refused =
        app.mcp(Some(&app.admin), "tools/call", json!({"name": "push_to_repository", "arguments": push})).await;
    assert_eq!(refused.body["result"]["isError"], true, "{}", refused.text);
    assert_eq!(refused.body["result"]["structuredContent"]["error"]["code"], "VALIDATION_FAILED");
}

#[tokio::test]
async fn concurrent_pushes_to_one_branch_both_land_or_one_is_refused_and_no_file_is_lost() {
    let h = Hosted::new().await;
    let app = &h.app;
    app.post("/api/repos", &app.admin, json!({"name": "app", "auto_init": true})).await;
    let push = |i: usize| {
        let body = json!({"repo": "default/app", "files": [{"path": format!("file-{i}.txt"), "content": "x"}], "message": format!("push {i}")});
        app.post("/api/repos/push", &app.admin, body)
    };
    let answers = futures::future::join_all((0..6).map(push)).await;
    let mut landed = Vec::new();
    for (i, answer) in answers.iter().enumerate() {
        match answer.status {
            StatusCode::OK => landed.push(format!("file-{i}.txt")),
            StatusCode::CONFLICT => {
                answer.assert_error(StatusCode::CONFLICT, "CONFLICT");
            }
            other => panic!("push {i}: {other} {}", answer.text),
        }
    }
    let (log, files) = h.cloned("default/app");
    assert_eq!(log.len(), 1 + landed.len(), "one commit per push that landed, each on top of the other: {log:?}");
    for file in &landed {
        assert!(files.contains(file), "{file} was lost: {files:?}");
    }
    assert_eq!(app.count("repository_pushes").await, 1 + landed.len() as i64);
}

#[tokio::test]
async fn with_the_host_enabled_account_by_account_only_a_switched_on_account_creates() {
    let mut h = Hosted::new().await;
    h.app.state.shared_mut().hosts.builtin_selected = true;
    h.app.router = play_api::router(h.app.state.clone());
    let app = &h.app;
    let refused = app.post("/api/repos", &app.admin, json!({"name": "app"})).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text);
    assert_eq!(refused.body["error"]["code"], "SCM_APP_REQUIRED");
    assert!(refused.body["error"]["message"].as_str().unwrap().contains("git-host"), "{}", refused.text);
    let named = app.post("/api/repos", &app.admin, json!({"name": "app", "provider": "builtin"})).await;
    assert_eq!(named.body["error"]["code"], "SCM_APP_REQUIRED", "{}", named.text);
    assert_eq!(app.count("repositories").await, 0);

    play_store::accounts::set_git_host(app.store(), "default", true).await.unwrap();
    let made = app.post("/api/repos", &app.admin, json!({"name": "app", "auto_init": true})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);

    // Switched off again: no new repository and no push to the existing
    // one (issue #49, item 6), which the account still reads and deletes.
    play_store::accounts::set_git_host(app.store(), "default", false).await.unwrap();
    let again = app.post("/api/repos", &app.admin, json!({"name": "other"})).await;
    assert_eq!(again.body["error"]["code"], "SCM_APP_REQUIRED", "{}", again.text);
    let push = json!({"repo": "default/app", "message": "m", "files": [{"path": "a", "content": "a"}]});
    let refused = app.post("/api/repos/push", &app.admin, push).await;
    assert_eq!(refused.body["error"]["code"], "SCM_APP_REQUIRED", "{}", refused.text);
    assert!(refused.body["error"]["message"].as_str().unwrap().contains("switched off"), "{}", refused.text);
    assert_eq!(app.get("/api/repos/default/app", &app.admin).await.status, StatusCode::OK);
    assert_eq!(app.delete("/api/repos/default/app", &app.admin).await.status, StatusCode::NO_CONTENT);
}
