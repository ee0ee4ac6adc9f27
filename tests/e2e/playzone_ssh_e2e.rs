//! A Playzone on an ssh URL end to end (issue #52, item 2): Debian's sshd
//! with `git-shell` in front of a bare repository
//! (`play_git::testing::GitSsh`), the sync loop, a Playground built from a
//! branch play creates over ssh, with the branch's files mounted; then a
//! host key that is not the pinned one refuses the next sync before the
//! deploy key signs anything.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::Duration;

use crate::support::docker::BUSYBOX_IMAGE;
use crate::support::playzones::built_from;
use axum::http::{Method, StatusCode};
use play_git::testing::{Access, GitServer, file};
use serde_json::json;

const COMPOSE: &str =
    "services:\n  app:\n    build: .\n    command: [\"sleep\", \"3600\"]\n    labels:\n      svc/source_mount: /src\n";

fn exec(container: &str, args: &[&str]) -> String {
    let out = Command::new("docker").arg("exec").arg(container).args(args).output().expect("docker exec");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test]
async fn a_playzone_on_ssh_syncs_builds_and_creates_a_branch_and_a_changed_host_key_is_refused() {
    let git = GitServer::start();
    let dockerfile = format!("FROM {BUSYBOX_IMAGE}\nCOPY index.html /www/index.html\n");
    let commits = git.create_repo(
        "app",
        Access::Private { token: "not-used-over-ssh".into() },
        &[("main", &[("Dockerfile", file(dockerfile)), ("index.html", file("served over ssh"))])],
    );
    let ssh = git.ssh();
    let crate::support::playzones::PlayzoneWorld { world, runtimes, playzone, cache: _cache } =
        crate::support::playzones::start_ssh(&ssh, "app").await;
    let app = &world.app;

    // The first sync pinned the sshd's host key, and listed the branch.
    let zone = app.get(&format!("/api/playzones/{playzone}"), &app.admin).await.body;
    assert_eq!(
        zone["ssh_host_key"].as_str().unwrap().split_whitespace().nth(1),
        ssh.host_key().split_whitespace().nth(1)
    );
    let branches = app.get(&format!("/api/playzones/{playzone}/branches"), &app.admin).await.body;
    assert_eq!(branches["branches"][0]["commit"], commits[0].as_str(), "{branches}");

    // A Playground on a branch play creates over ssh, built from it.
    let playspec = world.playspec_with("over-ssh", COMPOSE, built_from("app", playzone)).await;
    let services =
        json!({"app": {"git_config": {"branch_name": "preview", "create_branch": true, "base_branch_name": "main"}}});
    let created = world.playground("over-ssh", playspec, json!({"services": services})).await;
    let id = created["id"].as_i64().unwrap();
    runtimes.0.handle.wake(id);
    world.wait_converged(id, "the Playground built over ssh").await;
    assert_eq!(git.branch_commit("app", "preview").as_deref(), Some(commits[0].as_str()), "pushed over ssh");
    let container = format!("{}-app-1", created["compose_project"].as_str().unwrap());
    assert_eq!(exec(&container, &["cat", "/www/index.html"]), "served over ssh", "built from the commit");
    assert_eq!(exec(&container, &["cat", "/src/index.html"]), "served over ssh", "the source mounted");

    // Another host key than the pinned one: the sync fails saying so, and
    // the deploy key signed nothing (no new login on the sshd).
    let logins = || ssh.log().matches("Accepted publickey").count();
    let before = logins();
    let other = play_model::ssh_keys::generate_ed25519("impostor").unwrap().public_openssh;
    let r = app
        .request(
            Method::PATCH,
            &format!("/api/playzones/{playzone}"),
            Some(&app.admin),
            Some(json!({"playzone": {"ssh_host_key": other}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    runtimes.1.handle.wake(playzone);
    crate::support::wait_until("the sync refused by the pin", Duration::from_secs(30), || async {
        let zone = app.get(&format!("/api/playzones/{playzone}"), &app.admin).await.body;
        zone["status"] == "error" && zone["status_message"].as_str().is_some_and(|m| m.contains("not the pinned"))
    })
    .await;
    assert_eq!(logins(), before, "the deploy key signed in:\n{}", ssh.log());
}
