//! A Dockerfile `FROM` a private registry: the build gets the Playspec's
//! registry credentials (a real `docker-registry` with htpasswd on
//! loopback, a private repository on a real git server, a Playroom over
//! the harness's sshd). Without a credential the build fails at
//! `image_build` with the engine's reason; with one it runs, and the
//! password is in neither the image nor the build record.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;

use crate::support::playzones::built_from;
use crate::support::registry::Registry;
use play_git::testing::{Access, GitServer, file};
use serde_json::{Value, json};

const TOKEN: &str = "glpat-registry-build-e2e-3e9a";
const COMPOSE: &str = "services:\n  web:\n    build: .\n";

async fn playspec(world: &crate::support::world::World, name: &str, playzone: i64) -> i64 {
    world.playspec_with(name, COMPOSE, built_from("web", playzone)).await
}

#[tokio::test]
async fn a_build_from_a_private_registry_uses_the_playspecs_credentials() {
    let mut registry = Registry::start();
    let base = registry.push_test_image("play-e2e/build-base");
    let git = GitServer::start();
    let dockerfile = format!("FROM {base}\nCMD [\"sleep\", \"3600\"]\n");
    git.create_repo("app", Access::Private { token: TOKEN.into() }, &[("main", &[("Dockerfile", file(dockerfile))])]);
    let crate::support::playzones::PlayzoneWorld { world, runtimes, playzone, cache: _cache } =
        crate::support::playzones::start(&git, "app", TOKEN).await;
    let app = &world.app;

    // No credential: the engine cannot pull the base image.
    let bare = playspec(&world, "bare", playzone).await;
    let id = world.playground("bare", bare, json!({})).await["id"].as_i64().unwrap();
    runtimes.0.handle.wake(id);
    world.wait_for(id, "the refused pull", |_, body| body["status"] == "failed").await;
    let status: Value = app.get(&format!("/api/playgrounds/{id}/status"), &app.admin).await.body;
    assert_eq!(status["error_step"], "image_build", "{status:#}");
    let message = status["error_message"].as_str().unwrap_or_default().to_lowercase();
    assert!(message.contains("auth") || message.contains("unauthorized"), "{status:#}");

    // With the Playspec's credential for that registry: built and running.
    let spec = playspec(&world, "private", playzone).await;
    let cred = json!({"registry_type": "generic", "registry_url": registry.address(),
                      "username": registry.username, "secret": registry.password});
    let r = app.post(&format!("/api/playspecs/{spec}/add_registry_credential"), &app.admin, cred).await;
    assert!(r.status.is_success(), "{}", r.text);
    let id = world.playground("private", spec, json!({})).await["id"].as_i64().unwrap();
    runtimes.0.handle.wake(id);
    world.wait_converged(id, "the build from the private base image").await;

    let debug = app.get(&format!("/api/playgrounds/{id}/debug"), &app.admin).await.body;
    let image = debug["build_overrides"]["web"]["image"].as_str().unwrap().to_owned();
    assert!(!debug.to_string().contains(&registry.password), "the password is in /debug");
    for args in [vec!["history", "--no-trunc", &image], vec!["image", "inspect", &image]] {
        let out = Command::new("docker").args(&args).output().expect("docker");
        assert!(out.status.success(), "docker {args:?}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains(&registry.password), "the password is in {args:?}");
    }
}
