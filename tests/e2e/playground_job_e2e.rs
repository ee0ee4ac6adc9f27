//! Job-mode Playgrounds on a real host (the harness's sshd, the machine's
//! Docker engine), under the reconcile runtime.
//!
//! Covered: a job whose watched service prints two lines and exits 3 next
//! to a long-running service that is not watched becomes `complete` with
//! `playground.completed`; `job_result` has exit code 3 and the lines;
//! `/logs/<service>` answers from the cache; nothing of it is left on the
//! host; its Playspec is unlocked; DELETE removes the row even with the host
//! unreachable. A job that exits 0 (every service watched) completes with
//! exit code 0, and its row goes when the retention period ends. A
//! completion recorded just before a crash (containers still on the host)
//! is cleaned up by the next process without being recomputed.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_core::metrics::Metrics;
use std::collections::BTreeMap;

use crate::support::docker::{ensure_busybox_image, project_containers};
use crate::support::sshd::Sshd;
use play_model::playground::job::Completion;
use play_model::time;
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use play_reconcilers::playground::PlaygroundConfig;
use play_reconcilers::runtime::{Backoff, Config};
use play_store::job_results;
use play_store::playground_status::Fence;
use play_store::{events, leases};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

/// `run` and `check` are watched; `run` fails at once, `check` ends two
/// seconds later (so `run` would have been restarted meanwhile, were exited
/// watched services repaired); `db` runs on, with a volume, until the job
/// ends.
const JOB: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    volumes:
      - data:/data
  run:
    image: play-test/busybox:1
    command: sh -c 'echo hello; echo world; exit 3'
    depends_on: [db]
  check:
    image: play-test/busybox:1
    command: sh -c 'sleep 2; echo checked'
volumes:
  data: {}
"#;

struct World {
    app: TestApp,
    sshd: Sshd,
    gateway: DockerHostGateway,
    playroom: i64,
    retention: Duration,
    /// Stops every runtime when the world is dropped.
    shutdown: DropGuard,
}

/// An API and a Playroom over the harness's sshd; completed jobs are kept
/// for `retention`.
async fn world(retention: Duration) -> World {
    ensure_busybox_image();
    let sshd = Sshd::start();
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(5)), Arc::new(Metrics::new()));
    let app = TestApp::with(TestApp::default_config(), Arc::new(gateway.clone())).await;
    let room = app.post("/api/playrooms", &app.admin, sshd.playroom_body("box")).await;
    assert_eq!(room.status, StatusCode::CREATED, "{}", room.text);
    let playroom = room.body["id"].as_i64().unwrap();
    World { app, sshd, gateway, playroom, retention, shutdown: CancellationToken::new().drop_guard() }
}

impl World {
    /// Starts a Playground reconciler runtime (replica `local`, as a
    /// restarted single-replica `play serve`); cancel the token to stop it.
    fn runtime(&self) -> (CancellationToken, JoinHandle<()>) {
        let config = PlaygroundConfig {
            poll_interval: Duration::from_millis(300),
            job_poll_interval: Duration::from_millis(300),
            job_retention: self.retention,
            ..PlaygroundConfig::default()
        };
        let shared = crate::support::world::shared(&self.app, &self.gateway);
        let runtime = Config {
            resync_every: Duration::from_millis(500),
            backoff: Backoff { initial: Duration::from_millis(200), max: Duration::from_secs(1) },
            ..Config::default()
        };
        let runtime = shared.runtime(shared.playgrounds(config), runtime, "local");
        let stop = self.shutdown.token().child_token();
        (stop.clone(), tokio::spawn(runtime.run(stop)))
    }

