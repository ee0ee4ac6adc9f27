//! The real `play` binary: first start, the admin token, offline key
//! commands, and graceful shutdown. Runs on the backend `PLAY_TEST_BACKEND`
//! selects.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::support::serve::Play;
use serde_json::{Value, json};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

async fn get(base: &str, path: &str, token: Option<&str>) -> (u16, Value) {
    let mut request = reqwest::Client::new().get(format!("{base}{path}"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).unwrap().trim().to_owned()
}

#[tokio::test]
async fn first_start_writes_an_admin_token_that_works_and_only_once() {
    let play = Play::new().await;
    let server = play.serve().await;
    let token_file = play.path("admin.token");
    assert_eq!(mode(&token_file), 0o600);
    assert_eq!(mode(&play.path("master.key")), 0o600);
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_owned();

    let (status, body) = get(&server.base, "/api/keys", Some(&token)).await;
    assert_eq!(status, 200);
    assert_eq!(body.as_array().unwrap().len(), 1);
    assert_eq!(body[0]["scopes"].as_array().unwrap().len(), play_model::scopes::Scope::ALL.len());

    let (status, body) = get(&server.base, "/api/keys", None).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    drop(server);

    // A second start keeps the same key and file.
    let server = play.serve().await;
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token);
    assert_eq!(get(&server.base, "/api/keys", Some(&token)).await.0, 200);
}

/// A second replica on the same database with another master key file (or
/// none) would mint tokens no other replica accepts and open no stored
/// secret: it is refused at start, saying what to do (issue #16).
#[tokio::test]
async fn a_replica_with_another_master_key_or_none_is_refused_at_start() {
    let play = Play::new().await;
    drop(play.serve().await);
    let key_file = play.path("master.key");
    let original = std::fs::read_to_string(&key_file).unwrap();
    std::fs::write(&key_file, "ab".repeat(32)).unwrap();
    let other = play.serve_refused();
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(!other.status.success());
    assert!(stderr.contains("is not the one this database was set up with"), "{stderr}");
    assert!(stderr.contains("use the master key file of the first play process"), "{stderr}");
    // The offline key commands refuse it too: their tokens would not work.
    let created = play.run(&["keys", "create", "--label", "x", "--scopes", "all"]);
    assert!(!created.status.success());
    assert!(String::from_utf8_lossy(&created.stderr).contains("is not the one"), "{created:?}");

    std::fs::remove_file(&key_file).unwrap();
    let none = play.serve_refused();
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(!none.status.success());
    assert!(stderr.contains("no master key at"), "{stderr}");
    assert!(!key_file.exists(), "no new key is made for a database that has one");

    std::fs::write(&key_file, &original).unwrap();
    let server = play.serve().await;
    let token = std::fs::read_to_string(play.path("admin.token")).unwrap();
    assert_eq!(get(&server.base, "/api/keys", Some(token.trim())).await.0, 200);
}

#[tokio::test]
async fn offline_key_commands_work_against_a_running_server() {
    let play = Play::new().await;
    let server = play.serve().await;

    stdout(&play.run(&["accounts", "create", "acme"]));
    let token =
        stdout(&play.run(&["keys", "create", "--label", "cli", "--scopes", "keys:manage", "--account", "acme"]));
    assert!(play_model::token::is_well_formed(&token), "{token}");
    let (status, body) = get(&server.base, "/api/keys", Some(&token)).await;
    assert_eq!(status, 200);
    // Only acme's key: the admin key lives in the default account.
    assert_eq!(body.as_array().unwrap().len(), 1);
    let id = body[0]["id"].as_i64().unwrap();

    let listed = stdout(&play.run(&["keys", "list", "--account", "acme"]));
    assert!(listed.contains("cli") && listed.contains("keys:manage"), "{listed}");
    assert!(!listed.contains(&token));

    // Deleted by another process: the server sees the store's revocation
    // generation move within a second (it caches verified keys).
    play.run(&["keys", "delete", &id.to_string()]);
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(get(&server.base, "/api/keys", Some(&token)).await.0, 401);
}

#[tokio::test]
async fn the_git_host_is_switched_on_per_account_from_the_command_line() {
    let play = Play::new().await;
    stdout(&play.run(&["accounts", "create", "acme"]));
    let on = stdout(&play.run(&["accounts", "git-host", "acme", "on"]));
    assert!(on.ends_with("acme\tgit-host on"), "{on}");
    let store = play_store::Store::connect(play.database_url()).await.unwrap();
    let acme = play_store::accounts::find_account_by_name(&store, "acme").await.unwrap();
    assert!(play_store::accounts::git_host_enabled(&store, acme.id).await.unwrap());
    stdout(&play.run(&["accounts", "git-host", "acme", "off"]));
    assert!(!play_store::accounts::git_host_enabled(&store, acme.id).await.unwrap());
    let unknown = play.run(&["accounts", "git-host", "nobody", "on"]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no account named \"nobody\""));
    let unclear = play.run(&["accounts", "git-host", "acme", "maybe"]);
    assert!(!unclear.status.success());
}

#[tokio::test]
async fn key_commands_refuse_bad_input_with_a_clear_message() {
    let play = Play::new().await;
    let bad_scope = play.run(&["keys", "create", "--label", "x", "--scopes", "keys:manage,bogus"]);
    assert!(!bad_scope.status.success());
    assert!(String::from_utf8_lossy(&bad_scope.stderr).contains("unknown scopes: bogus"));
    let no_account = play.run(&["keys", "create", "--label", "x", "--scopes", "all", "--account", "nobody"]);
    assert!(String::from_utf8_lossy(&no_account.stderr).contains("no account named"));
    let past = play.run(&["keys", "create", "--label", "x", "--scopes", "all", "--expires-at", "2001-01-01T00:00:00Z"]);
    assert!(String::from_utf8_lossy(&past.stderr).contains("must be in the future"));
}

