//! The Playground reconciler's scenarios written once and run on both
//! hosts: create, drift, rollout and destroy. Issue #16 asks that the
//! simulated host pass the *same* reconciler test cases as the real engine,
//! so each body here is called by a thin test on the machine's engine
//! (`World::start`, over the harness's sshd) and by one on a simulated host
//! (`World::start_simulated`), and observes or disturbs the host only
//! through [`HostView`]. A body asserts what holds on both hosts; what only
//! one host can show (a process inside a container, the simulator's whole
//! state) is asserted by that host's test after the body returns.
//!
//! Every body starts from a fresh Playground of [`COMPOSE`] on the world's
//! Playroom; create, drift and rollout hand it back ([`Scenario`], its
//! runtime still running) for the host's own checks.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::host_view::Seen;
use super::wait_until;
use super::world::{Running, World};

/// `scenario_test!(name, scenario, start)`: a test `name` that runs the
/// body `scenarios::<scenario>` on a world from `start` (`World::start` or
/// `World::start_simulated`), for a host with nothing of its own to check
/// afterwards.
#[macro_export]
macro_rules! scenario_test {
    ($name:ident, $scenario:ident, $start:path) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            $crate::support::scenarios::$scenario(&$start().await).await;
        }
    };
}

/// Three services: `web` waits for `db` to be healthy; `db` keeps its data
/// in a named volume; `worker` stands alone. A short stop grace period, as
/// their processes (PID 1) ignore SIGTERM.
pub const COMPOSE: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    stop_grace_period: 1s
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
      timeout: 2s
      retries: 3
    volumes:
      - data:/data
  web:
    image: play-test/busybox:1
    command: ["httpd", "-f", "-p", "8080", "-h", "/www"]
    stop_grace_period: 1s
    depends_on:
      db:
        condition: service_healthy
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
  worker:
    image: play-test/busybox:1
    command: sh -c 'while true; do sleep 1; done'
    stop_grace_period: 1s
volumes:
  data: {}
"#;

const SERVICES: [&str; 3] = ["db", "web", "worker"];

/// A Playground of a scenario, and the runtime that reconciles it.
pub struct Scenario {
    pub id: i64,
    pub project: String,
    pub running: Running,
}

impl Scenario {
    /// The container of `service`, as Compose names it.
    pub fn container(&self, service: &str) -> String {
        format!("{}-{service}-1", self.project)
    }

    /// Every service's container name, in [`SERVICES`] order (sorted).
    fn expected(&self) -> Vec<String> {
        SERVICES.iter().map(|s| self.container(s)).collect()
    }
}

/// Create: a Playground whose first replica dies mid-creation (aborted,
/// its leases left to expire) is converged by a second one: running with
/// every service healthy, exactly one container per service with Compose's
/// names and labels, play's variables and the Playground's overrides in
/// every container's environment, `db`'s volume mounted, and the project's
/// network and volume labelled for the Playground.
pub async fn shared_create(w: &World) -> Scenario {
    let host = w.host();
    let (id, project) = playground(w, "shop").await;

    let replica_a = w.runtime("replica-a", Duration::from_secs(2));
    replica_a.handle.wake(id);
    wait_until("replica A creates a container", Duration::from_secs(60), || async { !host.containers(id).is_empty() })
        .await;
    replica_a.crash().await;

    let running = w.runtime("replica-b", Duration::from_secs(2));
    running.handle.wake(id);
    let body = w.wait_for(id, "running with every service healthy", running_healthy).await;
    assert_eq!(body["observed_generation"], body["generation"], "{body:#}");
    assert!(body["last_applied_at"].is_string(), "{body:#}");
    let status = w.app.get(&format!("/api/playgrounds/{id}/status"), &w.app.admin).await;
    assert_eq!(status.body["creation_step"], "ready", "{}", status.text);
    assert_eq!(status.body["error_message"], Value::Null, "{}", status.text);

    let scenario = Scenario { id, project, running };
    let found = host.containers(id);
    assert_eq!(found.keys().cloned().collect::<Vec<_>>(), scenario.expected(), "one container per service");
    for service in SERVICES {
        let seen = &found[&scenario.container(service)];
        let label = |key: &str| seen.labels.get(key).map(String::as_str);
        assert!(seen.running, "{service} runs");
        assert_eq!(label("com.docker.compose.project"), Some(scenario.project.as_str()), "{service}: {seen:?}");
        assert_eq!(label("com.docker.compose.service"), Some(service), "{seen:?}");
        assert!(label("com.docker.compose.config-hash").is_some(), "{service}: {seen:?}");
        assert!(seen.networks.iter().any(|n| n.starts_with(&scenario.project)), "{service} on the project's network");
        for var in [
            "GREETING=hi".to_owned(),
            format!("PLAY_PLAYGROUND_ID={id}"),
            format!("PLAY_COMPOSE_PROJECT={}", scenario.project),
        ] {
            assert!(seen.env.contains(&var), "{service} lacks {var}: {:?}", seen.env);
        }
    }
    let db = &found[&scenario.container("db")];
    assert!(db.volumes.iter().any(|(name, target)| name.ends_with("data") && target == "/data"), "{db:?}");
    assert!(!host.networks(id).is_empty(), "the project's network is labelled");
    assert!(!host.volumes(id).is_empty(), "the volume is labelled");
    scenario
}

