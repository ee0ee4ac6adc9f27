//! The Playground reconciler's scenarios on a simulated host (issue #16):
//! the API and the reconciler under its runtime, as in the real-engine
//! tests, but the Playroom is a local one at a `play-simhost` socket, so
//! play's whole host path (local dialer, HTTP, bollard, plan and apply)
//! runs against the simulator. Each test asserts on the simulator's state
//! and on play's answers:
//! - create: a 2-service Playground converges to running; the host holds
//!   one container per service with Compose's and play's labels, its
//!   network and its volume;
//! - drift: a container removed and one stopped behind play's back are
//!   recreated and started again, and the drift is reported;
//! - rollout: a change to one service replaces that service's container
//!   only;
//! - destroy: no container, network or volume of the Playground is left,
//!   and the row goes;
//! - mounted files: play writes a Playspec's file into the Playground's
//!   files volume through its helper, reads it back, and binds it into its
//!   target service only.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

mod support;

use std::collections::HashMap;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use play_simhost::engine::archives::Entry;
use play_simhost::filters::Filters;
use play_simhost::{Container, RunState};
use serde_json::{Value, json};
use support::world::World;

const COMPOSE: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
    volumes:
      - data:/data
  web:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    depends_on:
      db:
        condition: service_healthy
volumes:
  data: {}
"#;

/// The label filter of everything play made for Playground `id`.
fn of_playground(w: &World, id: i64) -> Filters {
    let playground = format!("dev.play.playground={id}");
    let installation = format!("dev.play.installation={}", w.installation);
    Filters::labels(&[&playground, &installation])
}

/// The Playground's containers on the simulated host, by name.
fn containers(w: &World, id: i64) -> HashMap<String, Container> {
    let filter = of_playground(w, id);
    w.sim().containers().into_iter().filter(|c| filter.labels_match(&c.labels())).map(|c| (c.name.clone(), c)).collect()
}

/// A converged Playground on COMPOSE with a runtime: (id, project, runtime).
async fn converged(w: &World, name: &str) -> (i64, String, support::world::Running) {
    let spec = w.playspec(name, COMPOSE).await;
    let pg = w.playground(name, spec, json!({})).await;
    let id = pg["id"].as_i64().unwrap();
    let project = pg["compose_project"].as_str().unwrap().to_owned();
    let running = w.runtime("replica-sim", Duration::from_secs(1));
    running.handle.wake(id);
    w.wait_converged(id, "first convergence").await;
    (id, project, running)
}

