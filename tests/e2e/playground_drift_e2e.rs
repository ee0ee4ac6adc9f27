//! Drift correctness against the machine's Docker engine over the harness's
//! sshd (issue #10, findings 9, 11 and 12):
//!
//! - the shared drift scenario (`crate::support::scenarios`, which the simulated
//!   host runs too): a container removed, one killed and one stopped behind
//!   play's back are recreated or started again, and the drift is reported;
//! - a service container stopped with `docker stop`, whose process exits 0
//!   on SIGTERM and which has no restart policy, is started again and the
//!   drift is reported, while a `service_completed_successfully` one-shot
//!   dependency that exited 0 is left alone;
//! - a Playground whose stored spec is corrupt (its Playspec's `services`,
//!   its own `env_overrides`) fails terminally with a message naming the
//!   column, and its running containers are left as they are;
//! - a host outage is reported on the Playroom (`reachable: false` since
//!   when, and why), and once the host is back the Playground's error is
//!   cleared, its `creation_step` stays `ready`, and the Playroom is
//!   reachable again.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::{Duration, Instant};

use crate::scenario_test;
use crate::support::world::{World, docker_lines, inspect};
use play_store::events;
use serde_json::{Value, json};
use sqlx::Row;

/// `web` exits 0 on SIGTERM (what `docker stop` sends), after the one-shot
/// `migrate` completed.
const ONE_SHOT: &str = r#"
services:
  migrate:
    image: play-test/busybox:1
    command: ["true"]
  web:
    image: play-test/busybox:1
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    depends_on:
      migrate:
        condition: service_completed_successfully
"#;

const APP: &str = "services:\n  app:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n";