#[tokio::test]
async fn a_key_with_a_duration_expiry_is_listed_with_its_time() {
    let play = Play::new().await;
    stdout(&play.run(&["accounts", "create", "default"]));
    stdout(&play.run(&["keys", "create", "--label", "t", "--scopes", "all", "--expires-at", "30d"]));
    let listed = stdout(&play.run(&["keys", "list"]));
    assert!(!listed.contains("expires=never"), "{listed}");
}

#[tokio::test]
async fn sigterm_stops_the_server_cleanly() {
    let play = Play::new().await;
    let mut server = play.serve().await;
    server.terminate();
    let status = server.wait_exit(Duration::from_secs(30)).await;
    assert!(status.success(), "exit status {status:?}");
}

#[tokio::test]
async fn migrate_applies_and_exits() {
    let play = Play::new().await;
    let out = play.run(&["migrate"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("migrations applied"));
}

/// A GitHub App is configured whole or not at all: a part of it is refused
/// at start, naming what is missing, rather than a server whose install
/// flow fails later.
#[tokio::test]
async fn a_partly_configured_github_app_is_refused_at_start() {
    let play = Play::new().await.env("PLAY_GITHUB_APP_ID", "12345").env("PLAY_GITHUB_APP_SLUG", "play");
    let refused = play.serve_refused();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(stderr.contains("--github-app-key-file") && stderr.contains("--github-client-secret-file"), "{stderr}");
}

/// A browser session against the real server: the sign-in form, its
/// cookie, the API with the session cookie, and sign-out.
#[tokio::test]
async fn a_browser_signs_in_with_a_key_and_the_api_accepts_the_session() {
    let play = Play::new().await;
    let server = play.serve().await;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let form = client.get(format!("{}/sign-in", server.base)).send().await.unwrap();
    let form_cookie = form.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let page = form.text().await.unwrap();
    let csrf = page.split("name=\"csrf\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let signed_in = client
        .post(format!("{}/sign-in", server.base))
        .header("cookie", &form_cookie)
        .form(&[("token", server.token.as_str()), ("csrf", csrf.as_str()), ("next", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 303);
    let session = signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .find(|c| c.starts_with("play_session="))
        .unwrap();
    let keys = client.get(format!("{}/api/keys", server.base)).header("cookie", &session).send().await.unwrap();
    assert_eq!(keys.status(), 200);
    let home = client.get(format!("{}/", server.base)).header("cookie", &session).send().await.unwrap();
    assert!(home.text().await.unwrap().contains("Sign out"));
    let about: Value = client
        .get(format!("{}/session", server.base))
        .header("cookie", &session)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let out = client
        .post(format!("{}/sign-out", server.base))
        .header("cookie", &session)
        .form(&[("csrf", about["csrf_token"].as_str().unwrap())])
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 303);
    let after = client.get(format!("{}/api/keys", server.base)).header("cookie", &session).send().await.unwrap();
    assert_eq!(after.status(), 401, "signed out: the session is refused");
}

/// Template categories are the operator's (issue #52, item 8): added,
/// renamed and removed from the command line, seen by the API at once; a
/// category holding a template is not removed, and bad names are refused.
#[tokio::test]
async fn the_operator_manages_template_categories_from_the_command_line() {
    let play = Play::new().await;
    let server = play.serve().await;
    let added = stdout(&play.run(&["categories", "add", "Data pipelines"]));
    let id: i64 = added.split('\t').next().unwrap().parse().unwrap();
    assert!(added.ends_with("data-pipelines\tData pipelines"), "{added}");
    let (_, listed) = get(&server.base, "/api/template_categories", Some(&server.token)).await;
    assert!(listed.as_array().unwrap().iter().any(|c| c["id"] == id && c["slug"] == "data-pipelines"), "{listed}");

    let renamed = stdout(&play.run(&["categories", "rename", "data-pipelines", "Pipelines"]));
    assert!(renamed.ends_with("data-pipelines\tPipelines"), "the slug stays: {renamed}");
    let taken = play.run(&["categories", "add", "Other things", "--slug", "other"]);
    assert!(String::from_utf8_lossy(&taken.stderr).contains("slug"), "{taken:?}");
    let bad = play.run(&["categories", "add", "x", "--slug", "Not A Slug"]);
    assert!(!bad.status.success());

    let body = json!({"import_template": {"name": "etl", "category_id": id}});
    let made = reqwest::Client::new()
        .post(format!("{}/api/import_templates", server.base))
        .bearer_auth(&server.token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    let in_use = play.run(&["categories", "remove", &id.to_string()]);
    assert!(String::from_utf8_lossy(&in_use.stderr).contains("1 template(s) are in this category"), "{in_use:?}");
    let unknown = play.run(&["categories", "remove", "nope"]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no category"), "{unknown:?}");
    stdout(&play.run(&["categories", "remove", "databases"]));
    let (_, listed) = get(&server.base, "/api/template_categories", Some(&server.token)).await;
    assert!(!listed.as_array().unwrap().iter().any(|c| c["slug"] == "databases"), "{listed}");
}
