//! A Playroom over the harness's sshd with the API and a Playground
//! reconciler runtime around it: the set-up every Playground e2e test needs.
//! [`World::start_simulated`] makes the same world on a simulated host
//! (`play-simhost`, a local Playroom at its socket) instead.
//!
//! Each `World` has its own store, hence its own installation id; every
//! Docker object play makes for it carries `dev.play.installation=<that id>`,
//! and dropping the `World` removes exactly those objects (containers,
//! networks, volumes, images), never another test's or another
//! installation's.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use play_api::ApiConfig;
use play_api::testing::TestApp;
use play_core::metrics::Metrics;
use play_core::wake::ChannelWaker;
use play_model::edge::EdgeSettings;
use play_model::edge::settings::EdgeChanges;
use play_model::model::event::Acting;
use play_model::model::playroom::PlayroomFields;
use play_model::secrets::SecretBox;
use play_reconcilers::edge::EdgeConfig;
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use play_reconcilers::loops::Shared;
use play_reconcilers::playground::PlaygroundConfig;
use play_reconcilers::playzone::SyncConfig;
use play_reconcilers::runtime::{Backoff, Config, Handle, Reconciler, Runtime};
use play_store::Store;
use play_store::events;
use play_store::playrooms;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::host_view::{HostView, RealEngine, SimulatedEngine};
use super::simhost::SimHost;
use super::sshd::Sshd;

pub struct World {
    pub app: TestApp,
    pub gateway: DockerHostGateway,
    pub playroom: i64,
    pub installation: String,
    host: Host,
}

/// What the Playroom is: the machine's engine over the harness's sshd, or
/// a simulated engine on a socket of its own.
enum Host {
    Ssh(Sshd),
    Simulated(SimHost),
}

