//! Rollout and hard restart on a real host (the harness's sshd, the
//! machine's Docker engine, a local registry with auth):
//! - the shared rollout scenario (`crate::support::scenarios`, which the simulated
//!   host runs too): a change to one service's variables replaces only that
//!   service's container; the others and the volume's data stay;
//! - with a registry image pulled with the Playspec's credential: a
//!   rollout of another service leaves it running as it was, and a hard
//!   restart replaces every container, pulls the registry image
//!   again (the tag moved to a new image meanwhile) and, as the Playspec
//!   does not persist volumes, starts from an empty volume.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::Duration;

use crate::scenario_test;
use crate::support::registry::Registry;
use crate::support::world::{World, docker_lines, inspect};
use axum::http::Method;
use serde_json::json;

fn compose(image: &str) -> String {
    format!(
        r#"
services:
  db:
    image: {image}
    command: ["sleep", "3600"]
    stop_grace_period: 1s
    volumes: ["data:/data"]
  web:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    stop_grace_period: 1s
volumes:
  data: {{}}
"#
    )
}

scenario_test!(shared_rollout_on_the_real_engine, shared_rollout, World::start);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_leaves_a_registry_service_and_a_hard_restart_pulls_it_again() {
    let mut registry = Registry::start();
    let image = registry.push_test_image("play-e2e/ops");
    let w = World::start().await;
    let spec = w.playspec("ops", &compose(&image)).await;
    let cred = json!({"registry_type": "generic", "registry_url": registry.address(),
                      "username": registry.username, "secret": registry.password});
    let r = w.app.post(&format!("/api/playspecs/{spec}/add_registry_credential"), &w.app.admin, cred).await;
    assert!(r.status.is_success(), "{}", r.text);
    let p = w.playground("ops", spec, json!({})).await;
    let id = p["id"].as_i64().unwrap();
    let project = p["compose_project"].as_str().unwrap().to_owned();
    let (db, web) = (format!("{project}-db-1"), format!("{project}-web-1"));
    let _running = w.runtime("replica-a", Duration::from_secs(2));
    w.wait_converged(id, "first convergence").await;
    let (db_1, web_1) = (inspect(&db, "{{.Id}}"), inspect(&web, "{{.Id}}"));
    let v1 = inspect(&db, "{{.Image}}");
    let host = w.host();
    host.touch(&db, "/data/marker");
    assert!(host.exists(&db, "/data/marker"));

    // A rollout of web alone leaves the registry image's service (pulled
    // with the Playspec's credential) running as it was.
    w.rollout_web_and_converge(id).await;
    assert_eq!(inspect(&db, "{{.Id}}"), db_1, "db did not change and keeps running");
    assert_ne!(inspect(&web, "{{.Id}}"), web_1, "web was replaced");
    let web_2 = inspect(&web, "{{.Id}}");

    // The registry's tag moves to a new image; the engine's copy of the tag
    // still names the old one, so only a real pull can bring the new one.
    let scratch = docker_lines(&["create", &image, "true"]).join("");
    let v2_local = format!("play-e2e/ops-v2:{}", std::process::id());
    crate::support::run(Command::new("docker").args([
        "commit",
        "--change",
        "LABEL play.test.version=2",
        &scratch,
        &v2_local,
    ]));
    crate::support::run(Command::new("docker").args(["rm", "-f", &scratch]));
    registry.push(&v2_local, "play-e2e/ops");
    let v2 = inspect(&v2_local, "{{.Id}}");
    crate::support::run(Command::new("docker").args(["tag", &v1, &image]));
    assert_ne!(v1, v2);

    let r = w.app.request(Method::POST, &format!("/api/playgrounds/{id}/hard_restart"), Some(&w.app.admin), None).await;
    assert_eq!((r.body["generation"].as_i64(), r.body["status"].as_str()), (Some(3), Some("in_progress")));
    w.wait_converged(id, "the hard restart").await;
    assert_ne!(inspect(&db, "{{.Id}}"), db_1, "db was replaced");
    assert_ne!(inspect(&web, "{{.Id}}"), web_2, "web was replaced");
    assert_eq!(inspect(&db, "{{.Image}}"), v2, "the image was pulled again");
    assert_eq!(inspect(&db, "{{index .Config.Labels \"dev.play.epoch\"}}"), "1");
    assert!(!host.exists(&db, "/data/marker"), "the volume was recreated (the Playspec does not persist volumes)");
    assert!(w.event_types().await.iter().filter(|t| *t == "playground.updated").count() >= 2);

    let _ = Command::new("docker").args(["rmi", "-f", &v2_local]).output();
}

/// Issue #27, item 5: an image on a registry bound to the host's loopback
/// (the engine trusts such registries without TLS) is refused on an
/// untrusted Playroom unless the operator allowlists the address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_on_the_hosts_loopback_is_refused_unless_allowlisted() {
    let mut registry = Registry::start();
    let image = registry.push_test_image("play-e2e/loopback");
    // Absent on the engine: only a pull could bring it.
    crate::support::run(Command::new("docker").args(["rmi", "-f", &image]));
    let w = World::start().await;
    let spec = w.playspec("loopback", &compose(&image)).await;
    let p = w.playground("loopback", spec, json!({})).await;
    let id = p["id"].as_i64().unwrap();
    let strict = play_reconcilers::playground::PlaygroundConfig {
        registry_policy: play_model::webhook::UrlPolicy::default(),
        ..crate::support::world::playground_config()
    };
    let running = w.runtime_with("replica-a", Duration::from_secs(2), strict);
    w.wait_for(id, "the refused pull", |_, b| b["status"] == "failed").await;
    let body = w.app.get(&format!("/api/playgrounds/{id}/status"), &w.app.admin).await.body;
    let message = body["error_message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains(&image) && message.contains("PLAY_REGISTRY_ALLOWLIST"), "{body:#}");
    drop(running);
    let _ = Command::new("docker").args(["rmi", "-f", &image]).output();
}