/// Drift: behind play's back `worker` is removed, `web` killed and `db`
/// stopped. Play recreates `worker`, starts `web` and `db` again (the same
/// containers), reports what it repaired, and then, converged, a further
/// pass changes nothing and reports nothing.
pub async fn shared_drift(w: &World) -> Scenario {
    let host = w.host();
    let scenario = converged(w, "drift").await;
    let (id, handle) = (scenario.id, &scenario.running.handle);
    let (db, web, worker) = (scenario.container("db"), scenario.container("web"), scenario.container("worker"));
    let before = host.containers(id);
    let reported = w.drift_repairs(id).await.len();

    host.remove(&worker);
    host.kill(&web);
    host.stop(&db);
    handle.wake(id);
    wait_until("worker recreated, web and db started again", Duration::from_secs(60), || async {
        let now = host.containers(id);
        now.len() == 3 && now.values().all(|c| c.running)
    })
    .await;
    let after = host.containers(id);
    assert_eq!(after.keys().cloned().collect::<Vec<_>>(), scenario.expected(), "still one container per service");
    assert_ne!(after[&worker].id, before[&worker].id, "the removed worker is a new container");
    assert_eq!(after[&web].id, before[&web].id, "the killed web is started again, not replaced");
    assert_eq!(after[&db].id, before[&db].id, "the stopped db is started again, not replaced");
    w.wait_for(id, "running again", running_healthy).await;
    // Every repair is reported, whichever round of whichever pass made it
    // (`web` waits for `db` to be healthy, so a later round starts it; a
    // pass may start between two of the disturbances), and nothing else.
    let expected = BTreeSet::from(["run worker", "start web", "start db"].map(str::to_owned));
    let repairs =
        || async { w.drift_repairs(id).await.into_iter().skip(reported).flatten().collect::<BTreeSet<String>>() };
    wait_until("every repair reported", Duration::from_secs(10), || async { repairs().await == expected }).await;
    assert_eq!(repairs().await, expected, "exactly what was disturbed is reported");

    // A pass over a converged Playground changes nothing, reports nothing.
    let reported = w.drift_repairs(id).await.len();
    handle.wake(id);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(ids(&host.containers(id)), ids(&after));
    assert_eq!(w.drift_repairs(id).await.len(), reported);
    scenario
}

