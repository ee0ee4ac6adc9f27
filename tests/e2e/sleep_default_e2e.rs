//! The installation's default `sleep_after` (`PLAY_SLEEP_AFTER`) is one
//! value (`play_model::playground::LifePolicy`) that the API and every
//! loop read (issue #50, item 4). Before, the API, the Playground
//! reconciler and the edge each had a copy, and a harness or wiring that
//! set one without the others showed a sleep the loops never did.
//!
//! A Playground with no `sleep_after` of its own (nor its Playspec's) on
//! an installation whose default is 5 s: its detail shows `5s` and when it
//! sleeps; the reconciler puts it to sleep; the edge logs its requests,
//! so a request wakes it.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::time::Duration;

use crate::sleep_e2e::COMPOSE;
use crate::support::edged::{Edged, client, status, wait_status};
use play_api::testing::TestApp;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_installation_default_is_the_one_the_api_shows_and_the_loops_follow() {
    let mut config = TestApp::default_config();
    config.life.sleep_after = Some(Duration::from_secs(5));
    let Edged { world, http_port, _admin_dir, _runtimes } = Edged::start_with(config).await;
    let spec = world.playspec("sleepy", COMPOSE).await;
    let created = world.playground("inherits", spec, json!({})).await;
    assert_eq!(created["sleep_after"], "5s", "inherited from the installation: {created}");
    let id = created["id"].as_i64().unwrap();
    world.wait_converged(id, "the first start").await;
    let view = status(&world, id).await;
    assert!(view["sleeps_at"].is_string(), "the API says when it sleeps: {view}");

    wait_status(&world, id, "sleeping", Duration::from_secs(15)).await;
    let view = status(&world, id).await;
    assert_eq!((view["power"].as_str(), view["power_reason"].as_str()), (Some("asleep"), Some("idle")), "{view}");

    let host = format!("sleepy-{id}.localhost");
    let answer = client(&host, http_port).get(format!("http://{host}:{http_port}/")).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 200, "the edge watched it, so a request wakes it");
    assert_eq!(answer.text().await.unwrap().trim(), "hello from web");
    wait_status(&world, id, "running", Duration::from_secs(20)).await;
}
