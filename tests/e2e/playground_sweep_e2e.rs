//! The Playroom sweep and the Docker event wake-ups, on the harness's sshd
//! and the machine's Docker engine.
//!
//! Covered: a sweep pass removes the containers and networks labelled (with
//! this installation's id) for a Playground id that has no row, and keeps
//! their named volume, a live Playground's objects, a Playground being
//! destroyed (row still there), another installation's objects, an
//! installation-wide network and unlabelled objects. With the resync an hour
//! away, a container killed behind play's back is started again within
//! seconds through the Playroom's Docker event stream, also after the SSH
//! connection under the stream was cut; and a watcher's first connect wakes
//! every Playground of its Playroom, so a change made before the Playroom
//! was watched is observed at once.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::docker::{ensure_busybox_image, project_containers};
use crate::support::sshd::Sshd;
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_core::metrics::{Metrics, RemoteCallLabels};
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use play_reconcilers::loops::Shared;
use play_reconcilers::playground::{PlaygroundConfig, PlaygroundReconciler};
use play_reconcilers::playroom::events::{EventsConfig, PlaygroundEvents};
use play_reconcilers::playroom::sweep::PlayroomSweep;
use play_reconcilers::runtime::{Backoff, Config, Handle, Runtime};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const COMPOSE: &str = "services:\n  app:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n    \
                       volumes:\n      - data:/data\nvolumes:\n  data: {}\n";

/// Runtime settings for tests: the resync an hour away, so only wakes,
/// timers and triggers run passes after the start-up resync.
fn quiet() -> Config {
    Config {
        resync_every: Duration::from_secs(3600),
        lease_duration: Duration::from_secs(5),
        backoff: Backoff { initial: Duration::from_millis(200), max: Duration::from_secs(2) },
        ..Config::default()
    }
}

struct World {
    app: TestApp,
    gateway: DockerHostGateway,
    metrics: Arc<Metrics>,
    playroom: i64,
    installation: String,
    sshd: Sshd,
    shutdown: CancellationToken,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
    _cleanup: Cleanup,
}

async fn world() -> World {
    ensure_busybox_image();
    let sshd = Sshd::start();
    let metrics = Arc::new(Metrics::new());
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(10)), metrics.clone());
    let app = TestApp::with(TestApp::default_config(), Arc::new(gateway.clone())).await;
    let room = app.post("/api/playrooms", &app.admin, sshd.playroom_body("box")).await;
    assert_eq!(room.status, StatusCode::CREATED, "{}", room.text);
    let installation = app.store().installation().await.unwrap();
    World {
        playroom: room.body["id"].as_i64().unwrap(),
        _cleanup: Cleanup(vec![format!("dev.play.installation={installation}")]),
        installation,
        app,
        gateway,
        metrics,
        sshd,
        shutdown: CancellationToken::new(),
        tasks: std::sync::Mutex::new(Vec::new()),
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // Also on a failed assertion: stop passes before the clean-up runs.
        self.shutdown.cancel();
    }
}

