//! The Playground reconciler on a simulated host (issue #16): the API and
//! the reconciler under its runtime, as in the real-engine tests, but the
//! Playroom is a local one at a `play-simhost` socket, so play's whole host
//! path (local dialer, HTTP, bollard, plan and apply) runs against the
//! simulator.
//!
//! - create, drift, rollout, destroy: the shared scenarios
//!   (`crate::support::scenarios`), the very bodies the real-engine tests run;
//!   destroy also leaves the simulated host with no container at all;
//! - mounted files: play writes a Playspec's file into the Playground's
//!   files volume through its helper, reads it back, and binds it into its
//!   target service only.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::time::Duration;

use crate::scenario_test;
use crate::support::scenarios;
use crate::support::world::World;
use axum::http::StatusCode;
use play_simhost::engine::archives::Entry;
use serde_json::Value;

/// Two services, `web` the mounted file's target.
const COMPOSE: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    volumes:
      - data:/data
  web:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
volumes:
  data: {}
"#;

scenario_test!(shared_create_on_the_simulated_host, shared_create, World::start_simulated);

scenario_test!(shared_drift_on_the_simulated_host, shared_drift, World::start_simulated);

scenario_test!(shared_rollout_on_the_simulated_host, shared_rollout, World::start_simulated);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_destroy_on_the_simulated_host() {
    let w = World::start_simulated().await;
    scenarios::shared_destroy(&w).await;
    assert_eq!(w.sim().counts().containers, 0, "the host holds no container at all");
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
    let (id, project, running) = w.run_playground("files", spec, "replica-a", Duration::from_secs(1)).await;
    w.wait_converged(id, "running with its file").await;

    let files_volume = format!("{project}__play_files");
    let files = w.sim().volume_files(&files_volume).expect("the files volume");
    let written: Vec<&Vec<u8>> =
        files.values().filter_map(|e| if let Entry::File(d) = e { Some(d) } else { None }).collect();
    assert_eq!(written, [&b"mode = web\n".to_vec()], "{files:?}");
    let found = w.host().containers(id);
    assert_eq!(found.len(), 2, "the helper is gone: {:?}", found.keys());
    let binds_file = |service: &str| {
        let inspect = w.sim().inspect_container(&format!("{project}-{service}-1")).unwrap();
        let mounts = inspect.host_config.and_then(|h| h.mounts).unwrap_or_default();
        mounts.iter().any(|m| m.target.as_deref() == Some("/etc/play/app.conf"))
    };
    assert!(binds_file("web"), "web gets its file");
    assert!(!binds_file("db"), "db is not a target service");

    let r = w.app.delete(&format!("/api/playgrounds/{id}"), &w.app.admin).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    running.handle.wake(id);
    w.wait_for(id, "the row removed", |status, _: &Value| status == StatusCode::NOT_FOUND).await;
    assert!(w.sim().volume_files(&files_volume).is_none(), "the files volume goes with the Playground");
}
