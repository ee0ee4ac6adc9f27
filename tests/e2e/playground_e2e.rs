//! Playgrounds converged on a real host: the API records desired state, the
//! Playground reconciler (under the reconcile runtime, leases in the store)
//! makes it true over the harness's sshd on the machine's Docker engine.
//!
//! Covered: the shared create and destroy scenarios (`crate::support::scenarios`,
//! the bodies the simulated host runs too: a crash mid-creation taken over
//! by another replica, one container per service; DELETE leaves no
//! container, network or volume and removes the row), plus what only a real
//! engine shows: `docker-compose -p` lists the created Playground. A service
//! to build fails terminally at `image_build`; a short TTL destroys the
//! Playground on time with `playground.expired`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::{Duration, Instant};

use crate::scenario_test;
use crate::support::scenarios;
use crate::support::world::{Running, World};
use axum::http::StatusCode;
use play_api::testing::TestApp;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_create_on_the_real_engine() {
    let w = World::start().await;
    let scenario = scenarios::shared_create(&w).await;

    // docker-compose lists the Playground by its project (1.29 needs the
    // file to know the service names; v2 reads only the labels).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("docker-compose.yml"), scenarios::COMPOSE).unwrap();
    let ps = crate::support::run(Command::new("docker-compose").current_dir(dir.path()).args([
        "-p",
        &scenario.project,
        "ps",
    ]));
    let ps = String::from_utf8_lossy(&ps.stdout);
    for service in ["db", "web", "worker"] {
        let name = scenario.container(service);
        assert!(ps.contains(&name), "docker-compose ps does not list {name}:\n{ps}");
    }
}