/// A running reconciler runtime; stopped on drop.
pub struct Running {
    pub handle: Handle,
    shutdown: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Running {
    /// Runs `runtime` on a task of its own.
    fn start<R: Reconciler>(runtime: Runtime<R>) -> Running {
        let handle = runtime.handle();
        let shutdown = CancellationToken::new();
        let task = Some(tokio::spawn(runtime.run(shutdown.clone())));
        Running { handle, shutdown, task }
    }

    /// Kills the runtime as a crash would: aborted wherever it is, its
    /// shutdown never signalled, so the leases it holds stay until they
    /// expire.
    pub async fn crash(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl World {
    /// A world with the default API configuration.
    pub async fn start() -> World {
        World::start_with(TestApp::default_config()).await
    }

    pub async fn start_with(config: ApiConfig) -> World {
        super::docker::ensure_busybox_image();
        let sshd = Sshd::start();
        let body = sshd.playroom_body("box");
        let (app, gateway, playroom) = World::playroom(config, body).await;
        let key = app.post(&format!("/api/playrooms/{playroom}/generate_ssh_key"), &app.admin, json!({})).await;
        let public = key.body["ssh_public_key"].as_str().expect("public key").to_owned();
        let authorized = sshd.dir().join("authorized_keys");
        let mut keys = std::fs::read_to_string(&authorized).expect("authorized_keys");
        keys.push_str(&format!("\n{public}\n"));
        std::fs::write(&authorized, keys).expect("write authorized_keys");
        World::connected(app, gateway, playroom, Host::Ssh(sshd)).await
    }

    /// A world whose Playroom is a simulated host: a local Playroom (as
    /// `PLAY_ALLOW_LOCAL_PLAYROOMS` allows) at the socket of a
    /// `play-simhost` engine that has the test image.
    pub async fn start_simulated() -> World {
        let sim = SimHost::start();
        let config = ApiConfig { allow_local_playrooms: true, ..TestApp::default_config() };
        let (app, gateway, playroom) = World::playroom(config, sim.playroom_body("sim")).await;
        World::connected(app, gateway, playroom, Host::Simulated(sim)).await
    }

    /// The API over a host gateway, and the Playroom `body` created in it.
    async fn playroom(config: ApiConfig, body: Value) -> (TestApp, DockerHostGateway, i64) {
        let gateway =
            DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(10)), Arc::new(Metrics::new()));
        let app = TestApp::with(config, Arc::new(gateway.clone())).await;
        let gateway = gateway.with_pins(app.store().clone());
        let r = app.post("/api/playrooms", &app.admin, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let playroom = r.body["id"].as_i64().expect("playroom id");
        (app, gateway, playroom)
    }

    /// Checks the connection and completes the world.
    async fn connected(app: TestApp, gateway: DockerHostGateway, playroom: i64, host: Host) -> World {
        let report = app.post(&format!("/api/playrooms/{playroom}/test_connection"), &app.admin, json!({})).await;
        assert_eq!(report.body["ok"], true, "{}", report.text);
        let installation = app.store().installation().await.expect("installation id");
        // As `play serve` wires it: the reconcilers report reachability.
        let gateway = gateway.reporting_reachability(app.store().clone());
        let world = World { app, gateway, playroom, installation, host };
        world.remove_host_objects();
        world
    }

    /// The harness's sshd the Playroom is reached over (panics for a
    /// simulated world).
    pub fn sshd(&mut self) -> &mut Sshd {
        match &mut self.host {
            Host::Ssh(sshd) => sshd,
            Host::Simulated(_) => panic!("a simulated world has no sshd"),
        }
    }

    /// The simulated engine (panics for a world on the real engine).
    pub fn sim(&self) -> &play_simhost::SimEngine {
        match &self.host {
            Host::Simulated(sim) => &sim.engine,
            Host::Ssh(_) => panic!("this world runs on the machine's engine, not a simulated one"),
        }
    }

    /// What the test sees of the Playroom's host, and how it changes the
    /// host behind play's back: the same questions on either kind of host.
    pub fn host(&self) -> Box<dyn HostView> {
        match &self.host {
            Host::Ssh(_) => Box::new(RealEngine::new(&self.installation)),
            Host::Simulated(sim) => Box::new(SimulatedEngine::new(Arc::clone(&sim.engine), &self.installation)),
        }
    }

    /// A Playspec named `name` with `compose`: its id.
    pub async fn playspec(&self, name: &str, compose: &str) -> i64 {
        self.playspec_with(name, compose, json!({})).await
    }

    /// A Playspec named `name` with `compose` and the extra create fields
    /// in `extra` (such as `playzones::built_from`'s): its id.
    pub async fn playspec_with(&self, name: &str, compose: &str, extra: Value) -> i64 {
        let body = super::with_fields(json!({"name": name, "base_compose_yaml": compose}), extra);
        let spec = self.app.post("/api/playspecs", &self.app.admin, json!({"playspec": body})).await;
        assert_eq!(spec.status, StatusCode::CREATED, "{}", spec.text);
        spec.body["id"].as_i64().expect("playspec id")
    }

    /// A Playground on `playspec` with the extra create fields in `extra`:
    /// its detail view.
    pub async fn playground(&self, name: &str, playspec: i64, extra: Value) -> Value {
        let body =
            super::with_fields(json!({"name": name, "playspec_id": playspec, "playroom_id": self.playroom}), extra);
        let r = self.app.post("/api/playgrounds", &self.app.admin, json!({"playground": body})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        r.body
    }

    /// A Playground `name` on `playspec` and the Playground reconciler
    /// started as `replica` (resync every `resync_every`), woken for it:
    /// (its id, its Compose project, the running runtime).
    pub async fn run_playground(
        &self,
        name: &str,
        playspec: i64,
        replica: &str,
        resync_every: Duration,
    ) -> (i64, String, Running) {
        let pg = self.playground(name, playspec, json!({})).await;
        let id = pg["id"].as_i64().expect("playground id");
        let running = self.runtime(replica, resync_every);
        running.handle.wake(id);
        (id, pg["compose_project"].as_str().expect("compose project").to_owned(), running)
    }

    /// Starts the Playground reconciler under a runtime as `replica`.
    pub fn runtime(&self, replica: &str, resync_every: Duration) -> Running {
        self.runtime_with(replica, resync_every, playground_config())
    }

    /// [`World::runtime`] with the Playground reconciler's own settings.
    pub fn runtime_with(&self, replica: &str, resync_every: Duration, playground: PlaygroundConfig) -> Running {
        let shared = shared(&self.app, &self.gateway);
        let config = runtime_config(resync_every, Duration::from_secs(3));
        Running::start(shared.runtime(shared.playgrounds(playground), config, replica))
    }

    /// Starts the Playground reconciler and the Playzone sync loop, both
    /// reaching repositories through `repositories` (as `play serve` wires
    /// them): services built from Playzones.
    pub fn runtimes_with_repositories(
        &self,
        repositories: Arc<dyn play_model::repository::RepositoryGateway>,
    ) -> (Running, Running) {
        self.runtimes_with_repositories_and(repositories, playground_config())
    }

    /// [`World::runtimes_with_repositories`] with the Playground
    /// reconciler's own settings.
    pub fn runtimes_with_repositories_and(
        &self,
        repositories: Arc<dyn play_model::repository::RepositoryGateway>,
        playground: PlaygroundConfig,
    ) -> (Running, Running) {
        let shared = Shared { repositories, ..shared(&self.app, &self.gateway) };
        let config = runtime_config(Duration::from_secs(5), Duration::from_secs(10));
        let playgrounds = shared.runtime(shared.playgrounds(playground), config.clone(), "local");
        let sync = shared.runtime(shared.playzone_sync(SyncConfig::default()), config, "local");
        (Running::start(playgrounds), Running::start(sync))
    }

    /// Starts the Playground reconciler and the schedule loop from one
    /// [`Shared`] (a run's launch wakes its Playground), as `replica`.
    pub fn runtimes_with_schedules(&self, replica: &str) -> (Running, Running) {
        let shared = shared(&self.app, &self.gateway);
        let config = runtime_config(Duration::from_secs(1), Duration::from_secs(10));
        let playgrounds = shared.runtime(shared.playgrounds(playground_config()), config.clone(), replica);
        let loop_config =
            play_reconcilers::schedule::ScheduleLoopConfig { poll: Duration::from_millis(500), ..Default::default() };
        let store = self.app.store().clone();
        let schedules = play_reconcilers::schedule::ScheduleLoop::new(
            store,
            self.app.state.secrets.clone(),
            Arc::new(shared.waker.clone()),
        )
        .with_config(loop_config);
        (Running::start(playgrounds), Running::start(shared.runtime(schedules, config, replica)))
    }

    /// Starts the Playground reconciler and the edge reconciler (with
    /// `edge`), wired as `play serve` wires them: a Playground pass that
    /// changes what runs wakes its Playroom's edge.
    pub fn runtimes_with_edge(&self, edge: EdgeConfig) -> (Running, Running) {
        self.runtimes_with_edge_and(edge, playground_config())
    }

    /// [`World::runtimes_with_edge`] with the Playground reconciler's own
    /// settings (a short drain, say).
    pub fn runtimes_with_edge_and(&self, edge: EdgeConfig, playground: PlaygroundConfig) -> (Running, Running) {
        let shared = shared(&self.app, &self.gateway);
        let config = runtime_config(Duration::from_secs(5), Duration::from_secs(3));
        let playgrounds = shared.runtime(shared.playgrounds(playground), config.clone(), "local");
        let edges = shared.runtime(shared.edges(edge), config, "local");
        (Running::start(playgrounds), Running::start(edges))
    }

    /// Sets the Playroom's edge settings (as an operator's update would).
    pub async fn set_edge(&self, edge: EdgeSettings) {
        let edge = EdgeChanges {
            enabled: Some(edge.enabled),
            http_port: Some(edge.http_port),
            https_port: Some(edge.https_port),
            tls: Some(edge.tls),
        };
        self.update_playroom(PlayroomFields { edge: Some(edge), ..Default::default() }).await;
    }

    /// Another account with a Playroom of its own on this world's host (the
    /// same engine), its edge on `edge`'s ports: the account's key (every
    /// tenant scope) and the Playroom's id. Real hosts only.
    pub async fn other_account_on_this_host(&self, name: &str, edge: EdgeSettings) -> (String, i64) {
        let Host::Ssh(sshd) = &self.host else { panic!("a simulated host has no second account") };
        let account = self.app.new_account(name).await;
        let key = self.app.key_for(account, play_model::scopes::ScopeSet::all(), None).await;
        let mut body = sshd.playroom_body(name);
        body["playroom"]["edge"] =
            json!({"enabled": edge.enabled, "http_port": edge.http_port, "https_port": edge.https_port});
        let r = self.app.post("/api/playrooms", &key, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let playroom = r.body["id"].as_i64().expect("playroom id");
        let report = self.app.post(&format!("/api/playrooms/{playroom}/test_connection"), &key, json!({})).await;
        assert_eq!(report.body["ok"], true, "{}", report.text);
        (key, playroom)
    }

    /// Updates the Playroom (as an operator's update would).
    pub async fn update_playroom(&self, fields: PlayroomFields) {
        playrooms::update(
            self.app.store(),
            &self.app.state.secrets,
            Acting::system(self.app.account_id),
            self.playroom,
            fields,
        )
        .await
        .expect("update the Playroom");
    }

    /// The edge container's name (`play-<installation>-edge-<playroom>`).
    pub fn edge_container(&self) -> String {
        format!("play-{}-edge-{}", &self.installation[..6], self.playroom)
    }

    /// Creates the Playroom's edge network before play does, as an
    /// operator may (play finds it by name): what must join it before the
    /// edge exists can. Answers its name.
    pub fn create_edge_network(&self) -> String {
        let name = play_model::desired::edge_network_name(&self.installation, self.playroom);
        super::run(Command::new("docker").args(["network", "create", "--label"]).args([
            &format!("dev.play.installation={}", self.installation),
            "--label",
            "dev.play.edge=true",
            &name,
        ]));
        name
    }

    /// The detail view (status, body).
    pub async fn detail(&self, id: i64) -> (StatusCode, Value) {
        let r = self.app.get(&format!("/api/playgrounds/{id}"), &self.app.admin).await;
        (r.status, r.body)
    }

    /// Polls the detail view until `ok`; panics after 90 s with the last
    /// view and the status view.
    pub async fn wait_for(&self, id: i64, what: &str, ok: impl Fn(StatusCode, &Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let (status, body) = self.detail(id).await;
            if ok(status, &body) {
                return body;
            }
            if Instant::now() >= deadline {
                let detail = self.app.get(&format!("/api/playgrounds/{id}/status"), &self.app.admin).await;
                panic!("timed out waiting for {what}; last: {status} {body:#}\nstatus: {}", detail.text);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Rolls out web with `MODE=b` (the rollout the scenarios share),
    /// requires generation 2 and waits until it has converged.
    pub async fn rollout_web_and_converge(&self, id: i64) {
        let r = self
            .app
            .request(
                axum::http::Method::POST,
                &format!("/api/playgrounds/{id}/rollout"),
                Some(&self.app.admin),
                Some(json!({"playground": {"services": {"web": {"env_vars": {"MODE": "b"}}}}})),
            )
            .await;
        assert_eq!(r.body["generation"], 2, "{}", r.text);
        self.wait_converged(id, "the rollout").await;
    }

    /// Waits until the Playground runs its current generation.
    pub async fn wait_converged(&self, id: i64, what: &str) -> Value {
        self.wait_for(id, what, |status, body| {
            status == StatusCode::OK && body["status"] == "running" && body["observed_generation"] == body["generation"]
        })
        .await
    }

    /// `entity.action` of every event of the account, oldest first.
    pub async fn event_types(&self) -> Vec<String> {
        events::list_for_account(self.app.store(), self.app.account_id)
            .await
            .expect("events")
            .iter()
            .map(|e| format!("{}.{}", e.entity_type, e.action))
            .collect()
    }

    /// The `repairs` of every `playground.drift.detected` of Playground
    /// `id`, oldest first.
    pub async fn drift_repairs(&self, id: i64) -> Vec<Vec<String>> {
        events::list_for_account(self.app.store(), self.app.account_id)
            .await
            .expect("events")
            .into_iter()
            .filter(|e| e.entity_type == "playground" && e.entity_id == id && e.action == "drift.detected")
            .map(|e| {
                let repairs = e.metadata.unwrap_or(Value::Null)["repairs"].clone();
                serde_json::from_value(repairs).expect("a drift event lists its repairs")
            })
            .collect()
    }

    /// The label filter matching everything play made for this world.
    pub fn installation_filter(&self) -> String {
        format!("label=dev.play.installation={}", self.installation)
    }

    /// Removes what play made for this world on the machine's engine (a
    /// simulated engine goes with the world).
    fn remove_host_objects(&self) {
        if !matches!(self.host, Host::Simulated(_)) {
            super::docker::remove_labelled(&format!("dev.play.installation={}", self.installation));
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.remove_host_objects();
    }
}

/// The Playground reconciler's settings in the tests: a short poll, and
/// the harness's registries (on loopback, as an operator's internal
/// registry would be) allowlisted, as `PLAY_REGISTRY_ALLOWLIST=127.0.0.1`.
pub fn playground_config() -> PlaygroundConfig {
    let allowlist = play_model::webhook::UrlPolicy::parse_allowlist("127.0.0.1").expect("an address");
    PlaygroundConfig {
        poll_interval: Duration::from_millis(500),
        registry_policy: play_model::webhook::UrlPolicy { allowlist, ..Default::default() },
        ..Default::default()
    }
}

/// What the loops share, as `play serve` builds it, over `app`'s store and
/// secrets and `gateway`; with a waker of its own (only the loops started
/// from it wake each other) and no repositories; its loops live by the
/// API's policy, as `play serve`'s do.
pub fn shared(app: &TestApp, gateway: &DockerHostGateway) -> Shared {
    Shared { life: app.state.config.life, ..shared_over(app.store(), &app.state.secrets, gateway) }
}

/// [`shared`] over a bare `store` and `secrets` (a test or bench with no
/// API in front).
pub fn shared_over(store: &Store, secrets: &SecretBox, gateway: &DockerHostGateway) -> Shared {
    let waker = ChannelWaker::new();
    // The store's commits wake these reconcilers, as `play serve` wires it
    // (unless the store already has a waker: a second set of loops on it).
    store.set_waker(Arc::new(waker.clone()));
    Shared {
        store: store.clone(),
        secrets: secrets.clone(),
        gateway: gateway.clone(),
        metrics: Arc::new(Metrics::new()),
        waker,
        webhook_urls: play_model::webhook::UrlPolicy::default(),
        repositories: Arc::new(play_model::repository::NoRepositories),
        life: play_model::playground::LifePolicy::default(),
    }
}

/// The runtime settings of the tests: resync every `resync_every`, leases
/// of `lease_duration`, quick retries.
fn runtime_config(resync_every: Duration, lease_duration: Duration) -> Config {
    Config {
        resync_every,
        lease_duration,
        lease_busy_retry: Duration::from_millis(500),
        backoff: Backoff { initial: Duration::from_millis(200), max: Duration::from_secs(2) },
        ..Config::default()
    }
}

/// Output lines of a `docker` command (panics when it fails).
pub fn docker_lines(args: &[&str]) -> Vec<String> {
    let out = super::run(Command::new("docker").args(args));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect()
}

/// `docker inspect --format <format> <name>`, trimmed.
pub fn inspect(name: &str, format: &str) -> String {
    docker_lines(&["inspect", "--format", format, name]).join("\n")
}
