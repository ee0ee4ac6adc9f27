//! A push trigger end to end, through the real binary and play's own Git
//! host (issue #30): a template whose trigger follows `main` of a
//! repository there; the trigger launches a Playground for `main` that
//! serves the first commit; `git push` of a new commit rolls it out and it
//! serves the new content; `play serve` killed, a commit written straight
//! into the repository (no push event, no wake), restarted: the trigger's
//! periodic pass still converges; deleting the branch destroys the
//! Playground, and a branch that comes back gets a new one, which
//! deleting the template destroys.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::docker::{BUSYBOX_IMAGE, ensure_busybox_image};
use crate::support::git_cli::{git, ok, with_key};
use crate::support::serve::{Play, Server};
use crate::support::sshd::Sshd;
use serde_json::{Value, json};

fn project_files(content: &str) -> Value {
    let dockerfile = format!(
        "FROM {BUSYBOX_IMAGE}\nCOPY index.html /www/index.html\nCMD [\"httpd\", \"-f\", \"-p\", \"8080\", \"-h\", \"/www\"]\n"
    );
    json!([
        {"path": "Dockerfile", "content": dockerfile},
        {"path": "index.html", "content": content},
    ])
}

/// Waits up to 60 s until Playground `id` is destroyed: on its way out,
/// or gone from the API.
async fn destroyed(server: &Server, id: i64, what: &str) {
    let started = Instant::now();
    loop {
        let (status, p) = server.get(&format!("/api/playgrounds/{id}")).await;
        if status == 404 || p["desired_state"] == "destroyed" {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{what} is still there: {p:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What the Playground's `web` container serves at `/`.
fn served(detail: &Value) -> Option<String> {
    let services = detail["services"].as_array()?;
    let container = services.iter().find(|s| s["name"] == "web")?["container"].as_str()?;
    let out = Command::new("docker")
        .args(["exec", container, "wget", "-q", "-O-", "http://localhost:8080/"])
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Waits until `main`'s target is live with a Playground that serves
/// `content`; its detail.
async fn wait_serving(server: &Server, trigger: &str, content: &str) -> Value {
    let started = Instant::now();
    let mut last = Value::Null;
    loop {
        let (_, targets) = server.get(&format!("{trigger}/targets")).await;
        let live = targets.as_array().and_then(|all| {
            all.iter()
                .find(|t| t["ref_name"] == "main" && t["status"] == "live" && t["playground_id"].is_i64())
                .cloned()
        });
        if let Some(target) = live {
            let (_, detail) = server.get(&format!("/api/playgrounds/{}", target["playground_id"])).await;
            assert_ne!(detail["status"], "failed", "{detail:#}");
            if detail["status"] == "running" && served(&detail).as_deref() == Some(content) {
                return detail;
            }
            last = detail;
        }
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "main never served {content:?}: {targets:#}\n{last:#}\n{}",
            server.log_tail(80)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_trigger_follows_main_across_a_restart_and_a_deleted_branch() {
    ensure_busybox_image();
    let sshd = Sshd::start();
    // Each trigger looks again every 2 s, and asks its Playzone to sync
    // when the last sync is older than that: the repair without events.
    let play = Play::new().await.env("PLAY_TRIGGER_INTERVAL", "2s");
    let mut server = play.serve().await;

    let made = server
        .create(
            "/api/repos/create_and_push",
            json!({"name": "site", "private": false, "files": project_files("first"), "message": "First"}),
        )
        .await;
    let clone_url = made["repo"]["clone_url"].as_str().unwrap().to_owned();
    let room = server.create("/api/playrooms", sshd.playroom_body("box")).await;

    let body = format!(
        "svc:\n  variables:\n    GREETING: {{required: true}}\n  trigger_config: {{enabled: true, event_type: push, \
         repo_url: \"{clone_url}\", branch: main, prop_id: 4}}\nservices:\n  web:\n    build: .\n    labels:\n      \
         svc/repo_url: \"{clone_url}\"\n    environment:\n      GREETING: $$var__GREETING\n"
    );
    let template_id = server.template("site", body).await;
    let trigger = server.trigger_of(template_id).await;
    assert_eq!(
        (trigger["event_type"].as_str(), trigger["branch"].as_str()),
        (Some("push"), Some("main")),
        "{trigger:#}"
    );
    assert_eq!(trigger["prop_id"], 4, "kept as given");
    assert!(trigger["condition"].as_str().unwrap().contains("needs a Playroom"), "{trigger:#}");
    let path = format!("/api/triggers/{}", trigger["id"]);
    // Without its required variable the launch is refused, recorded once
    // with the reason, and tried again when the variables are set.
    server.ok(reqwest::Method::PATCH, &path, Some(json!({"trigger": {"playroom_id": room["id"]}}))).await;
    let (refused, _) = server
        .wait_for("the refused launch", &format!("{path}/targets"), |all| {
            all.as_array().unwrap().iter().any(|t| t["status"] == "refused")
        })
        .await;
    assert!(refused[0]["reason"].as_str().unwrap().contains("GREETING"), "{refused:#}");
    // Passes every 2 s: the absence of a second refusal needs time to show.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let store = play_store::Store::connect(play.database_url()).await.unwrap();
    let account = play_store::accounts::find_account_by_name(&store, "default").await.unwrap().id;
    let events = play_store::events::list_for_account(&store, account).await.unwrap();
    let refusals = events
        .iter()
        .filter(|e| e.event_type == "trigger.fired" && e.metadata.as_ref().is_some_and(|m| m["action"] == "refused"))
        .count();
    let seen: Vec<(&str, Option<&Value>)> =
        events.iter().map(|e| (e.event_type.as_str(), e.metadata.as_ref())).collect();
    assert_eq!(refusals, 1, "a refused launch is not tried at every pass: {seen:#?}");
    let body = json!({"trigger": {"variables": {"GREETING": "hello"}}});
    server.ok(reqwest::Method::PATCH, &path, Some(body)).await;

    let first = wait_serving(&server, &path, "first").await;
    let playground = first["id"].as_i64().unwrap();
    assert_eq!(first["trigger"]["trigger_id"], trigger["id"], "the detail says which trigger keeps it");
    assert_eq!(
        (first["trigger"]["ref_kind"].as_str(), first["trigger"]["ref_name"].as_str()),
        (Some("branch"), Some("main"))
    );
    assert_eq!(first["trigger"]["commit"], made["commit"]["commit_sha"], "{first:#}");

    // A push rolls the same Playground out.
    let work = tempfile::tempdir().unwrap();
    let clone = work.path().join("clone");
    ok(&git(work.path(), &["clone", "--quiet", &with_key(&clone_url, &server.token), clone.to_str().unwrap()]));
    std::fs::write(clone.join("index.html"), "second").unwrap();
    ok(&git(&clone, &["commit", "--quiet", "-am", "Second"]));
    let pushed_at = Instant::now();
    ok(&git(&clone, &["push", "--quiet", "origin", "main"]));
    let second = wait_serving(&server, &path, "second").await;
    eprintln!("push to serving the new commit: {:?}", pushed_at.elapsed());
    assert_eq!(second["id"].as_i64(), Some(playground), "rolled out, not launched again");
    let head = ok(&git(&clone, &["rev-parse", "HEAD"]));
    server
        .wait_for("the detail at the pushed commit", &format!("/api/playgrounds/{playground}"), |p| {
            p["trigger"]["commit"] == head.as_str()
        })
        .await;

    // play is down while a commit lands without a push event: written
    // straight into the bare repository on disk.
    server.kill();
    std::fs::write(clone.join("index.html"), "third").unwrap();
    ok(&git(&clone, &["commit", "--quiet", "-am", "Third"]));
    let bare = play.data_dir().join("repositories/default/site.git");
    ok(&git(&clone, &["push", "--quiet", bare.to_str().unwrap(), "main"]));
    let server = play.serve().await;
    let third = wait_serving(&server, &path, "third").await;
    assert_eq!(third["id"].as_i64(), Some(playground));

    // Deleting the branch destroys its Playground.
    // Git refuses to delete a repository's default branch (so does
    // GitHub): the owner makes another branch the default first.
    ok(&git(&clone, &["push", "--quiet", "origin", "HEAD:refs/heads/keep"]));
    ok(&git(&bare, &["symbolic-ref", "HEAD", "refs/heads/keep"]));
    ok(&git(&clone, &["push", "--quiet", "origin", ":main"]));
    server
        .wait_for("main's target gone", &format!("{path}/targets"), |all| {
            all.as_array().unwrap().iter().any(|t| t["ref_name"] == "main" && t["status"] == "gone")
        })
        .await;
    destroyed(&server, playground, "the branch's Playground").await;
    let (_, now) = server.get(&path).await;
    assert!(now["condition"].is_null(), "{now:#}");

    // The branch comes back: a new Playground; deleting the template
    // destroys it with the trigger.
    ok(&git(&clone, &["push", "--quiet", "origin", "HEAD:refs/heads/main"]));
    let again = wait_serving(&server, &path, "third").await;
    let again = again["id"].as_i64().unwrap();
    assert_ne!(again, playground, "a new Playground for the branch that came back");
    let (status, _) = server.call(reqwest::Method::DELETE, &format!("/api/import_templates/{template_id}"), None).await;
    assert_eq!(status, 204);
    destroyed(&server, again, "the template's Playground").await;
    let (status, _) = server.get(&path).await;
    assert_eq!(status, 404, "the trigger went with its template");
}

/// Issue #51, item 5: `POST /api/repos` makes private repositories by
/// default, and a push trigger on one of play's own Git host launches
/// from it: the trigger, started with a key that may read Playzones,
/// attaches the repository (as a pull request trigger does) instead of
/// linking it by URL, which a private repository never is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_trigger_on_a_private_repository_of_plays_git_host_launches() {
    ensure_busybox_image();
    let sshd = Sshd::start();
    let play = Play::new().await.env("PLAY_TRIGGER_INTERVAL", "2s");
    let server = play.serve().await;
    let made = server
        .create("/api/repos/create_and_push", json!({"name": "secret-site", "files": project_files("private")}))
        .await;
    assert_eq!(made["repo"]["private"], true, "private by default: {made:#}");
    let clone_url = made["repo"]["clone_url"].as_str().unwrap().to_owned();
    let room = server.create("/api/playrooms", sshd.playroom_body("box")).await;
    let body = format!(
        "svc:\n  trigger_config: {{enabled: true, event_type: push, repo_url: \"{clone_url}\", branch: main}}\n\
         services:\n  web:\n    build: .\n    labels:\n      svc/repo_url: \"{clone_url}\"\n"
    );
    let trigger = server.trigger_of(server.template("secret-site", body).await).await;
    let path = format!("/api/triggers/{}", trigger["id"]);
    server.ok(reqwest::Method::PATCH, &path, Some(json!({"trigger": {"playroom_id": room["id"]}}))).await;
    let served = wait_serving(&server, &path, "private").await;
    assert_eq!(served["trigger"]["commit"], made["commit"]["commit_sha"], "{served:#}");
    let (_, trigger) = server.get(&path).await;
    assert!(trigger["condition"].is_null(), "{trigger:#}");
}