scenario_test!(shared_destroy_on_the_real_engine, shared_destroy, World::start);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_to_build_without_a_playzone_fails_terminally_at_image_build() {
    let w = World::start().await;
    let compose = "services:\n  api:\n    build: ./api\n  web:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"60\"]\n";
    let spec = w.playspec("built", compose).await;
    let (id, _, _running) = w.run_playground("built", spec, "replica-build", Duration::from_secs(2)).await;
    let body = w.wait_for(id, "failed", |_, b| b["status"] == "failed").await;
    let status = w.app.get(&format!("/api/playgrounds/{id}/status"), &w.app.admin).await;
    assert_eq!(status.body["error_step"], "image_build", "{}", status.text);
    // It names what is missing and how to give it.
    let message = status.body["error_message"].as_str().unwrap();
    assert!(message.contains("links no Playzone") && message.contains("svc/repo_url"), "{}", status.text);
    // Issue #51, item 6: the detail says why too, as the status does.
    for field in ["error_step", "error_step_label", "error_message", "creation_step", "creation_step_label"] {
        assert_eq!(body[field], status.body[field], "{field} of the detail: {body:#}");
    }
    assert_eq!(body["error_step_label"], "Building Images", "{body:#}");
    assert!(w.host().containers(id).is_empty(), "{body:#}");
    assert!(w.event_types().await.iter().any(|e| e == "playground.error"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_playground_is_destroyed_on_time() {
    let compose = "services:\n  app:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n";
    let (w, id, project, _running) = short_lived(6, "short", compose).await;
    w.wait_for(id, "running", |_, b| b["status"] == "running").await;
    let host = w.host();
    assert_eq!(host.containers(id).len(), 1);
    // No wake from here on: the pass asked for a timer at expires_at.
    let started = Instant::now();
    w.wait_for(id, "the expired row to be deleted", |status, _| status == StatusCode::NOT_FOUND).await;
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(host.containers(id).is_empty());
    assert_eq!(host.networks(id), Vec::<String>::new());
    assert_eq!(host.volumes(id), Vec::<String>::new());
    assert_eq!(host.named_for(&project), Vec::<String>::new());
    let events = w.event_types().await;
    assert!(events.iter().any(|e| e == "playground.expired"), "{events:?}");
    assert!(events.iter().any(|e| e == "playground.destroyed"), "{events:?}");
}

/// A Playground that fails terminally (a service to build without a
/// Playzone) waits for a change, not a retry; it must still expire on
/// time. Before, nothing ran its next pass: it stayed `failed` past its
/// TTL until someone changed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminally_failed_playground_still_expires_on_time() {
    let (w, id, _, _running) = short_lived(8, "broken", "services:\n  api:\n    build: ./api\n").await;
    w.wait_for(id, "failed", |_, b| b["status"] == "failed").await;
    // No wake from here on: the error policy asked for a pass at expires_at.
    w.wait_for(id, "the expired row to be deleted", |status, _| status == StatusCode::NOT_FOUND).await;
    let events = w.event_types().await;
    assert!(events.iter().any(|e| e == "playground.expired"), "{events:?}");
    assert!(events.iter().any(|e| e == "playground.destroyed"), "{events:?}");
}

/// A World whose new Playgrounds live `ttl_secs`, and a Playground
/// `name` of `compose` in it with its runtime: (world, id, Compose
/// project, the runtime).
async fn short_lived(ttl_secs: u64, name: &str, compose: &str) -> (World, i64, String, Running) {
    let mut config = TestApp::default_config();
    config.life.lifetimes.playground = Duration::from_secs(ttl_secs);
    let w = World::start_with(config).await;
    let spec = w.playspec(name, compose).await;
    let (id, project, running) =
        w.run_playground(name, spec, &format!("replica-{name}"), Duration::from_secs(60)).await;
    (w, id, project, running)
}

/// A container name the engine holds with no container behind it yet (a
/// create still in flight) answers play's create with 409 and the inspect
/// with 404. The pass waits for the name to settle and then creates its
/// container. It used to fail the Playground with `No such container`: a
/// pass that starts while an earlier pass's create is still in the engine
/// (dropped when a sibling step failed) showed that error instead of its
/// own (the CI run of b565d9f, `a_planted_play_build_image_is_not_run`).
///
/// Here the name is held by a create that looks up a volume plugin that
/// does not exist: the engine holds the name for about 15 s, then fails
/// the create and frees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_name_held_by_a_create_in_flight_is_waited_for() {
    let w = World::start().await;
    let compose = "services:\n  app:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n";
    let spec = w.playspec("held", compose).await;
    let pg = w.playground("held", spec, serde_json::json!({})).await;
    let id = pg["id"].as_i64().unwrap();
    let name = format!("{}-app-1", pg["compose_project"].as_str().unwrap());
    let mut holder = hold_name(&name);

    let running = w.runtime("replica-held", Duration::from_secs(60));
    running.handle.wake(id);
    w.wait_converged(id, "the Playground, once the name is free").await;
    let errors: Vec<_> = play_store::events::list_for_account(w.app.store(), w.app.account_id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.entity_id == id && e.action == "error")
        .filter_map(|e| e.metadata)
        .collect();
    assert!(errors.is_empty(), "a pass failed while the engine held the container's name: {errors:?}");
    // The held create failed by itself, which freed the name for play's.
    assert!(!holder.wait().unwrap().success());
    assert_eq!(w.host().containers(id).len(), 1);
}

/// Makes the engine hold the container name `name` with no container
/// behind it: a create of that name stuck looking up a volume plugin that
/// does not exist. Returns once a second create of the name is refused as
/// taken, with the holding `docker create` (which fails by itself).
fn hold_name(name: &str) -> std::process::Child {
    let create = |name: &str| {
        let mut command = Command::new("docker");
        let volume = format!("{name}-held:/held");
        command.args(["create", "--name", name, "--volume-driver", "play-test-no-such-plugin", "-v", &volume]);
        command.arg(crate::support::docker::BUSYBOX_IMAGE);
        command
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut holder =
            create(name).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        // A create that finds the name taken answers at once. One that
        // reached the engine first holds the name itself until its lookup
        // fails (the holder was refused): try again.
        let probe = create(name).output().unwrap();
        if String::from_utf8_lossy(&probe.stderr).contains("is already in use") {
            return holder;
        }
        holder.wait().unwrap();
        assert!(Instant::now() < deadline, "the engine never held {name}");
    }
}