/// Polls `ok` every 200 ms; panics with `what` after `limit`.
async fn eventually(what: &str, limit: Duration, mut ok: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !ok().await {
        assert!(started.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The Playground's row as stored, read without the store's parsing (a
/// corrupt row cannot be read through the API).
async fn stored(w: &World, id: i64) -> (String, Option<String>, Option<String>) {
    let row = sqlx::query("SELECT status, error_message, creation_step FROM playgrounds WHERE id = $1")
        .bind(id)
        .fetch_one(w.app.store().pool())
        .await
        .unwrap();
    (row.get("status"), row.get("error_message"), row.get("creation_step"))
}

async fn status_view(w: &World, id: i64) -> Value {
    w.app.get(&format!("/api/playgrounds/{id}/status"), &w.app.admin).await.body
}

async fn playroom(w: &World) -> Value {
    w.app.get(&format!("/api/playrooms/{}", w.playroom), &w.app.admin).await.body
}

scenario_test!(shared_drift_on_the_real_engine, shared_drift, World::start);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanly_stopped_service_is_started_again_and_a_finished_one_shot_is_left_alone() {
    let w = World::start().await;
    let spec = w.playspec("oneshot", ONE_SHOT).await;
    let (id, project, _running) = w.run_playground("oneshot", spec, "replica-drift", Duration::from_secs(1)).await;
    w.wait_converged(id, "running").await;

    let (migrate, web) = (format!("{project}-migrate-1"), format!("{project}-web-1"));
    let state = "{{.Id}} {{.State.Status}} {{.State.ExitCode}} {{.State.FinishedAt}}";
    let migrate_before = inspect(&migrate, state);
    assert!(migrate_before.contains(" exited 0 "), "{migrate_before}");
    let started_before = inspect(&web, "{{.State.StartedAt}}");

    // `docker stop`: SIGTERM, which web's process answers with exit 0.
    let since = inspect(&web, "{{.State.StartedAt}}");
    crate::support::run(Command::new("docker").args(["stop", "--time", "10", &web]));
    let until = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    let exits = docker_lines(&[
        "events",
        "--since",
        &since,
        "--until",
        &until,
        "--filter",
        &format!("container={web}"),
        "--filter",
        "event=die",
        "--format",
        "{{index .Actor.Attributes \"exitCode\"}}",
    ]);
    assert_eq!(exits, ["0"], "web exited 0 on docker stop");

    eventually("the stopped web started again", Duration::from_secs(30), async || {
        inspect(&web, "{{.State.Running}} {{.State.StartedAt}}") != format!("true {started_before}")
            && inspect(&web, "{{.State.Running}}") == "true"
    })
    .await;
    eventually("the drift reported", Duration::from_secs(10), async || {
        w.drift_repairs(id).await.iter().any(|r| r.contains(&"start web".to_owned()))
    })
    .await;
    w.wait_converged(id, "running again").await;

    // A few more passes: the one-shot dependency stays as it finished.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(inspect(&migrate, state), migrate_before, "the finished one-shot was left alone");
    let repairs = w.drift_repairs(id).await;
    assert!(repairs.iter().flatten().all(|r| !r.contains("migrate")), "{repairs:?}");
    assert_eq!(inspect(&web, "{{.State.Running}}"), "true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_stored_spec_fails_the_playground_and_leaves_its_containers() {
    let w = World::start().await;
    let spec_a = w.playspec("a", APP).await;
    let spec_b = w.playspec("b", APP).await;
    let created = [
        w.playground("a", spec_a, json!({})).await,
        w.playground("b", spec_b, json!({"env_overrides": {"GREETING": "hi"}})).await,
    ];
    let [a, b] = created.each_ref().map(|p| p["id"].as_i64().unwrap());
    let [a_project, b_project] = created.each_ref().map(|p| p["compose_project"].as_str().unwrap().to_owned());
    let running = w.runtime("replica-corrupt", Duration::from_secs(1));
    running.handle.wake(a);
    running.handle.wake(b);
    w.wait_converged(a, "a running").await;
    w.wait_converged(b, "b running").await;
    let (a_app, b_app) = (format!("{a_project}-app-1"), format!("{b_project}-app-1"));
    let a_before = inspect(&a_app, "{{.Id}} {{.State.StartedAt}}");
    let b_before = inspect(&b_app, "{{.Id}} {{.State.StartedAt}}");
    let pool = w.app.store().pool();

    // The Playspec's service definitions no longer parse.
    sqlx::query("UPDATE playspecs SET services = '{not json' WHERE id = $1").bind(spec_a).execute(pool).await.unwrap();
    // The Playground's own overrides no longer parse: read as `{}` they
    // would change the container's environment, hence recreate it.
    sqlx::query("UPDATE playgrounds SET env_overrides = '{\"GREETING\": ' WHERE id = $1")
        .bind(b)
        .execute(pool)
        .await
        .unwrap();
    running.handle.wake(a);
    running.handle.wake(b);
    for (id, column) in [(a, "playspecs.services"), (b, "playgrounds.env_overrides")] {
        eventually(&format!("{column} failing Playground {id}"), Duration::from_secs(30), async || {
            stored(&w, id).await.0 == "failed"
        })
        .await;
        let (_, message, step) = stored(&w, id).await;
        let message = message.unwrap();
        assert!(message.contains(column) && message.contains("corrupt"), "{message}");
        assert_eq!(step.as_deref(), Some("ready"), "a running Playground keeps its creation step");
    }
    let errors: Vec<(i64, Value)> = events::list_for_account(w.app.store(), w.app.account_id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.action == "error")
        .map(|e| (e.entity_id, e.metadata.unwrap_or(Value::Null)))
        .collect();
    for id in [a, b] {
        assert!(errors.iter().any(|(e, m)| *e == id && m["terminal"] == true), "{errors:?}");
    }

    // Terminal: resyncs leave it, and nothing on the host was touched.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(inspect(&a_app, "{{.Id}} {{.State.StartedAt}}"), a_before);
    assert_eq!(inspect(&b_app, "{{.Id}} {{.State.StartedAt}}"), b_before);
    assert_eq!(inspect(&a_app, "{{.State.Running}}"), "true");
    assert_eq!(inspect(&b_app, "{{.State.Running}}"), "true");
    assert_eq!(stored(&w, a).await.0, "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_outage_is_reported_on_the_playroom_and_leaves_no_stale_error() {
    let mut w = World::start().await;
    let spec = w.playspec("outage", APP).await;
    let (id, _, _running) = w.run_playground("outage", spec, "replica-outage", Duration::from_secs(1)).await;
    w.wait_converged(id, "running").await;
    let room = playroom(&w).await;
    assert_eq!((room["reachable"].clone(), room["unreachable_since"].clone()), (json!(true), Value::Null), "{room:#}");
    assert_eq!(status_view(&w, id).await["creation_step"], "ready");

    // The host goes away. Its port is not held meanwhile (unlike the
    // playrooms_e2e tests, sshd must come back on it): the killed server's
    // connections sit in TIME_WAIT, so only an SO_REUSEADDR socket could
    // bind it, and such a socket keeps no other SO_REUSEADDR server off.
    // `free_port` hands ports out per process, so nothing else takes it.
    let cut = chrono::Utc::now();
    w.sshd().stop();
    eventually("the Playroom reported unreachable", Duration::from_secs(60), async || {
        playroom(&w).await["reachable"] == false
    })
    .await;
    let room = playroom(&w).await;
    let since: chrono::DateTime<chrono::Utc> = room["unreachable_since"].as_str().unwrap().parse().unwrap();
    assert!(since >= cut - chrono::Duration::seconds(1) && since <= chrono::Utc::now(), "{room:#}");
    assert!(room["unreachable_reason"].as_str().is_some_and(|r| !r.is_empty()), "{room:#}");
    assert_eq!(room["status"], "active");
    eventually("the Playground's error", Duration::from_secs(30), async || {
        status_view(&w, id).await["error_message"].is_string()
    })
    .await;
    let during = status_view(&w, id).await;
    assert_eq!(during["status"], "running", "{during:#}");
    assert_eq!(during["creation_step"], "ready", "an outage is not a step back in creation: {during:#}");
    // Further failed attempts keep the first failure's time.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(playroom(&w).await["unreachable_since"], room["unreachable_since"]);

    // The host comes back, on the same port with the same keys.
    w.sshd().restart();
    eventually("the Playroom reachable again", Duration::from_secs(60), async || {
        playroom(&w).await["reachable"] == true
    })
    .await;
    let room = playroom(&w).await;
    assert_eq!((room["unreachable_since"].clone(), room["unreachable_reason"].clone()), (Value::Null, Value::Null));
    eventually("the Playground's error cleared", Duration::from_secs(30), async || {
        let view = status_view(&w, id).await;
        view["error_message"].is_null() && view["error_step"].is_null()
    })
    .await;
    let after = status_view(&w, id).await;
    assert_eq!(
        (after["status"].as_str(), after["creation_step"].as_str()),
        (Some("running"), Some("ready")),
        "{after:#}"
    );
    let (_, detail) = w.detail(id).await;
    assert_eq!(detail["observed_generation"], detail["generation"]);
}