    /// A Playspec and a job-mode Playground on it: (id, compose project,
    /// Playspec id).
    async fn job(&self, name: &str, compose: &str, watched: &[&str]) -> (i64, String, i64) {
        let spec = self
            .app
            .post("/api/playspecs", &self.app.admin, json!({"playspec": {"name": name, "base_compose_yaml": compose}}))
            .await;
        assert_eq!(spec.status, StatusCode::CREATED, "{}", spec.text);
        let body = json!({"playground": {"name": name, "playspec_id": spec.body["id"], "playroom_id": self.playroom,
                                         "job_mode": true, "watched_services": watched}});
        let r = self.app.post("/api/playgrounds", &self.app.admin, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let project = r.body["compose_project"].as_str().unwrap().to_owned();
        (r.body["id"].as_i64().unwrap(), project, spec.body["id"].as_i64().unwrap())
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let r = self.app.get(path, &self.app.admin).await;
        (r.status, r.body)
    }

    async fn wait_for(&self, id: i64, what: &str, ok: impl Fn(StatusCode, &Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let (status, body) = self.get(&format!("/api/playgrounds/{id}")).await;
            if ok(status, &body) {
                return body;
            }
            if Instant::now() >= deadline {
                let (_, detail) = self.get(&format!("/api/playgrounds/{id}/status")).await;
                panic!("timed out waiting for {what}; last: {status} {body:#}\nstatus: {detail:#}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn event_types(&self) -> Vec<String> {
        let all = events::list_for_account(self.app.store(), self.app.account_id).await.unwrap();
        all.iter().filter(|e| e.entity_type == "playground").map(|e| format!("playground.{}", e.action)).collect()
    }
}

fn docker_lines(args: &[&str]) -> Vec<String> {
    let out = crate::support::run(Command::new("docker").args(args));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect()
}

/// Networks and volumes of a project (by label, and volumes by name too).
fn networks_and_volumes(project: &str) -> Vec<String> {
    let filter = format!("label=com.docker.compose.project={project}");
    let mut all = docker_lines(&["network", "ls", "-q", "--filter", &filter]);
    all.extend(docker_lines(&["volume", "ls", "-q", "--filter", &filter]));
    all.extend(docker_lines(&["volume", "ls", "-q", "--filter", &format!("name={project}_")]));
    all
}

/// Removes whatever a failed run left of a project.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        crate::support::docker::remove_labelled(&format!("com.docker.compose.project={}", self.0));
        let volumes = docker_lines(&["volume", "ls", "-q", "--filter", &format!("name={}_", self.0)]);
        if !volumes.is_empty() {
            let _ = Command::new("docker").args(["volume", "rm", "-f"]).args(&volumes).output();
        }
    }
}

fn lines(body: &Value) -> Vec<&str> {
    body["lines"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_job_completes_keeps_its_result_and_logs_and_leaves_nothing_on_the_host() {
    let mut w = world(Duration::from_secs(3600)).await;
    let _runtime = w.runtime();
    let (id, project, playspec) = w.job("job", JOB, &["run", "check"]).await;
    let _cleanup = Cleanup(project.clone());

    let (status, body) = w.get(&format!("/api/playgrounds/{id}/job_result")).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("INVALID_STATE")));
    // Complete, and (observed_generation catching up) the host released.
    let body = w
        .wait_for(id, "complete with the host released", |_, b| {
            b["status"] == "complete" && b["observed_generation"] == b["generation"]
        })
        .await;
    assert!(body["services"].as_array().unwrap().iter().all(|s| s["running"] == false), "{body:#}");

    let (status, result) = w.get(&format!("/api/playgrounds/{id}/job_result")).await;
    assert_eq!(status, StatusCode::OK, "{result:#}");
    assert_eq!(result["exit_code"], 3, "{result:#}");
    assert_eq!(result["tail_logs"], "run | hello\nrun | world\ncheck | checked", "{result:#}");
    assert!(result["completed_at"].is_string());

    // Logs come from the cache: the containers are gone.
    let (status, logs) = w.get(&format!("/api/playgrounds/{id}/logs/run?tail=1000")).await;
    assert_eq!((status, logs["source"].as_str()), (StatusCode::OK, Some("cached")), "{logs:#}");
    assert_eq!(lines(&logs), ["hello", "world"], "run ran once");
    let (_, logs) = w.get(&format!("/api/playgrounds/{id}/logs/run?tail=1")).await;
    assert_eq!(lines(&logs), ["world"]);
    let (_, logs) = w.get(&format!("/api/playgrounds/{id}/logs/db")).await;
    assert_eq!((logs["source"].as_str(), lines(&logs).len()), (Some("cached"), 0), "{logs:#}");

    assert_eq!(project_containers(&project), Vec::<String>::new());
    assert_eq!(networks_and_volumes(&project), Vec::<String>::new());
    let events = w.event_types().await;
    assert!(events.contains(&"playground.completed".to_owned()), "{events:?}");
    assert!(!events.contains(&"playground.destroyed".to_owned()), "the row stays: {events:?}");
    let (_, spec) = w.get(&format!("/api/playspecs/{playspec}")).await;
    assert_eq!(spec["locked"], false, "a finished job holds nothing: {spec:#}");

    // A few more passes change nothing and need no host.
    w.sshd.stop();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (_, again) = w.get(&format!("/api/playgrounds/{id}")).await;
    assert_eq!(
        (again["status"].as_str(), again["generation"].as_i64()),
        (Some("complete"), body["generation"].as_i64())
    );
    let (_, status) = w.get(&format!("/api/playgrounds/{id}/status")).await;
    assert_eq!(status["error_message"], Value::Null, "{status:#}");

    // DELETE removes the row although the host is unreachable.
    let r = w.app.delete(&format!("/api/playgrounds/{id}"), &w.app.admin).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    w.wait_for(id, "the row to be deleted", |status, _| status == StatusCode::NOT_FOUND).await;
    let (status, _) = w.get(&format!("/api/playgrounds/{id}/job_result")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(w.event_types().await.contains(&"playground.destroyed".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_exits_zero_completes_and_goes_when_its_retention_ends() {
    let w = world(Duration::from_secs(4)).await;
    let _runtime = w.runtime();
    let compose = "services:\n  run:\n    image: play-test/busybox:1\n    command: sh -c 'echo done'\n";
    let (id, project, _) = w.job("ok", compose, &[]).await;
    let _cleanup = Cleanup(project.clone());

    w.wait_for(id, "complete", |_, b| b["status"] == "complete").await;
    let (status, result) = w.get(&format!("/api/playgrounds/{id}/job_result")).await;
    assert_eq!(status, StatusCode::OK, "{result:#}");
    assert_eq!((result["exit_code"].as_i64(), result["tail_logs"].as_str()), (Some(0), Some("done")), "{result:#}");
    let (_, detail) = w.get(&format!("/api/playgrounds/{id}")).await;
    let remaining = detail["time_remaining"].as_f64().unwrap();
    assert!(remaining <= 4.0, "expires_at is the retention end: {detail:#}");

    w.wait_for(id, "the row to go at the end of its retention", |status, _| status == StatusCode::NOT_FOUND).await;
    assert_eq!(project_containers(&project), Vec::<String>::new());
    assert_eq!(networks_and_volumes(&project), Vec::<String>::new());
    let events = w.event_types().await;
    for expected in ["playground.completed", "playground.expired", "playground.destroyed"] {
        assert!(events.iter().any(|e| e == expected), "{expected} missing from {events:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_recorded_before_a_crash_is_cleaned_up_without_being_recomputed() {
    let w = world(Duration::from_secs(3600)).await;
    let compose = "services:\n  run:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n";
    let (id, project, _) = w.job("crash", compose, &[]).await;
    let _cleanup = Cleanup(project.clone());
    let (stop, task) = w.runtime();
    w.wait_for(id, "running", |_, b| b["status"] == "running").await;
    stop.cancel();
    task.await.unwrap();

    // The process "died" right after committing the completion: the result
    // is in the store, the container still on the host (and still running:
    // a recomputed result would differ from this one).
    let store = w.app.store();
    let lease = leases::claim(store, "playground", id, "local", time::now(), Duration::from_secs(60)).await.unwrap();
    // Not released: the process died holding it; a restarted single
    // replica (same id) claims it back at once.
    let fence = Fence { reconciler: "playground", owner: "local", token: lease.unwrap().token };
    let logs = BTreeMap::from([("run".to_owned(), vec!["from the record".to_owned()])]);
    let watched = BTreeMap::from([("run".to_owned(), 42)]);
    let done = Completion {
        exit_code: 42,
        completed_at: time::now(),
        tail_logs: "recorded before the crash",
        watched: &watched,
        logs: &logs,
        services: &[],
        keep_until: time::now() + chrono::Duration::hours(1),
    };
    assert!(job_results::record_completion(store, fence, id, &done).await.unwrap().is_held());
    assert_eq!(project_containers(&project).len(), 1);

    let _runtime = w.runtime();
    w.wait_for(id, "the host released", |_, b| {
        b["status"] == "complete" && b["observed_generation"] == b["generation"]
    })
    .await;
    assert_eq!(project_containers(&project), Vec::<String>::new());
    assert_eq!(networks_and_volumes(&project), Vec::<String>::new());
    let (_, result) = w.get(&format!("/api/playgrounds/{id}/job_result")).await;
    assert_eq!(
        (result["exit_code"].as_i64(), result["tail_logs"].as_str()),
        (Some(42), Some("recorded before the crash"))
    );
    let (_, logs) = w.get(&format!("/api/playgrounds/{id}/logs/run")).await;
    assert_eq!(lines(&logs), ["from the record"]);
    let completed = w.event_types().await.iter().filter(|e| *e == "playground.completed").count();
    assert_eq!(completed, 1);
}
