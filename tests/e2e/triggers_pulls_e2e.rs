//! Pull-request triggers end to end (issue #30): `play serve` with its
//! GitHub App on the loopback GitHub (`play_github::testing`), the
//! machine's Docker engine through the harness's sshd, and Debian's Caddy
//! as the edge. A template whose trigger follows pull requests into
//! `main` of a private repository of the app's installation:
//!
//! - `opened` → a preview Playground serving the pull request's head at
//!   its stable `pr-1-web` URL, one comment on the pull request with that
//!   URL, and a deployment of the head with status `success` and the
//!   `environment_url`;
//! - a new commit (`synchronize`) → the same Playground rolled out, the
//!   same comment edited (one comment in all), a deployment of the new
//!   head;
//! - a delivery with a bad signature (a forged `closed`) is refused and
//!   changes nothing; a repeated delivery id is processed once;
//! - a fork's pull request is not deployed (the refusal is recorded and
//!   said on the pull request);
//! - a pull request closed while its preview's image is still building:
//!   the build finishing does not bring the preview back;
//! - a `closed` that GitHub never delivers (the test drops it) is repaired
//!   by the periodic pass: the preview is destroyed, its deployment
//!   `inactive`, the comment says so.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::time::{Duration, Instant};

use crate::support::caddy::{CADDY_IMAGE, edge_get, ensure_caddy_image};
use crate::support::docker::{BUSYBOX_IMAGE, ensure_busybox_image};
use crate::support::github::{Github, WEBHOOK_SECRET};
use crate::support::serve::{Play, Server};
use crate::support::sshd::Sshd;
use serde_json::{Value, json};

const REPO: &str = "acme/app";

fn dockerfile(slow: bool) -> String {
    let wait = if slow { "RUN sleep 8\n" } else { "" };
    format!(
        "FROM {BUSYBOX_IMAGE}\n{wait}COPY index.html /www/index.html\nCMD [\"httpd\", \"-f\", \"-p\", \"8080\", \"-h\", \"/www\"]\n"
    )
}

/// Waits until `check` holds of the fake GitHub.
async fn wait_github(what: &str, server: &Server, check: impl Fn() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < Duration::from_secs(240), "{what}\n{}", server.log_tail(80));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn target(targets: &Value, number: u64) -> Option<&Value> {
    let name = number.to_string();
    targets
        .as_array()?
        .iter()
        .find(|t| t["ref_kind"] == "pull_request" && t["ref_name"].as_str() == Some(name.as_str()))
}

