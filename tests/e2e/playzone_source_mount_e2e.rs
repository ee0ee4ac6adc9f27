//! `svc/source_mount` end to end: a private repository on a real git
//! smart-HTTP server, a Playroom over the harness's sshd, the machine's
//! Docker engine. The branch's files at the pinned commit are in the
//! service's container at the label's path (a link stays a link); after a
//! pushed commit, a sync and a rollout the new files are there, in a new
//! volume, and the old commit's volume is gone; destroy removes it even
//! when the Playspec persists volumes.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::Duration;

use crate::support::docker::BUSYBOX_IMAGE;
use axum::http::StatusCode;
use play_git::testing::{Access, GitServer, file, symlink};
use serde_json::json;

const TOKEN: &str = "glpat-source-e2e-5c1f0a";

const COMPOSE: &str = "services:\n  app:\n    build: .\n    labels:\n      svc/source_mount: /src\n";

fn exec(container: &str, args: &[&str]) -> String {
    let out = Command::new("docker").arg("exec").arg(container).args(args).output().expect("docker exec");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Where the link at `path` points, as `ls -l` shows it (the test image
/// has no `readlink`); empty when it is not a link.
fn link_of(container: &str, path: &str) -> String {
    let listed = exec(container, &["ls", "-l", path]);
    match exec(container, &["test", "-L", path]).is_empty() && listed.starts_with('l') {
        true => listed.rsplit_once(" -> ").map(|(_, target)| target.to_owned()).unwrap_or_default(),
        false => String::new(),
    }
}

fn volume_exists(name: &str) -> bool {
    Command::new("docker").args(["volume", "inspect", name]).output().expect("docker volume inspect").status.success()
}

#[tokio::test]
async fn the_branch_files_are_mounted_and_follow_a_rollout_to_a_new_volume() {
    let git = GitServer::start();
    let dockerfile = format!("FROM {BUSYBOX_IMAGE}\nCMD [\"sleep\", \"3600\"]\n");
    git.create_repo(
        "app",
        Access::Private { token: TOKEN.into() },
        &[(
            "main",
            &[
                ("Dockerfile", file(dockerfile)),
                ("index.html", file("source v1")),
                ("link", symlink("index.html")),
                ("outside", symlink("/etc/passwd")),
                // A forged marker: left out, the real one written last.
                (".play-source-complete", file("forged")),
            ],
        )],
    );
    let crate::support::playzones::PlayzoneWorld { world, runtimes, playzone, cache: _cache } =
        crate::support::playzones::start(&git, "app", TOKEN).await;
    let app = &world.app;
    // `persist_volumes` keeps Compose volumes, never source volumes.
    let fields = json!({"persist_volumes": true, "services": [{"name": "app", "playzone_id": playzone}]});
    let playspec = world.playspec_with("sourced", COMPOSE, fields).await;

    let created = world.playground("sourced", playspec, json!({})).await;
    let id = created["id"].as_i64().unwrap();
    let project = created["compose_project"].as_str().unwrap().to_owned();
    let container = format!("{project}-app-1");
    runtimes.0.handle.wake(id);
    world.wait_converged(id, "the Playground with a source mount").await;

    // The branch's files at the pinned commit, links as links.
    let commit = git.branch_commit("app", "main").unwrap();
    assert_eq!(exec(&container, &["cat", "/src/index.html"]), "source v1");
    assert_eq!(link_of(&container, "/src/link"), "index.html");
    assert_eq!(link_of(&container, "/src/outside"), "/etc/passwd", "a link is never followed");
    assert_eq!(exec(&container, &["cat", "/src/.play-source-complete"]), commit);
    let debug = app.get(&format!("/api/playgrounds/{id}/debug"), &app.admin).await.body;
    let clones = debug["branch_clones"].as_array().unwrap();
    assert_eq!(clones.len(), 1, "{debug:#}");
    assert_eq!(clones[0]["service"], "app");
    assert_eq!(clones[0]["branch"], "main");
    assert_eq!(clones[0]["commit"], commit.as_str());
    assert_eq!(clones[0]["mount_path"], "/src");
    let old_volume = clones[0]["volume"].as_str().unwrap().to_owned();
    assert_eq!(old_volume, format!("{project}__src-app-{}", &commit[..12]));
    assert!(volume_exists(&old_volume));

    // An incomplete fill (as a crash mid-upload leaves it: no marker) is
    // filled again by the next pass, in the same volume.
    exec(&container, &["rm", "/src/.play-source-complete", "/src/index.html"]);
    runtimes.0.handle.wake(id);
    crate::support::wait_until("the source filled again", Duration::from_secs(30), || async {
        exec(&container, &["cat", "/src/index.html"]) == "source v1"
    })
    .await;
    assert_eq!(exec(&container, &["cat", "/src/.play-source-complete"]), commit);

    // A pushed commit, a sync and a rollout: the new files in a new volume.
    let moved = git.commit("app", "main", &[("index.html", file("source v2"))]);
    crate::support::playzones::sync_to(&world, &runtimes.1, playzone, "main", &moved).await;
    let r = app.post(&format!("/api/playgrounds/{id}/rollout"), &app.admin, json!({})).await;
    assert!(r.status.is_success(), "{}", r.text);
    runtimes.0.handle.wake(id);
    crate::support::wait_until("the new commit's files", Duration::from_secs(90), || async {
        exec(&container, &["cat", "/src/index.html"]) == "source v2"
    })
    .await;
    world.wait_converged(id, "the rolled-out Playground").await;
    let debug = app.get(&format!("/api/playgrounds/{id}/debug"), &app.admin).await.body;
    let new_volume = debug["branch_clones"][0]["volume"].as_str().unwrap().to_owned();
    assert_eq!(new_volume, format!("{project}__src-app-{}", &moved[..12]));
    assert!(volume_exists(&new_volume));
    crate::support::wait_until("the old source volume removed", Duration::from_secs(30), || async {
        !volume_exists(&old_volume)
    })
    .await;
    assert_eq!(link_of(&container, "/src/link"), "index.html");

    // Destroyed: the source volume goes too, although volumes persist.
    let r = app.delete(&format!("/api/playgrounds/{id}"), &app.admin).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    runtimes.0.handle.wake(id);
    world.wait_for(id, "the row to be deleted", |status, _| status == StatusCode::NOT_FOUND).await;
    assert!(!volume_exists(&new_volume), "{new_volume} kept by persist_volumes");
}
