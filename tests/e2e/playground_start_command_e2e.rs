//! `svc/start_command` on the real engine (issue #52, item 1): the
//! container runs the label's command instead of the Compose `command`,
//! and a rollout that changes the label (through the variable it names)
//! replaces the service's container with one running the new command.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::time::Duration;

use crate::support::world::{World, inspect};
use axum::http::Method;
use serde_json::json;

const COMPOSE: &str = "services:\n  web:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n    \
     stop_grace_period: 1s\n    labels:\n      svc/start_command: \"sleep ${NAP:-4000}\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_command_is_what_runs_and_a_new_one_rolls_the_service_out() {
    let w = World::start().await;
    let spec = w.playspec("started", COMPOSE).await;
    let p = w.playground("started", spec, json!({})).await;
    let id = p["id"].as_i64().unwrap();
    let web = format!("{}-web-1", p["compose_project"].as_str().unwrap());
    let _running = w.runtime("replica-a", Duration::from_secs(2));
    w.wait_converged(id, "first convergence").await;
    assert_eq!(inspect(&web, "{{json .Config.Cmd}}"), r#"["sleep","4000"]"#);
    let first = inspect(&web, "{{.Id}}");

    let body = json!({"playground": {"env_overrides": {"NAP": "5000"}}});
    let path = format!("/api/playgrounds/{id}/rollout");
    let r = w.app.request(Method::POST, &path, Some(&w.app.admin), Some(body)).await;
    assert_eq!(r.body["generation"], 2, "{}", r.text);
    w.wait_converged(id, "the rollout").await;
    assert_eq!(inspect(&web, "{{json .Config.Cmd}}"), r#"["sleep","5000"]"#);
    assert_ne!(inspect(&web, "{{.Id}}"), first, "the service was replaced");
}