/// Waits until pull request `number`'s preview runs and its edge serves
/// `content` at a `pr-<number>-web` host; the Playground's detail and its
/// URL.
async fn wait_serving(server: &Server, trigger: &str, number: u64, port: u16, content: &str) -> (Value, String) {
    let started = Instant::now();
    let mut last = Value::Null;
    loop {
        let (_, targets) = server.get(&format!("{trigger}/targets")).await;
        if let Some(id) = target(&targets, number).filter(|t| t["status"] == "live").map(|t| &t["playground_id"])
            && id.is_i64()
        {
            let (_, detail) = server.get(&format!("/api/playgrounds/{id}")).await;
            assert_ne!(detail["status"], "failed", "{detail:#}");
            if let Some(url) = detail["urls"]["web"].as_str().map(str::to_owned) {
                let host = url.split("://").nth(1).unwrap().split(':').next().unwrap().to_owned();
                assert!(host.starts_with(&format!("pr-{number}-web")), "a stable pull request host: {url}");
                if edge_get(port, &host, "/").await.is_some_and(|(s, b)| s == 200 && b.trim() == content) {
                    return (detail, url);
                }
            }
            last = detail;
        }
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "#{number} never served {content:?}: {targets:#}\n{last:#}\n{}",
            server.log().lines().filter(|l| !l.contains(" INFO ")).collect::<Vec<_>>().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A new branch `name` at `main`'s head (a pull request's work starts there).
fn branch(g: &Github, name: &str) {
    g.github.git(REPO, &["branch", name, "main"]);
}

/// The last status of the deployment of `sha`: state and environment_url.
fn deployment_status(g: &Github, sha: &str) -> Option<(String, Option<String>)> {
    g.github.deployments(REPO).into_iter().rev().find(|d| d.sha == sha)?.statuses.last().cloned()
}

/// Whether the Playground is on its way out or gone.
async fn gone(server: &Server, playground: i64) -> bool {
    let (status, p) = server.get(&format!("/api/playgrounds/{playground}")).await;
    status == 404 || p["status"] == "destroying" || p["status"] == "destroyed"
}

/// Waits until the Playground is deleted (404).
async fn deleted(server: &Server, playground: i64) {
    let started = Instant::now();
    loop {
        let (status, p) = server.get(&format!("/api/playgrounds/{playground}")).await;
        if status == 404 {
            return;
        }
        assert!(p["status"] == "destroying", "never back once destroyed: {p:#}");
        assert!(started.elapsed() < Duration::from_secs(120), "still there: {p:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_requests_get_previews_that_follow_them_and_go_when_they_close() {
    ensure_busybox_image();
    ensure_caddy_image();
    let g = Github::start().await;
    g.github.install(7, "acme", "Organization");
    g.github.add_repo(7, REPO, true);
    g.github.commit(REPO, "main", &[("Dockerfile", dockerfile(false).as_bytes()), ("index.html", b"main")]);
    g.github.commit(REPO, "main", &[("README.md", b"# app")]);
    let sshd = Sshd::start();
    // Each trigger looks again every 2 s: the repair without deliveries.
    let play = g.configure(Play::new().await).env("PLAY_TRIGGER_INTERVAL", "2s").env("PLAY_EDGE_IMAGE", CADDY_IMAGE);
    let server = play.serve().await;
    g.connect(&play, "default", 7).await;

    let (http_port, https_port) = (crate::support::free_port(), crate::support::free_port());
    let mut room = sshd.playroom_body("box");
    room["playroom"]["edge"] = json!({"enabled": true, "http_port": http_port, "https_port": https_port});
    let room = server.create("/api/playrooms", room).await;
    let url = format!("{}/{REPO}", g.github.api_url());
    let body = format!(
        "svc:\n  trigger_config: {{enabled: true, event_type: pull_request, repo_url: \"{url}\", branch: main}}\n\
         services:\n  web:\n    build: .\n    labels:\n      svc/repo_url: \"{url}\"\n      svc/expose: \"8080\"\n"
    );
    let trigger = server.trigger_of(server.template("app", body).await).await;
    assert_eq!(trigger["event_type"], "pull_request", "{trigger:#}");
    let path = format!("/api/triggers/{}", trigger["id"]);
    server.ok(reqwest::Method::PATCH, &path, Some(json!({"trigger": {"playroom_id": room["id"]}}))).await;

    // Opened: a preview at its head, one comment, a successful deployment.
    branch(&g, "feature");
    let head = g.github.commit(REPO, "feature", &[("index.html", b"pr one")]);
    let one = g.github.open_pull(REPO, "feature", "main", None);
    let opened = g.github.pull_event(REPO, one, "opened");
    assert_eq!(Github::deliver(&server.base, "pull_request", "d-1", &opened, WEBHOOK_SECRET).await, 202);
    let (detail, preview_url) = wait_serving(&server, &path, one, http_port, "pr one").await;
    let playground = detail["id"].as_i64().unwrap();
    assert_eq!(
        (detail["trigger"]["ref_kind"].as_str(), detail["trigger"]["ref_name"].as_str()),
        (Some("pull_request"), Some("1")),
        "{detail:#}"
    );
    assert_eq!(detail["trigger"]["commit"], head.as_str());
    wait_github("a successful deployment with the preview's URL", &server, || {
        deployment_status(&g, &head) == Some(("success".into(), Some(preview_url.clone())))
    })
    .await;
    wait_github("the comment names the URL", &server, || {
        g.github.comments(REPO, one).iter().any(|c| c.body.contains(&preview_url))
    })
    .await;
    assert_eq!(g.github.comments(REPO, one).len(), 1, "one comment");
    // Its events say which trigger, pull request and commit.
    let store = play_store::Store::connect(play.database_url()).await.unwrap();
    let account = play_store::accounts::find_account_by_name(&store, "default").await.unwrap().id;
    let events = play_store::events::list_for_account(&store, account).await.unwrap();
    let created = events
        .iter()
        .find(|e| e.event_type == "playground.created" && e.entity_id == playground)
        .and_then(|e| e.metadata.clone())
        .unwrap();
    assert_eq!(
        (&created["trigger_id"], &created["pull_request"], created["commit"].as_str()),
        (&trigger["id"], &json!(1), Some(head.as_str())),
        "{created:#}"
    );
    let fired = events.iter().find(|e| e.event_type == "trigger.fired").and_then(|e| e.metadata.clone()).unwrap();
    assert_eq!((&fired["action"], &fired["pull_request"]), (&json!("launched"), &json!(1)), "{fired:#}");
    assert_eq!(fired["urls"]["web"], preview_url.as_str(), "the event says where the preview is: {fired:#}");

    // A new commit: the same Playground rolled out, the comment edited.
    let second = g.github.commit(REPO, "feature", &[("index.html", b"pr one, second")]);
    g.github.sync_pull(REPO, one);
    let synchronized = g.github.pull_event(REPO, one, "synchronize");
    assert_eq!(Github::deliver(&server.base, "pull_request", "d-2", &synchronized, WEBHOOK_SECRET).await, 202);
    let (again, again_url) = wait_serving(&server, &path, one, http_port, "pr one, second").await;
    assert_eq!(again["id"].as_i64(), Some(playground), "rolled out, not launched again");
    assert_eq!(again_url, preview_url, "the same URL");
    wait_github("a deployment of the new head", &server, || {
        deployment_status(&g, &second).is_some_and(|(state, _)| state == "success")
    })
    .await;
    wait_github("the comment names the new commit", &server, || {
        g.github.comments(REPO, one).iter().any(|c| c.body.contains(&second[..7]))
    })
    .await;
    let comments = g.github.comments(REPO, one);
    assert_eq!(comments.len(), 1, "edited, never a second comment: {comments:#?}");
    assert!(comments[0].edits >= 1);

    // A forged `closed` (bad signature) is refused; a repeated delivery id
    // is processed once.
    let mut forged = g.github.pull_event(REPO, one, "closed");
    forged["pull_request"]["state"] = json!("closed");
    forged["pull_request"]["updated_at"] = json!("2099-01-01T00:00:00Z");
    let refused = Github::deliver(&server.base, "pull_request", "d-forged", &forged, "a guessed secret").await;
    assert_eq!(refused, 401);
    let (status, body) = {
        let bytes = serde_json::to_vec(&synchronized).unwrap();
        let answer = reqwest::Client::new()
            .post(format!("{}/api/scm_installations/github/webhook", server.base))
            .header("x-github-event", "pull_request")
            .header("x-github-delivery", "d-2")
            .header("x-hub-signature-256", play_model::webhook::delivery::spec_signature(WEBHOOK_SECRET, &bytes))
            .body(bytes)
            .send()
            .await
            .unwrap();
        (answer.status().as_u16(), answer.json::<Value>().await.unwrap())
    };
    assert_eq!((status, body["duplicate"].as_bool()), (202, Some(true)), "{body}");
    // Several passes later the preview still serves.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (still, _) = wait_serving(&server, &path, one, http_port, "pr one, second").await;
    assert_eq!(still["id"].as_i64(), Some(playground), "the forged close changed nothing");

    // A fork's pull request is not deployed; the refusal is recorded.
    branch(&g, "fork-work");
    g.github.commit(REPO, "fork-work", &[("index.html", b"from a fork")]);
    let fork = g.github.open_pull(REPO, "fork-work", "main", Some("mallory/app"));
    let opened = g.github.pull_event(REPO, fork, "opened");
    assert_eq!(Github::deliver(&server.base, "pull_request", "d-3", &opened, WEBHOOK_SECRET).await, 202);
    let targets = server
        .wait_for("the fork refused", &format!("{path}/targets"), |all| {
            target(all, fork).is_some_and(|t| t["status"] == "refused")
        })
        .await
        .0;
    let refusal = target(&targets, fork).unwrap();
    assert!(refusal["reason"].as_str().unwrap().contains("allow_forks"), "{refusal:#}");
    assert!(refusal["playground_id"].is_null());
    wait_github("the refusal said on the pull request", &server, || {
        g.github.comments(REPO, fork).iter().any(|c| c.body.contains("not deployed"))
    })
    .await;

    // Closed while its image builds: the finished build brings nothing back.
    branch(&g, "slow");
    g.github.commit(REPO, "slow", &[("Dockerfile", dockerfile(true).as_bytes()), ("index.html", b"slow")]);
    let slow = g.github.open_pull(REPO, "slow", "main", None);
    let opened = g.github.pull_event(REPO, slow, "opened");
    assert_eq!(Github::deliver(&server.base, "pull_request", "d-4", &opened, WEBHOOK_SECRET).await, 202);
    let targets = server
        .wait_for("the slow preview launched", &format!("{path}/targets"), |all| {
            target(all, slow).is_some_and(|t| t["playground_id"].is_i64())
        })
        .await
        .0;
    let building = target(&targets, slow).unwrap()["playground_id"].as_i64().unwrap();
    let (_, detail) = server.get(&format!("/api/playgrounds/{building}")).await;
    assert_ne!(detail["status"], "running", "still building: {detail:#}");
    g.github.close_pull(REPO, slow, false);
    let closed = g.github.pull_event(REPO, slow, "closed");
    assert_eq!(Github::deliver(&server.base, "pull_request", "d-5", &closed, WEBHOOK_SECRET).await, 202);
    server
        .wait_for("the slow preview gone", &format!("{path}/targets"), |all| {
            target(all, slow).is_some_and(|t| t["status"] == "gone")
        })
        .await;
    // Longer than the build: it finished (or was stopped), and nothing
    // came back.
    tokio::time::sleep(Duration::from_secs(12)).await;
    deleted(&server, building).await;
    let (_, targets) = server.get(&format!("{path}/targets")).await;
    assert_eq!(target(&targets, slow).unwrap()["status"], "gone", "{targets:#}");
    let (_, listed) = server.get("/api/playgrounds").await;
    let running_slow = listed.as_array().unwrap().iter().filter(|p| p["id"] != building).any(|p| {
        p["name"].as_str().is_some_and(|n| n.starts_with(&format!("trigger-{}-target-", trigger["id"])))
            && p["id"].as_i64() != Some(playground)
            && p["desired_state"] != "destroyed"
    });
    assert!(!running_slow, "no other preview was launched: {listed:#}");

    // Closed on GitHub, and the delivery never comes: the periodic pass
    // finds it closed, destroys the preview, deploys nothing more.
    g.github.close_pull(REPO, one, true);
    server
        .wait_for("#1's preview gone without a delivery", &format!("{path}/targets"), |all| {
            target(all, one).is_some_and(|t| t["status"] == "gone")
        })
        .await;
    assert!(gone(&server, playground).await, "#1's Playground is on its way out");
    deleted(&server, playground).await;
    wait_github("the deployment inactive", &server, || {
        deployment_status(&g, &second).is_some_and(|(state, _)| state == "inactive")
    })
    .await;
    wait_github("the comment says the preview is gone", &server, || {
        g.github.comments(REPO, one).iter().any(|c| c.body.contains("destroyed"))
    })
    .await;
    assert_eq!(g.github.comments(REPO, one).len(), 1, "still one comment");
}