impl World {
    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.tasks.lock().unwrap().push(tokio::spawn(task));
    }

    /// Stops every runtime and watcher and waits for them, so nothing
    /// recreates objects while the clean-up removes them.
    async fn finish(self) {
        self.shutdown.cancel();
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap());
        for task in tasks {
            task.await.unwrap();
        }
    }

    /// A Playspec and a Playground on it: (id, compose project).
    async fn playground(&self, name: &str) -> (i64, String) {
        let spec = self
            .app
            .post("/api/playspecs", &self.app.admin, json!({"playspec": {"name": name, "base_compose_yaml": COMPOSE}}))
            .await;
        assert_eq!(spec.status, StatusCode::CREATED, "{}", spec.text);
        let r = self
            .app
            .post(
                "/api/playgrounds",
                &self.app.admin,
                json!({"playground": {"name": name, "playspec_id": spec.body["id"], "playroom_id": self.playroom}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        (r.body["id"].as_i64().unwrap(), r.body["compose_project"].as_str().unwrap().to_owned())
    }

    /// The loops' shared handles, counting remote calls in this world's
    /// metrics.
    fn shared(&self) -> Shared {
        Shared { metrics: self.metrics.clone(), ..crate::support::world::shared(&self.app, &self.gateway) }
    }

    fn playground_reconciler(&self) -> PlaygroundReconciler {
        self.shared().playgrounds(PlaygroundConfig { poll_interval: Duration::from_millis(500), ..Default::default() })
    }

    fn runtime<R: play_reconcilers::runtime::Reconciler>(&self, reconciler: R) -> Runtime<R> {
        self.shared().runtime(reconciler, quiet(), "local")
    }

    /// Starts the Playground runtime (optionally woken by the Docker event
    /// stream); returns its handle and the token that stops it.
    fn start_playgrounds(&self, events: bool) -> (Handle, CancellationToken) {
        let stop = self.shutdown.child_token();
        let mut runtime = self.runtime(self.playground_reconciler());
        if events {
            runtime = runtime.trigger(self.events(&stop));
        }
        let handle = runtime.handle();
        self.spawn(runtime.run(stop.clone()));
        (handle, stop)
    }

    /// Starts the event watchers (the watch list refreshed every 200 ms)
    /// until `stop`: the Playground ids they wake.
    fn events(&self, stop: &CancellationToken) -> impl futures::Stream<Item = i64> + Send + 'static {
        let config = EventsConfig {
            refresh: Duration::from_millis(200),
            backoff: Backoff { initial: Duration::from_millis(100), max: Duration::from_millis(500) },
            ..EventsConfig::default()
        };
        let (ids, _watch, watchers) =
            PlaygroundEvents::new(self.app.store().clone(), self.app.state.secrets.clone(), self.gateway.clone())
                .with_config(config)
                .start(stop.clone());
        self.spawn(watchers);
        ids
    }

    async fn status(&self, id: i64) -> Value {
        self.app.get(&format!("/api/playgrounds/{id}"), &self.app.admin).await.body
    }

    async fn wait_running(&self, id: i64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let body = self.status(id).await;
            if body["status"] == "running" {
                return;
            }
            assert!(Instant::now() < deadline, "Playground {id} not running: {body:#}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Event streams this gateway has opened on the Playroom so far.
    fn event_streams_opened(&self) -> u64 {
        let labels = RemoteCallLabels {
            host: format!("playroom:{}", self.playroom),
            operation: "docker GET events".into(),
            outcome: "ok".into(),
        };
        self.metrics.remote_calls.get_or_create(&labels).get()
    }

    async fn wait_for_event_streams(&self, at_least: u64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.event_streams_opened() < at_least {
            assert!(Instant::now() < deadline, "no Docker event stream opened ({})", self.event_streams_opened());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Removes every container, network and volume with one of these labels.
struct Cleanup(Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for label in &self.0 {
            crate::support::docker::remove_labelled(label);
            let volumes = docker_lines(&["volume", "ls", "-q", "--filter", &format!("label={label}")]);
            if !volumes.is_empty() {
                let _ = Command::new("docker").args(["volume", "rm", "-f"]).args(&volumes).output();
            }
        }
    }
}

fn docker_lines(args: &[&str]) -> Vec<String> {
    let out = Command::new("docker").args(args).output().expect("run docker");
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect()
}

fn docker(args: &[&str]) -> String {
    let out = crate::support::run(Command::new("docker").args(args));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `--label` arguments for each `key=value`.
fn labels<'a>(pairs: &[&'a str]) -> Vec<&'a str> {
    pairs.iter().flat_map(|p| ["--label", *p]).collect()
}

/// `docker network|volume create` with labels.
fn create(kind: &str, name: &str, with: &[&str]) {
    docker(&[&[kind, "create"][..], &labels(with), &[name]].concat());
}

/// A sleeping busybox container on `network`, with labels.
fn run_container(name: &str, network: &str, with: &[&str]) {
    let head = ["run", "-d", "--name", name, "--network", network];
    docker(&[&head[..], &labels(with), &["play-test/busybox:1", "sleep", "3600"]].concat());
}

fn exists(kind: &str, name: &str) -> bool {
    Command::new("docker").args([kind, "inspect", name]).output().is_ok_and(|o| o.status.success())
}

fn running(container: &str) -> bool {
    docker_lines(&["inspect", "--format", "{{.State.Running}}", container]) == ["true"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_removes_objects_of_playgrounds_without_a_row_and_nothing_else() {
    let w = world().await;
    let mark = crate::support::unique_label("sweep");
    let test_label = format!("play-test.sweep={mark}");
    let _cleanup = Cleanup(vec![test_label.clone()]);

    // Two real Playgrounds: one stays, one is being destroyed (its row is
    // still there because no pass has run since the DELETE).
    let (live, live_project) = w.playground("live").await;
    let (leaving, leaving_project) = w.playground("leaving").await;
    let (handle, stop_playgrounds) = w.start_playgrounds(false);
    handle.wake(live);
    handle.wake(leaving);
    w.wait_running(live).await;
    w.wait_running(leaving).await;
    stop_playgrounds.cancel();
    let r = w.app.delete(&format!("/api/playgrounds/{leaving}"), &w.app.admin).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);

    // Objects for a Playground id that never had a row here: a container
    // on its network (so the network can only go after it) and a volume.
    let ours = format!("dev.play.installation={}", w.installation);
    let orphan = format!("dev.play.playground={}", live + 1000);
    let name = |what: &str| format!("{mark}-{what}");
    let orphan_labels = [test_label.as_str(), &ours, &orphan];
    create("network", &name("orphan-net"), &orphan_labels);
    run_container(&name("orphan"), &name("orphan-net"), &orphan_labels);
    create("volume", &name("orphan-vol"), &orphan_labels);
    // The same Playground id under another installation's id.
    let other_labels = [test_label.as_str(), "dev.play.installation=someone-else", &orphan];
    create("network", &name("other-net"), &other_labels);
    run_container(&name("other"), &name("other-net"), &other_labels);
    // An installation-wide network (an edge network) and a container
    // without play's labels.
    create("network", &name("edge"), &[test_label.as_str(), &ours]);
    run_container(&name("plain"), "bridge", &[test_label.as_str()]);

    // Issue #27, item 12: the edge of a Playroom that has no row any more
    // (a container a crash left `Created`, and its data volume), beside
    // the edge of the live Playroom and another installation's edge of
    // the same id.
    let gone_edge = format!("dev.play.edge-playroom={}", w.playroom + 1000);
    let live_edge = format!("dev.play.edge-playroom={}", w.playroom);
    let gone_edge_labels = [test_label.as_str(), &ours, &gone_edge];
    docker(
        &[&["create", "--name", &name("gone-edge")][..], &labels(&gone_edge_labels), &["play-test/busybox:1"]].concat(),
    );
    create("volume", &name("gone-edge-data"), &gone_edge_labels);
    create("volume", &name("live-edge-data"), &[test_label.as_str(), &ours, &live_edge]);
    create(
        "volume",
        &name("other-edge-data"),
        &[test_label.as_str(), "dev.play.installation=someone-else", &gone_edge],
    );

    let live_before = project_containers(&live_project);
    let leaving_before = project_containers(&leaving_project);
    assert_eq!(live_before.len(), 1);
    assert_eq!(leaving_before.len(), 1);

    // The sweep's start-up resync sweeps the Playroom at once.
    let sweep = PlayroomSweep::new(w.app.store().clone(), w.app.state.secrets.clone(), w.gateway.clone());
    w.spawn(w.runtime(sweep).run(w.shutdown.child_token()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while exists("container", &name("orphan")) || exists("network", &name("orphan-net")) {
        assert!(Instant::now() < deadline, "the orphaned container and network are still there");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    while exists("container", &name("gone-edge")) || exists("volume", &name("gone-edge-data")) {
        assert!(Instant::now() < deadline, "the edge of a Playroom without a row is still there");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(exists("volume", &name("live-edge-data")), "the live Playroom's edge was touched");
    assert!(exists("volume", &name("other-edge-data")), "another installation's edge was touched");

    assert!(exists("volume", &name("orphan-vol")), "named volumes are never swept");
    assert!(running(&name("other")), "another installation's container was touched");
    assert!(exists("network", &name("other-net")));
    assert!(exists("network", &name("edge")), "an object without a Playground label was touched");
    assert!(running(&name("plain")), "an unlabelled container was touched");
    assert_eq!(project_containers(&live_project), live_before);
    assert!(running(&live_before[0]), "the live Playground's container was touched");
    assert_eq!(project_containers(&leaving_project), leaving_before, "a Playground being destroyed was swept");
    assert!(exists("volume", &format!("{live_project}_data")));
    assert!(exists("network", &format!("{leaving_project}_default")));
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_container_is_started_again_through_the_docker_event_stream() {
    let mut w = world().await;
    let (id, project) = w.playground("evented").await;
    let (handle, _stop) = w.start_playgrounds(true);
    handle.wake(id);
    w.wait_running(id).await;
    let container = format!("{project}-app-1");
    let container_id = docker(&["inspect", "--format", "{{.Id}}", &container]);
    w.wait_for_event_streams(1).await;

    // Nothing but an event can run a pass now: the resync is an hour away
    // and the converged pass asked for its next run at expires_at (8 h).
    let repaired_within = |what: &'static str| {
        let container = container.clone();
        async move {
            docker(&["kill", &container]);
            let killed = Instant::now();
            while !running(&container) {
                assert!(
                    killed.elapsed() < Duration::from_secs(15),
                    "{what}: the killed container was not started again"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            killed.elapsed()
        }
    };
    let took = repaired_within("first kill").await;
    assert_eq!(docker(&["inspect", "--format", "{{.Id}}", &container]), container_id, "started again, not recreated");
    eprintln!("started again {took:?} after docker kill");

    // Cut the SSH connection under the stream: the watcher reconnects.
    let opened = w.event_streams_opened();
    w.sshd.restart();
    w.wait_for_event_streams(opened + 1).await;
    w.wait_running(id).await;
    let took = repaired_within("after the SSH connection was cut").await;
    eprintln!("started again {took:?} after docker kill, on a reconnected stream");
    assert_eq!(project_containers(&project), [container]);
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchers_first_connect_wakes_every_playground_of_its_playroom() {
    let w = world().await;
    let (id, project) = w.playground("early").await;
    let (handle, stop_playgrounds) = w.start_playgrounds(false);
    handle.wake(id);
    w.wait_running(id).await;
    stop_playgrounds.cancel();

    // Killed while no watcher follows the Playroom: no event stream will
    // ever report it, so only a full observe can find it.
    let container = format!("{project}-app-1");
    docker(&["kill", &container]);
    let stop = w.shutdown.child_token();
    let mut ids = std::pin::pin!(w.events(&stop));
    // The watcher's first connect, with no Docker event since, wakes the
    // Playground (the pass it starts is that full observe).
    let woken = tokio::time::timeout(Duration::from_secs(30), futures::StreamExt::next(&mut ids)).await;
    assert_eq!(woken.ok().flatten(), Some(id), "the first connect woke nothing");
    stop.cancel();
    w.finish().await;
}
