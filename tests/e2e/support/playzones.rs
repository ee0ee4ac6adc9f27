//! A [`World`] whose reconcilers reach repositories on a loopback
//! [`GitServer`], with one synced Playzone: the setup of the e2e tests of
//! services built from Playzones.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_git::testing::GitServer;
use play_git::{GitConfig, GitGateway};
use serde_json::json;

use super::world::{Running, World};

/// The world, its (playground, playzone) reconciler runtimes, the Playzone
/// of the repository, and the gateway's cache (removed on drop).
pub struct PlayzoneWorld {
    pub world: World,
    pub runtimes: (Running, Running),
    pub playzone: i64,
    pub cache: tempfile::TempDir,
}

/// Starts a world that may reach `git` (plain HTTP on loopback) and
/// creates the Playzone `name` of its private repository `repo`, waiting
/// for its first sync.
pub async fn start(git: &GitServer, repo: &str, token: &str) -> PlayzoneWorld {
    start_with(git, repo, token, super::world::playground_config()).await
}

/// [`start`] with the Playground reconciler's own settings.
pub async fn start_with(
    git: &GitServer,
    repo: &str,
    token: &str,
    playground: play_reconcilers::playground::PlaygroundConfig,
) -> PlayzoneWorld {
    let mut config = TestApp::default_config();
    config.repository_policy.urls.allow_http = true;
    config.repository_policy.urls.allowlist =
        play_model::webhook::UrlPolicy::parse_allowlist("127.0.0.1").expect("a valid allowlist");
    let world = World::start_with(config.clone()).await;
    let cache = tempfile::tempdir().expect("a cache directory");
    let gateway =
        GitGateway::new(GitConfig::new(cache.path(), config.repository_policy.urls.clone())).expect("a git gateway");
    let runtimes = world.runtimes_with_repositories_and(Arc::new(gateway), playground);
    let app = &world.app;
    let body = json!({"playzone": {"name": repo, "scm_url": git.url(repo), "private": true, "credentials": token}});
    let r = app.post("/api/playzones", &app.admin, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let playzone = r.body["id"].as_i64().expect("a Playzone id");
    runtimes.1.handle.wake(playzone);
    super::wait_until("the Playzone's first sync", Duration::from_secs(30), || async {
        app.get(&format!("/api/playzones/{playzone}"), &app.admin).await.body["status"] == "active"
    })
    .await;
    PlayzoneWorld { world, runtimes, playzone, cache }
}

/// Syncs `playzone` (its loop runs in `sync`) until its index has
/// `branch` at `commit`.
pub async fn sync_to(world: &World, sync: &Running, playzone: i64, branch: &str, commit: &str) {
    let app = &world.app;
    let r = app.post(&format!("/api/playzones/{playzone}/sync"), &app.admin, json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    sync.handle.wake(playzone);
    super::wait_until("the sync of the pushed commit", Duration::from_secs(30), || async {
        let b = app.get(&format!("/api/playzones/{playzone}/branches?query={branch}"), &app.admin).await;
        b.body["branches"][0]["commit"] == commit
    })
    .await;
}