/// Rollout: a change to `web`'s variables replaces `web`'s container only;
/// `db` and `worker` keep running as they were, with the same Compose
/// config hash, and `db`'s volume keeps its data.
pub async fn shared_rollout(w: &World) -> Scenario {
    let host = w.host();
    let scenario = converged(w, "rollout").await;
    let id = scenario.id;
    let (db, web, worker) = (scenario.container("db"), scenario.container("web"), scenario.container("worker"));
    host.touch(&db, "/data/marker");
    let before = host.containers(id);

    w.rollout_web_and_converge(id).await;

    let after = host.containers(id);
    assert_eq!(after.keys().cloned().collect::<Vec<_>>(), scenario.expected(), "one container per service");
    let hash = |c: &Seen| c.labels.get("com.docker.compose.config-hash").cloned();
    for kept in [&db, &worker] {
        assert_eq!(after[kept].id, before[kept].id, "{kept} did not change and keeps running");
        assert!(after[kept].running, "{kept} runs");
        assert_eq!(hash(&after[kept]), hash(&before[kept]), "{kept}");
    }
    assert_ne!(after[&web].id, before[&web].id, "web was replaced");
    assert!(after[&web].running, "the new web runs");
    assert!(after[&web].env.contains(&"MODE=b".to_owned()), "{:?}", after[&web].env);
    assert_ne!(hash(&after[&web]), hash(&before[&web]));
    assert!(host.exists(&db, "/data/marker"), "a rollout keeps volumes");
    let events = w.event_types().await;
    assert!(events.iter().any(|e| e == "playground.updated"), "{events:?}");
    scenario
}

/// Destroy: once the Playground is deleted, no container, network or
/// volume labelled for it or named for its project is left, the row goes,
/// and its life is in the events. Answers the destroyed Playground's id
/// and project.
pub async fn shared_destroy(w: &World) -> (i64, String) {
    let host = w.host();
    let Scenario { id, project, running } = converged(w, "gone").await;
    assert_eq!(host.containers(id).len(), 3);

    let r = w.app.delete(&format!("/api/playgrounds/{id}"), &w.app.admin).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    running.handle.wake(id);
    w.wait_for(id, "the row removed", |status, _| status == StatusCode::NOT_FOUND).await;

    assert_eq!(host.containers(id).keys().collect::<Vec<_>>(), Vec::<&String>::new());
    assert_eq!(host.networks(id), Vec::<String>::new(), "a labelled network is left");
    assert_eq!(host.volumes(id), Vec::<String>::new(), "a labelled volume is left");
    assert_eq!(host.named_for(&project), Vec::<String>::new(), "objects named for the project are left");
    let events = w.event_types().await;
    for expected in ["playground.created", "playground.status.changed", "playground.destroyed"] {
        assert!(events.iter().any(|e| e == expected), "{expected} missing from {events:?}");
    }
    (id, project)
}

/// A Playground of [`COMPOSE`] named `name`, with a variable of its own:
/// (id, Compose project).
async fn playground(w: &World, name: &str) -> (i64, String) {
    let spec = w.playspec(name, COMPOSE).await;
    let pg = w.playground(name, spec, json!({"env_overrides": {"GREETING": "hi"}})).await;
    (pg["id"].as_i64().expect("id"), pg["compose_project"].as_str().expect("project").to_owned())
}

/// A Playground of [`COMPOSE`] converged under a runtime.
async fn converged(w: &World, name: &str) -> Scenario {
    let (id, project) = playground(w, name).await;
    let running = w.runtime("replica-a", Duration::from_secs(2));
    running.handle.wake(id);
    w.wait_for(id, "running with every service healthy", running_healthy).await;
    Scenario { id, project, running }
}

/// The detail view shows the current generation running, every service
/// running and healthy (or without a healthcheck).
fn running_healthy(status: StatusCode, body: &Value) -> bool {
    status == StatusCode::OK
        && body["status"] == "running"
        && body["services"].as_array().is_some_and(|s| {
            s.len() == SERVICES.len()
                && s.iter().all(|s| s["running"] == true && (s["health"].is_null() || s["health"] == "healthy"))
        })
}

/// The containers' ids, sorted.
fn ids(containers: &BTreeMap<String, Seen>) -> Vec<String> {
    let mut ids: Vec<String> = containers.values().map(|c| c.id.clone()).collect();
    ids.sort();
    ids
}
