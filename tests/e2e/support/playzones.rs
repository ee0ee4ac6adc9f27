//! A [`World`] whose reconcilers reach repositories on a loopback
//! [`GitServer`], with one synced Playzone: the setup of the e2e tests of
//! services built from Playzones.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_git::testing::{GitServer, GitSsh};
use play_git::{GitConfig, GitGateway};
use serde_json::{Value, json};

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
    let (world, runtimes, cache) = world_reaching_loopback(playground).await;
    let app = &world.app;
    let body = json!({"playzone": {"name": repo, "scm_url": git.url(repo), "private": true, "credentials": token}});
    let r = app.post("/api/playzones", &app.admin, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let playzone = r.body["id"].as_i64().expect("a Playzone id");
    first_sync(&world, &runtimes.1, playzone).await;
    PlayzoneWorld { world, runtimes, playzone, cache }
}

/// [`start`] for the repository `repo` over `ssh` (issue #52, item 2):
/// the Playzone is made on its ssh URL without credentials, gets a
/// generated deploy key, which `ssh` authorizes, and syncs (its first
/// contact pins the host key).
pub async fn start_ssh(ssh: &GitSsh, repo: &str) -> PlayzoneWorld {
    let (world, runtimes, cache) = world_reaching_loopback(super::world::playground_config()).await;
    let app = &world.app;
    let body = json!({"playzone": {"name": repo, "scm_url": ssh.url(repo), "private": true}});
    let r = app.post("/api/playzones", &app.admin, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let playzone = r.body["id"].as_i64().expect("a Playzone id");
    let r = app.post(&format!("/api/playzones/{playzone}/generate_ssh_key"), &app.admin, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    ssh.authorize(r.body["ssh_public_key"].as_str().expect("the public key"));
    first_sync(&world, &runtimes.1, playzone).await;
    PlayzoneWorld { world, runtimes, playzone, cache }
}

/// A world whose loops reach repositories on 127.0.0.1 (http allowed),
/// pinning ssh host keys in its store, and the gateway's cache.
async fn world_reaching_loopback(
    playground: play_reconcilers::playground::PlaygroundConfig,
) -> (World, (Running, Running), tempfile::TempDir) {
    let mut config = TestApp::default_config();
    config.repository_policy.urls.allow_http = true;
    config.repository_policy.urls.allowlist =
        play_model::webhook::UrlPolicy::parse_allowlist("127.0.0.1").expect("a valid allowlist");
    let world = World::start_with(config.clone()).await;
    let cache = tempfile::tempdir().expect("a cache directory");
    let host_keys = play_core::playzone::host_keys::PinnedHostKeys::new(world.app.store().clone());
    let git_config = GitConfig {
        ssh_host_keys: Some(Arc::new(host_keys)),
        ..GitConfig::new(cache.path(), config.repository_policy.urls.clone())
    };
    let gateway = GitGateway::new(git_config).expect("a git gateway");
    let runtimes = world.runtimes_with_repositories_and(Arc::new(gateway), playground);
    (world, runtimes, cache)
}

/// Waits for `playzone`'s first successful sync. A failed sync counts
/// only when no newer one is asked for (`sync_pending`): the Playzone's
/// create wakes its loop at once (its commit does), so a sync may run and
/// fail before the test's next write (a deploy key) asks for another.
async fn first_sync(world: &World, sync: &Running, playzone: i64) {
    let app = &world.app;
    sync.handle.wake(playzone);
    super::wait_until("the Playzone's first sync", Duration::from_secs(30), || async {
        let zone = app.get(&format!("/api/playzones/{playzone}"), &app.admin).await.body;
        let failed = zone["status"] == "error" && zone["sync_pending"] == false;
        assert!(!failed, "the first sync failed: {zone}");
        zone["status"] == "active"
    })
    .await;
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

/// The Playspec fields of one service, `service`, built from `playzone`
/// (for [`World::playspec_with`]).
pub fn built_from(service: &str, playzone: i64) -> Value {
    json!({"services": [{"name": service, "playzone_id": playzone}]})
}
