//! Production mode end to end (issue #52, item 1): a service built from a
//! private repository on a real git smart-HTTP server, on a Playroom over
//! the harness's sshd. With `services.app.production` the image is the
//! Dockerfile's `production` stage (in place of the Compose `target`),
//! the container has the production environment and no source mount; a
//! rollout that turns it off builds the development stage and mounts the
//! source again (`docs/compose.md`, "Production mode").

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;

use crate::support::docker::BUSYBOX_IMAGE;
use crate::support::playzones::built_from;
use play_git::testing::{Access, GitServer, file};
use serde_json::{Value, json};

const TOKEN: &str = "glpat-production-e2e-7d2e41";

const COMPOSE: &str = "services:
  app:
    build: {context: ., target: dev}
    command: [\"sleep\", \"3600\"]
    environment:
      NODE_ENV: development
    labels:
      svc/source_mount: /src
";

fn exec(container: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new("docker").arg("exec").arg(container).args(args).output().expect("docker exec");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `key`'s value in the container's configuration (the test image has no
/// `printenv`).
fn env_of(container: &str, key: &str) -> String {
    let out = Command::new("docker")
        .args(["inspect", "-f", "{{json .Config.Env}}", container])
        .output()
        .expect("docker inspect");
    let env: Vec<String> = serde_json::from_slice(&out.stdout).expect("the container's env");
    let prefix = format!("{key}=");
    env.iter().find_map(|e| e.strip_prefix(&prefix)).unwrap_or_default().to_owned()
}

async fn last_build(world: &crate::support::world::World, id: i64) -> Value {
    let debug = world.app.get(&format!("/api/playgrounds/{id}/debug"), &world.app.admin).await.body;
    debug["build_records"].as_array().unwrap().iter().rfind(|r| !r["cache_hit"].as_bool().unwrap()).cloned().unwrap()
}

#[tokio::test]
async fn production_mode_builds_the_production_stage_without_the_source_and_a_rollout_turns_it_off() {
    let git = GitServer::start();
    let dockerfile = format!(
        "FROM {BUSYBOX_IMAGE} AS dev\nRUN echo development > /stage\n\nFROM {BUSYBOX_IMAGE} AS production\nRUN echo production > /stage\n"
    );
    git.create_repo(
        "app",
        Access::Private { token: TOKEN.into() },
        &[("main", &[("Dockerfile", file(dockerfile)), ("index.html", file("the source"))])],
    );
    let crate::support::playzones::PlayzoneWorld { world, runtimes, playzone, cache: _cache } =
        crate::support::playzones::start(&git, "app", TOKEN).await;
    let app = &world.app;
    let playspec = world.playspec_with("shipped", COMPOSE, built_from("app", playzone)).await;

    let created = world.playground("shipped", playspec, json!({"services": {"app": {"production": true}}})).await;
    let id = created["id"].as_i64().unwrap();
    let container = format!("{}-app-1", created["compose_project"].as_str().unwrap());
    runtimes.0.handle.wake(id);
    world.wait_converged(id, "the Playground in production mode").await;

    assert_eq!(exec(&container, &["cat", "/stage"]).1, "production", "built from the production stage");
    assert_eq!(env_of(&container, "NODE_ENV"), "production", "over the Compose file's development value");
    assert_eq!(env_of(&container, "RAILS_ENV"), "production");
    assert!(!exec(&container, &["test", "-e", "/src/index.html"]).0, "no source mount");
    let build = last_build(&world, id).await;
    assert!(
        build["log_tail"].as_str().unwrap().contains("production mode: building the stage `production`"),
        "{build}"
    );
    let env = app.get(&format!("/api/playgrounds/{id}/env_metadata?service=app"), &app.admin).await.body;
    assert_eq!(env["metadata"]["NODE_ENV"], json!({"value": "production", "source": "production"}), "{env}");
    let debug = app.get(&format!("/api/playgrounds/{id}/debug"), &app.admin).await.body;
    assert!(debug["branch_clones"].as_array().is_none_or(|c| c.is_empty()), "{debug:#}");

    // Turned off by a rollout: the development stage, the source mounted.
    let off = json!({"playground": {"services": {"app": {"production": false}}}});
    let r = app.post(&format!("/api/playgrounds/{id}/rollout"), &app.admin, off).await;
    assert!(r.status.is_success(), "{}", r.text);
    runtimes.0.handle.wake(id);
    world.wait_converged(id, "the Playground rolled out of production mode").await;
    assert_eq!(exec(&container, &["cat", "/stage"]).1, "development", "the Compose target again");
    assert_eq!(env_of(&container, "NODE_ENV"), "development");
    assert_eq!(exec(&container, &["cat", "/src/index.html"]).1, "the source");
    let build = last_build(&world, id).await;
    assert!(!build["log_tail"].as_str().unwrap().contains("production mode"), "{build}");
}
