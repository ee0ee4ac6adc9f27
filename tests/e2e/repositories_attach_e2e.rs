//! From files to a running environment that follows `git push`, through
//! the real binary and play's own Git host (issue #29): `create_and_push`
//! of a Compose project with a Dockerfile; the stock `git clone` gets
//! exactly those files in one commit; `attach` makes a Playzone that reads
//! the private repository without a token; a Playground built from it
//! runs on a Playroom over the harness's sshd; a `git push` records a
//! `repo.push` event, moves the Playzone's branch index at once (the push
//! wakes the sync: its own interval is ten minutes) and the Playground
//! shows `needs_rollout`. Another account's key can neither clone, push
//! nor attach it. Deleted, the repository's Playzone stops syncing and
//! says why.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use crate::support::docker::{BUSYBOX_IMAGE, ensure_busybox_image};
use crate::support::git_cli::{git, ok, with_key};
use crate::support::serve::Play;
use crate::support::sshd::Sshd;
use play_store::{Store, events};
use serde_json::{Value, json};

fn project_files() -> Value {
    let dockerfile = format!(
        "FROM {BUSYBOX_IMAGE}\nCOPY index.html /www/index.html\nCMD [\"httpd\", \"-f\", \"-p\", \"8080\", \"-h\", \"/www\"]\n"
    );
    json!([
        {"path": "compose.yaml", "content": "services:\n  web:\n    build: .\n"},
        {"path": "Dockerfile", "content": dockerfile},
        {"path": "index.html", "content": "first"},
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushed_project_is_attached_built_and_follows_git_push() {
    ensure_busybox_image();
    let sshd = Sshd::start();
    let play = Play::new().await;
    let server = play.serve().await;

    let made = server
        .create("/api/repos/create_and_push", json!({"name": "shop", "files": project_files(), "message": "First"}))
        .await;
    assert_eq!(made["repo"]["private"], true, "{made}");
    let clone_url = made["repo"]["clone_url"].as_str().unwrap().to_owned();
    let work = tempfile::tempdir().unwrap();
    let clone = work.path().join("clone");
    ok(&git(work.path(), &["clone", "--quiet", &with_key(&clone_url, &server.token), clone.to_str().unwrap()]));
    let files = ok(&git(&clone, &["ls-files"]));
    assert_eq!(files.lines().collect::<Vec<_>>(), ["Dockerfile", "compose.yaml", "index.html"]);
    assert_eq!(ok(&git(&clone, &["rev-list", "--count", "HEAD"])), "1", "one commit");
    assert_eq!(ok(&git(&clone, &["rev-parse", "HEAD"])), made["commit"]["commit_sha"].as_str().unwrap());

    let zone = server.create("/api/playzones/attach", json!({"repo_full_name": "default/shop"})).await;
    let zone_id = zone["id"].as_i64().unwrap();
    assert_eq!((zone["private"].as_bool(), zone["has_credentials"].as_bool()), (Some(true), Some(false)), "{zone}");
    let (status, again) = server.post("/api/playzones/attach", json!({"repo_full_name": "default/shop"})).await;
    assert_eq!((status, again["id"].as_i64()), (200, Some(zone_id)), "attaching again gives the same Playzone");
    let zone_path = format!("/api/playzones/{zone_id}");
    server.wait_for("the first sync", &zone_path, |z| z["status"] == "active" && z["compose_file"].is_string()).await;

    let room = server.create("/api/playrooms", sshd.playroom_body("box")).await;
    let spec = json!({"playspec": {"name": "shop", "base_compose_yaml": "services:\n  web:\n    build: .\n",
                                   "services": [{"name": "web", "playzone_id": zone_id}]}});
    let spec = server.create("/api/playspecs", spec).await;
    let pg = json!({"playground": {"name": "shop", "playspec_id": spec["id"], "playroom_id": room["id"]}});
    let pg = server.create("/api/playgrounds", pg).await;
    let pg_path = format!("/api/playgrounds/{}", pg["id"]);
    let (running, _) = server
        .wait_for("the built Playground running", &pg_path, |p| {
            assert_ne!(p["status"], "failed", "{p:#}");
            p["status"] == "running"
        })
        .await;
    assert_eq!(running["needs_rollout"], false, "{running:#}");

    std::fs::write(clone.join("index.html"), "second").unwrap();
    ok(&git(&clone, &["commit", "--quiet", "-am", "Second"]));
    ok(&git(&clone, &["push", "--quiet", "origin", "main"]));
    let head = ok(&git(&clone, &["rev-parse", "HEAD"]));
    let branches = format!("{zone_path}/branches?query=main");
    // The sync interval is ten minutes: the index moves only because the
    // push woke the sync.
    let (_, moved_after) = server
        .wait_for("the branch index at the pushed commit", &branches, |b| b["branches"][0]["commit"] == head)
        .await;
    eprintln!("the Playzone's index moved {moved_after:?} after the push returned");
    let (detail, _) = server.wait_for("needs_rollout", &pg_path, |p| p["needs_rollout"] == true).await;
    assert_eq!(detail["outdated_services"], json!(["web"]), "{detail:#}");

    let store = Store::connect(play.database_url()).await.unwrap();
    let account = play_store::accounts::find_account_by_name(&store, "default").await.unwrap().id;
    let pushes: Vec<_> = events::list_for_account(&store, account)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| (e.event_type == "repo.push").then_some(e.metadata?))
        .filter(|m| m["after"] == head.as_str())
        .collect();
    assert_eq!(pushes.len(), 1, "one repo.push event for the git push: {pushes:?}");
    assert_eq!(pushes[0]["repository"], "default/shop");

    ok(&play.run(&["accounts", "create", "mallory"]));
    let theirs = ok(&play.run(&["keys", "create", "--label", "m", "--scopes", "all", "--account", "mallory"]));
    let stolen = git(work.path(), &["clone", "--quiet", &with_key(&clone_url, &theirs), "stolen"]);
    assert!(!stolen.status.success(), "another account's key must not clone a private repository");
    let pushed = git(&clone, &["push", "--quiet", &with_key(&clone_url, &theirs), "HEAD:refs/heads/evil"]);
    assert!(!pushed.status.success(), "another account's key must not push");
    let attached = reqwest::Client::new()
        .post(format!("{}/api/playzones/attach", server.base))
        .bearer_auth(&theirs)
        .json(&json!({"repo_full_name": "default/shop"}))
        .send()
        .await
        .unwrap();
    assert_eq!(attached.status(), 404, "another account's private repository reads as missing");

    // The repository goes: the Playzone stops syncing and says why.
    server.ok(reqwest::Method::DELETE, "/api/repos/default/shop", None).await;
    server
        .wait_for("the sync saying that access is lost", &zone_path, |z| {
            z["status"] == "error"
                && z["status_message"].as_str().is_some_and(|m| m.contains("attach the repository again"))
        })
        .await;
}
