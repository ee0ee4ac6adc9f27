//! Git's smart HTTP for play's own Git host, end to end over loopback: the
//! router served on a real port, the stock `git` client (apt-get install
//! git) cloning and pushing with an API key as the HTTP password, and the
//! refusals: another account's key, no key, a read-only key.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_git::builtin::BuiltinHost;
use play_git::hosted::HostedRepositories;
use play_model::scopes::{Scope, ScopeSet};
use serde_json::json;

struct Served {
    app: TestApp,
    base: String,
    dir: tempfile::TempDir,
}

async fn served() -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let host = BuiltinHost::new(HostedRepositories::new(dir.path().join("repos")), &base);
    let app = TestApp::new().await.with_source_host(Arc::new(host));
    let router = app.router.clone();
    tokio::spawn(async move { axum::serve(listener, router).await });
    Served { app, base, dir }
}

/// `git` in `dir`, never asking for a password on a terminal.
fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "credential.helper="])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("git is installed")
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "git failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn with_key(url: &str, key: &str) -> String {
    url.replacen("http://", &format!("http://play:{key}@"), 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stock_git_client_clones_and_pushes_with_an_api_key() {
    let s = served().await;
    let app = &s.app;
    let files = json!([{"path": "compose.yaml", "content": "services: {}\n"}, {"path": "app/Dockerfile", "content": "FROM scratch\n"}]);
    let made = app.post("/api/repos/create_and_push", &app.admin, json!({"name": "app", "files": files})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let clone_url = made.body["repo"]["clone_url"].as_str().unwrap().to_owned();
    assert_eq!(clone_url, format!("{}/git/default/app.git", s.base));

    let work = s.dir.path().join("work");
    let target = work.to_str().unwrap();
    ok(&git(s.dir.path(), &["clone", "--quiet", &with_key(&clone_url, &app.admin), target]));
    assert_eq!(ok(&git(&work, &["ls-files"])).lines().collect::<Vec<_>>(), ["app/Dockerfile", "compose.yaml"]);
    assert_eq!(ok(&git(&work, &["log", "--format=%s"])).trim(), "Initial commit");

    std::fs::write(work.join("compose.yaml"), "services: {web: {image: busybox}}\n").unwrap();
    ok(&git(&work, &["commit", "--quiet", "-am", "Change"]));
    let head = ok(&git(&work, &["rev-parse", "HEAD"])).trim().to_owned();
    ok(&git(&work, &["push", "--quiet", "origin", "main"]));

    // The push is recorded once the host has the pack: wait for its event.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let events = play_store::events::list_for_account(app.store(), app.account_id).await.unwrap();
        let pushes: Vec<_> = events.iter().filter(|e| e.event_type == "repo.push").collect();
        if let Some(last) = pushes.iter().find(|e| e.metadata.as_ref().is_some_and(|m| m["after"] == head.as_str())) {
            let metadata = last.metadata.as_ref().unwrap();
            assert_eq!(metadata["branch"], "main");
            assert_eq!(metadata["repository"], "default/app");
            assert_eq!(metadata["before"], made.body["commit"]["commit_sha"]);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no repo.push event for the git push: {pushes:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // An API push lands on top of the git push.
    let body = json!({"repo": "default/app", "files": [{"path": "b.txt", "content": "b"}], "message": "API"});
    assert_eq!(app.post("/api/repos/push", &app.admin, body).await.status, StatusCode::OK);
    ok(&git(&work, &["pull", "--quiet", "--ff-only"]));
    assert_eq!(
        ok(&git(&work, &["log", "--format=%s"])).lines().collect::<Vec<_>>(),
        ["API", "Change", "Initial commit"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_repositorys_account_may_clone_a_private_one_or_push() {
    let s = served().await;
    let app = &s.app;
    let files = json!([{"path": "secret.txt", "content": "s3cret"}]);
    let made = app.post("/api/repos/create_and_push", &app.admin, json!({"name": "private", "files": files})).await;
    let clone_url = made.body["repo"]["clone_url"].as_str().unwrap().to_owned();
    let other = app.new_account("other").await;
    let other_key = app.key_for(other, ScopeSet::all(), None).await;
    let into = |name: &str| s.dir.path().join(name).to_str().unwrap().to_owned();

    let anonymous = git(s.dir.path(), &["clone", "--quiet", &clone_url, &into("anon")]);
    assert!(!anonymous.status.success(), "an anonymous clone of a private repository");
    let theirs = git(s.dir.path(), &["clone", "--quiet", &with_key(&clone_url, &other_key), &into("theirs")]);
    assert!(!theirs.status.success(), "another account's clone");
    assert!(
        String::from_utf8_lossy(&theirs.stderr).contains("not found"),
        "{}",
        String::from_utf8_lossy(&theirs.stderr)
    );
    let wrong = git(s.dir.path(), &["clone", "--quiet", &with_key(&clone_url, "play_not_a_key"), &into("wrong")]);
    assert!(!wrong.status.success(), "a made-up key");
    assert!(!s.dir.path().join("theirs/secret.txt").exists() && !s.dir.path().join("anon/secret.txt").exists());

    // A read-only key clones but cannot push.
    let reader = app.key_for(app.account_id, [Scope::ReposRead].into_iter().collect(), None).await;
    let work = s.dir.path().join("mine");
    ok(&git(s.dir.path(), &["clone", "--quiet", &with_key(&clone_url, &reader), work.to_str().unwrap()]));
    std::fs::write(work.join("x.txt"), "x").unwrap();
    ok(&git(&work, &["add", "x.txt"]));
    ok(&git(&work, &["commit", "--quiet", "-m", "x"]));
    assert!(!git(&work, &["push", "--quiet", "origin", "main"]).status.success(), "repos:read cannot push");
    let pushed_by_other = git(&work, &["push", "--quiet", &with_key(&clone_url, &other_key), "main"]);
    assert!(!pushed_by_other.status.success(), "another account cannot push");
    assert_eq!(app.count("repository_pushes").await, 1, "only create_and_push's first commit");

    // A public repository: anyone clones, nobody else pushes.
    app.post("/api/repos", &app.admin, json!({"name": "open", "private": false, "auto_init": true})).await;
    let open_url = clone_url.replace("/private.git", "/open.git");
    let public = s.dir.path().join("public");
    ok(&git(s.dir.path(), &["clone", "--quiet", &open_url, public.to_str().unwrap()]));
    std::fs::write(public.join("y.txt"), "y").unwrap();
    ok(&git(&public, &["add", "y.txt"]));
    ok(&git(&public, &["commit", "--quiet", "-m", "y"]));
    assert!(!git(&public, &["push", "--quiet", &with_key(&open_url, &other_key), "main"]).status.success());
    assert!(!git(&public, &["push", "--quiet", "origin", "main"]).status.success(), "no anonymous push");
}