fn drift_reports(events: &[String]) -> usize {
    events.iter().filter(|e| *e == "playground.drift.detected").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_service_playground_converges_on_the_simulated_host() {
    let w = World::start_simulated().await;
    let (id, project, _running) = converged(&w, "shop").await;

    let body = w
        .wait_for(id, "both services running", |status, body| {
            status == StatusCode::OK
                && body["services"].as_array().is_some_and(|s| s.len() == 2 && s.iter().all(|s| s["running"] == true))
        })
        .await;
    assert_eq!(body["status"], "running", "{body:#}");
    let status = w.app.get(&format!("/api/playgrounds/{id}/status"), &w.app.admin).await;
    assert_eq!(status.body["creation_step"], "ready", "{}", status.text);

    let found = containers(&w, id);
    let mut names: Vec<&String> = found.keys().collect();
    names.sort();
    assert_eq!(names, [&format!("{project}-db-1"), &format!("{project}-web-1")]);
    for (service, container) in
        [("db", &found[&format!("{project}-db-1")]), ("web", &found[&format!("{project}-web-1")])]
    {
        let labels = container.labels();
        assert_eq!(container.state, RunState::Running, "{service}");
        assert_eq!(labels.get("com.docker.compose.project"), Some(&project), "{service}: {labels:?}");
        assert_eq!(labels.get("com.docker.compose.service").map(String::as_str), Some(service), "{labels:?}");
        assert!(labels.contains_key("com.docker.compose.config-hash"), "{service}: {labels:?}");
        assert!(
            container.networks.keys().any(|n| n.starts_with(&project)),
            "{service} is on the project's network: {:?}",
            container.networks.keys()
        );
    }
    let env = found[&format!("{project}-web-1")].config.env.clone().unwrap_or_default();
    assert!(env.contains(&format!("PLAY_PLAYGROUND_ID={id}")), "{env:?}");
    assert!(
        found[&format!("{project}-db-1")].volumes.iter().any(|v| v.name.ends_with("data") && v.target == "/data"),
        "db mounts the volume"
    );
    assert!(!w.sim().list_networks(&of_playground(&w, id)).is_empty(), "the project's network is labelled");
    assert!(!w.sim().list_volumes(&of_playground(&w, id)).is_empty(), "the volume is labelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_on_the_simulated_host_is_repaired_and_reported() {
    let w = World::start_simulated().await;
    let (id, project, running) = converged(&w, "drift").await;
    let (db, web) = (format!("{project}-db-1"), format!("{project}-web-1"));
    let before = containers(&w, id);
    let drifts = drift_reports(&w.event_types().await);

    // Behind play's back: web removed, db stopped.
    w.sim().remove_container(&web, true).unwrap();
    w.sim().stop_container(&db).unwrap();
    running.handle.wake(id);
    support::wait_until("web recreated and db started again", Duration::from_secs(60), || async {
        let now = containers(&w, id);
        now.len() == 2 && now.values().all(|c| c.state == RunState::Running)
    })
    .await;
    let after = containers(&w, id);
    assert_eq!(after[&db].id, before[&db].id, "the stopped db is started again, not replaced");
    assert_ne!(after[&web].id, before[&web].id, "the removed web is a new container");
    w.wait_converged(id, "running again").await;
    support::wait_until("the drift reported", Duration::from_secs(10), || async {
        drift_reports(&w.event_types().await) > drifts
    })
    .await;

    // A pass over a converged Playground changes nothing and reports nothing.
    let reported = drift_reports(&w.event_types().await);
    running.handle.wake(id);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let ids = |m: &HashMap<String, Container>| {
        let mut ids: Vec<String> = m.values().map(|c| c.id.clone()).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&containers(&w, id)), ids(&after));
    assert_eq!(drift_reports(&w.event_types().await), reported);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_recreates_only_the_changed_service() {
    let w = World::start_simulated().await;
    let (id, project, _running) = converged(&w, "ops").await;
    let (db, web) = (format!("{project}-db-1"), format!("{project}-web-1"));
    let before = containers(&w, id);

    let r = w
        .app
        .request(
            Method::POST,
            &format!("/api/playgrounds/{id}/rollout"),
            Some(&w.app.admin),
            Some(json!({"playground": {"services": {"web": {"env_vars": {"MODE": "b"}}}}})),
        )
        .await;
    assert_eq!(r.body["generation"], 2, "{}", r.text);
    w.wait_converged(id, "the rollout").await;

    let after = containers(&w, id);
    assert_eq!(after.len(), 2, "{:?}", after.keys());
    assert_eq!(after[&db].id, before[&db].id, "db did not change and keeps running");
    assert_eq!(after[&db].state, RunState::Running);
    assert_ne!(after[&web].id, before[&web].id, "web was replaced");
    assert_eq!(after[&web].state, RunState::Running);
    let env = after[&web].config.env.clone().unwrap_or_default();
    assert!(env.contains(&"MODE=b".to_owned()), "{env:?}");
    let hash = |c: &Container| c.labels().get("com.docker.compose.config-hash").cloned();
    assert_eq!(hash(&after[&db]), hash(&before[&db]));
    assert_ne!(hash(&after[&web]), hash(&before[&web]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_leaves_nothing_of_the_playground_on_the_simulated_host() {
    let w = World::start_simulated().await;
    let (id, project, running) = converged(&w, "gone").await;
    assert_eq!(containers(&w, id).len(), 2);

    let r = w.app.delete(&format!("/api/playgrounds/{id}"), &w.app.admin).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    running.handle.wake(id);
    w.wait_for(id, "the row removed", |status, _: &Value| status == StatusCode::NOT_FOUND).await;

    assert!(containers(&w, id).is_empty(), "{:?}", containers(&w, id).keys());
    assert!(w.sim().list_networks(&of_playground(&w, id)).is_empty(), "a labelled network is left");
    assert!(w.sim().list_volumes(&of_playground(&w, id)).is_empty(), "a labelled volume is left");
    let everything = Filters::default();
    let left: Vec<String> = w
        .sim()
        .list_volumes(&everything)
        .into_iter()
        .map(|v| v.name)
        .chain(w.sim().list_networks(&everything).into_iter().filter_map(|n| n.name))
        .filter(|name| name.contains(&project))
        .collect();
    assert!(left.is_empty(), "objects named for the project are left: {left:?}");
    assert_eq!(w.sim().counts().containers, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_file_is_written_verified_and_bound_on_the_simulated_host() {
    let w = World::start_simulated().await;
    let spec = w.playspec("files", COMPOSE).await;
    let parts: [(&str, Option<&str>, &[u8]); 3] = [
        ("file", Some("app.conf"), b"mode = web\n"),
        ("mount_path", None, b"/etc/play/app.conf"),
        ("target_services[]", None, b"web"),
    ];
    let r = w.app.post_multipart(&format!("/api/playspecs/{spec}/add_mounted_file"), &parts).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let pg = w.playground("files", spec, json!({})).await;
    let id = pg["id"].as_i64().unwrap();
    let project = pg["compose_project"].as_str().unwrap().to_owned();
    let running = w.runtime("replica-sim", Duration::from_secs(1));
    running.handle.wake(id);
    w.wait_converged(id, "running with its file").await;

    let files_volume = format!("{project}__play_files");
    let files = w.sim().volume_files(&files_volume).expect("the files volume");
    let written: Vec<&Vec<u8>> =
        files.values().filter_map(|e| if let Entry::File(d) = e { Some(d) } else { None }).collect();
    assert_eq!(written, [&b"mode = web\n".to_vec()], "{files:?}");
    let found = containers(&w, id);
    assert_eq!(found.len(), 2, "the helper is gone: {:?}", found.keys());
    let binds_file = |c: &Container| {
        c.host_config.mounts.iter().flatten().any(|m| m.target.as_deref() == Some("/etc/play/app.conf"))
    };
    assert!(binds_file(&found[&format!("{project}-web-1")]), "web gets its file");
    assert!(!binds_file(&found[&format!("{project}-db-1")]), "db is not a target service");

    let r = w.app.delete(&format!("/api/playgrounds/{id}"), &w.app.admin).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    running.handle.wake(id);
    w.wait_for(id, "the row removed", |status, _: &Value| status == StatusCode::NOT_FOUND).await;
    assert!(w.sim().volume_files(&files_volume).is_none(), "the files volume goes with the Playground");
}
