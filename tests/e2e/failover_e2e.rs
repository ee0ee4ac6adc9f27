//! Failover repairs drift at once (issue #51, item 1): two `play serve`
//! replicas on one PostgreSQL, with Playgrounds on a Playroom over the
//! harness's sshd (the real Docker engine). Replica `A` creates and
//! converges four Playgrounds, then is killed with SIGKILL; one container
//! of each Playground is removed with `docker rm -f`. Replica `B` never
//! visited them and follows no Docker events of their Playroom (its watch
//! list's refresh, like its resync, is 5 min away). It must put each back
//! well before then: a survivor that sees a replica silent gives every
//! Playground whose last pass was the silent one's a pass at once
//! (`play_reconcilers::heartbeat`), which looks at the host and follows
//! the Playroom's events from then on. Before, it waited for a resync or a
//! refresh (10 s by default, up to 30 s with the resync). The times from the kill are
//! printed (`docs/benchmarks/reliability.md` has the figures); the
//! assertion is the mechanism (repaired long before any resync), not a
//! speed, and 0 duplicate containers.
//!
//! Runs on PostgreSQL only (SQLite runs one replica): on SQLite it returns
//! at once, saying so.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::docker::{ensure_busybox_image, project_containers};
use crate::support::serve::Play;
use crate::support::sshd::Sshd;
use play_store::Backend;
use serde_json::json;

const PLAYGROUNDS: usize = 4;
/// Far beyond the bound below: a repair seen in time came neither from a
/// resync nor from a refresh of the Playrooms whose events are followed
/// (`B` started before the Playroom existed, so it follows none of its
/// own accord until then).
const RESYNC: &str = "300s";
/// Generous for a busy machine, yet far below the resync: a repair within
/// it came from the events and the leases.
const BOUND: Duration = Duration::from_secs(45);

const COMPOSE: &str = "services:\n  app:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n  \
                       side:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n";

fn running(container: &str) -> bool {
    let out = Command::new("docker").args(["inspect", "--format", "{{.State.Running}}", container]).output();
    out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "true")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_survivor_repairs_drift_on_a_killed_replicas_playgrounds_without_waiting_for_a_resync() {
    if play_store::testing::backend() != Backend::Postgres {
        eprintln!("skipped: two replicas need PostgreSQL (PLAY_TEST_BACKEND=postgres)");
        return;
    }
    ensure_busybox_image();
    let play_a = Play::new()
        .await
        .env("PLAY_REPLICA_ID", "A")
        .env("PLAY_RESYNC_INTERVAL", RESYNC)
        .env("PLAY_EVENTS_REFRESH", RESYNC);
    let play_b = play_a.replica("B");
    let mut a = play_a.serve().await;
    let mut b = play_b.serve().await;
    b.token.clone_from(&a.token);
    let sshd = Sshd::start();

    // Everything through A: only A's runtime is woken by the creates.
    let room = a.create("/api/playrooms", sshd.playroom_body("box")).await;
    let spec = a.create("/api/playspecs", json!({"playspec": {"name": "fo", "base_compose_yaml": COMPOSE}})).await;
    let mut playgrounds = Vec::new();
    for i in 0..PLAYGROUNDS {
        let body =
            json!({"playground": {"name": format!("fo-{i}"), "playspec_id": spec["id"], "playroom_id": room["id"]}});
        let pg = a.create("/api/playgrounds", body).await;
        playgrounds.push((pg["id"].as_i64().unwrap(), pg["compose_project"].as_str().unwrap().to_owned()));
    }
    for (id, _) in &playgrounds {
        a.wait_for("running", &format!("/api/playgrounds/{id}"), |p| p["status"] == "running").await;
    }
    let before: Vec<Vec<String>> = playgrounds.iter().map(|(_, project)| project_containers(project)).collect();
    assert!(before.iter().all(|names| names.len() == 2), "{before:?}");

    a.kill();
    let killed = Instant::now();
    let removed: Vec<String> =
        before.iter().map(|names| names.iter().find(|n| n.contains("-app-")).unwrap().clone()).collect();
    for name in &removed {
        let out = Command::new("docker").args(["rm", "-f", name]).output().unwrap();
        assert!(out.status.success(), "docker rm -f {name}: {}", String::from_utf8_lossy(&out.stderr));
    }

    let mut repaired = vec![None; PLAYGROUNDS];
    while repaired.iter().any(Option::is_none) && killed.elapsed() < BOUND {
        for (i, name) in removed.iter().enumerate() {
            if repaired[i].is_none() && running(name) {
                repaired[i] = Some(killed.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("repaired after the kill of A: {repaired:?}");
    assert!(
        repaired.iter().all(Option::is_some),
        "B repaired {repaired:?} within {BOUND:?} of A's kill (its resync is {RESYNC} away); B's log:\n{}",
        b.log_tail(80)
    );
    for (names, (_, project)) in before.iter().zip(&playgrounds) {
        assert_eq!(&project_containers(project), names, "one container per service, no duplicate");
    }
    let (status, _) = b.get(&format!("/api/playgrounds/{}", playgrounds[0].0)).await;
    assert_eq!(status, 200);
}
