//! The one way an end-to-end test runs the real `play` binary as a server.
//!
//! A [`Play`] is one installation as an operator would set it up: a data
//! directory, a database (a fresh one on the backend `PLAY_TEST_BACKEND`
//! selects, or SQLite inside the data directory), a client contexts
//! directory (`XDG_CONFIG_HOME`) and a port of its own from
//! [`super::free_port`]. [`Play::serve`] starts `play serve` on it and
//! returns once `/healthz` answers; starting it again (after a kill) reuses
//! the same data, database and port, as a restarted process would.
//!
//! Guarantees, so that no test has to repeat them:
//! - a [`Server`] is killed (SIGKILL) and reaped when dropped, so a failing
//!   assertion leaves no process behind; when the test is panicking, the
//!   tail of the server's log (`<data dir>/serve.log`) is printed first;
//! - dropping the [`Play`] removes every Docker object (containers,
//!   networks, volumes, images) labelled `dev.play.installation=<its id>`:
//!   exactly what this installation made, never another test's. The id is
//!   read from the database when a server is first seen healthy; an
//!   installation never seen healthy made nothing to remove;
//! - the client commands run by [`Play::command`] see none of the caller's
//!   client settings (`PLAY_URL`, `PLAY_TOKEN`, `PLAY_CONTEXT`);
//! - the edge's admin sockets are made under the data directory
//!   (`PLAY_EDGE_ADMIN_DIR`), never in the machine-wide default another
//!   test or a real installation may use.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a started `play serve` may take to answer `/healthz`.
const HEALTHY_WITHIN: Duration = Duration::from_secs(60);

/// Runs `play <args>` to completion with no installation and none of the
/// caller's `PLAY_*` variables, stdin closed: for what the binary prints
/// whatever the machine's settings are (`--help` shows each variable's
/// value beside its name).
pub fn run_alone(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_play"));
    for (key, _) in std::env::vars_os().filter(|(key, _)| key.to_string_lossy().starts_with("PLAY_")) {
        cmd.env_remove(key);
    }
    cmd.args(args).stdin(Stdio::null()).output().expect("run play")
}

/// One installation of `play`: see the module documentation.
pub struct Play {
    data_dir: tempfile::TempDir,
    config_home: tempfile::TempDir,
    database_url: String,
    /// The database lives in the data directory (no `PLAY_DATABASE_URL`:
    /// the binary's own default).
    in_data_dir: bool,
    /// Keeps a fresh SQLite database's directory alive; shared with the
    /// replicas made from this installation.
    database_dir: Arc<Option<tempfile::TempDir>>,
    port: u16,
    env: Vec<(OsString, OsString)>,
    args: Vec<String>,
    installation: OnceLock<String>,
}

impl Play {
    /// An installation on a fresh database of the test backend.
    pub async fn new() -> Play {
        let (database_url, dir) = play_store::testing::fresh_database_url().await;
        Play::with_database(database_url, Arc::new(dir), false)
    }

    /// An installation whose database is the binary's default: SQLite in
    /// the data directory (`<data dir>/play.db`), so everything it stores
    /// is under [`Play::data_dir`].
    pub fn with_database_in_data_dir() -> Play {
        let mut play = Play::with_database(String::new(), Arc::new(None), true);
        play.database_url = format!("sqlite://{}", play.path("play.db").display());
        play
    }

    fn with_database(database_url: String, database_dir: Arc<Option<tempfile::TempDir>>, in_data_dir: bool) -> Play {
        Play {
            data_dir: tempfile::tempdir().expect("data dir"),
            config_home: tempfile::tempdir().expect("config home"),
            database_url,
            in_data_dir,
            database_dir,
            port: super::free_port(),
            env: Vec::new(),
            args: Vec::new(),
            installation: OnceLock::new(),
        }
    }

    /// Another replica of this installation: the same database, master
    /// key file, settings and installation id; its own data directory
    /// and port, and `PLAY_REPLICA_ID=<id>`.
    pub fn replica(&self, id: &str) -> Play {
        let mut replica = Play::with_database(self.database_url.clone(), Arc::clone(&self.database_dir), false);
        replica.env.clone_from(&self.env);
        replica.args.clone_from(&self.args);
        replica.env("PLAY_MASTER_KEY_FILE", self.path("master.key")).env("PLAY_REPLICA_ID", id)
    }

    /// Sets an environment variable for every command of this
    /// installation (server and client).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Play {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Adds `play serve` arguments (after `--listen`).
    pub fn serve_args(mut self, args: &[&str]) -> Play {
        self.args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// The binary with this installation's data directory, database and
    /// contexts directory, and none of the caller's client settings.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_play"));
        cmd.env("PLAY_DATA_DIR", self.data_dir.path())
            .env("XDG_CONFIG_HOME", self.config_home.path())
            .env("PLAY_EDGE_ADMIN_DIR", self.path("edge"))
            .env("PLAY_LOG", "info")
            .env("NO_COLOR", "1");
        for key in ["PLAY_URL", "PLAY_TOKEN", "PLAY_CONTEXT", "PLAY_LISTEN"] {
            cmd.env_remove(key);
        }
        if self.in_data_dir {
            cmd.env_remove("PLAY_DATABASE_URL");
        } else {
            cmd.env("PLAY_DATABASE_URL", &self.database_url);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Runs `play <args>` to completion, stdin closed.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).stdin(Stdio::null()).output().expect("run play")
    }

    /// The client (`play <command>`) with `server` as its context through
    /// the environment, as a CI pipeline would run it.
    pub fn client(&self, server: &Server) -> Command {
        let mut cmd = self.command();
        cmd.env("PLAY_URL", &server.base).env("PLAY_TOKEN", &server.token);
        cmd
    }

    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// A file in the data directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.data_dir.path().join(name)
    }

    /// The client contexts file `play login` writes.
    pub fn config_file(&self) -> PathBuf {
        self.config_home.path().join("play").join("config.toml")
    }

    pub fn database_url(&self) -> &str {
        &self.database_url
    }

    /// `http://127.0.0.1:<this installation's port>`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `play serve` with this installation's settings, its output
    /// appended to `<data dir>/serve.log`.
    fn serve_command(&self) -> Command {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.path("serve.log")).expect("log");
        let mut cmd = self.command();
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{}", self.port)])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        cmd
    }

    /// Starts `play serve` and returns at once, before it answers: for a
    /// test that must act while it starts. [`Server::wait_healthy`] waits.
    pub fn spawn(&self) -> Server {
        let child = self.serve_command().spawn().expect("start play serve");
        Server { child, base: self.base(), token: String::new(), log: self.path("serve.log") }
    }

    /// Starts `play serve` and waits until `/healthz` answers: the server,
    /// with the admin token of the first start (empty for a replica that
    /// found one minted).
    pub async fn serve(&self) -> Server {
        let mut server = self.spawn();
        server.wait_healthy().await;
        server.token = std::fs::read_to_string(self.path("admin.token")).unwrap_or_default().trim().to_owned();
        if self.installation.get().is_none() {
            let store = play_store::Store::connect(&self.database_url).await.expect("connect to play's store");
            let _ = self.installation.set(store.installation().await.expect("installation id"));
            store.close().await;
        }
        server
    }

    /// Runs `play serve` to completion, stdout dropped: for a start that
    /// must be refused.
    pub fn serve_refused(&self) -> Output {
        let mut cmd = self.command();
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{}", self.port)]).args(&self.args);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).output().expect("run play serve")
    }

    /// This installation's id (`dev.play.installation` on its host
    /// objects), once a server of it was healthy.
    pub fn installation(&self) -> &str {
        self.installation.get().expect("no server of this installation was seen healthy")
    }
}

impl Drop for Play {
    fn drop(&mut self) {
        if let Some(installation) = self.installation.get() {
            super::docker::remove_labelled(&format!("dev.play.installation={installation}"));
        }
    }
}

/// A running `play serve`; killed (SIGKILL) and reaped when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The admin token (empty for a replica, or before it is known).
    pub token: String,
    log: PathBuf,
}

impl Server {
    /// Polls `/healthz` until it answers 200; panics with the log when the
    /// process exits first or does not answer within a minute.
    pub async fn wait_healthy(&mut self) {
        let client = reqwest::Client::new();
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll play serve") {
                panic!("play serve exited ({status}) before it answered; its log:\n{}", self.log());
            }
            let answer = client.get(format!("{}/healthz", self.base)).send().await;
            if answer.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            assert!(started.elapsed() < HEALTHY_WITHIN, "play serve not healthy within a minute:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// What the server has logged so far (every start of its installation).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `n` lines of [`Server::log`].
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Kills the process as a crash would (SIGKILL: nothing released).
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL play serve");
        self.child.wait().expect("reap play serve");
    }

    /// Sends SIGTERM: [`Server::wait_exit`] waits for the process to end.
    pub fn terminate(&self) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("run kill").success());
    }

    /// Waits up to `limit` for the process to exit: its status.
    pub async fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll play serve") {
                return status;
            }
            assert!(started.elapsed() < limit, "play serve did not exit within {limit:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `method path` with the admin token and a JSON `body`: (status, the
    /// body as JSON, or as a string when it is not JSON).
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request =
            reqwest::Client::new().request(method, format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request to play serve");
        let status = response.status().as_u16();
        let text = response.text().await.expect("answer of play serve");
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// `method path` that must succeed (2xx): the answer.
    pub async fn ok(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let (status, answer) = self.call(method, path, body).await;
        assert!((200..300).contains(&status), "{path}: {status} {answer}");
        answer
    }

    /// Polls `GET path` until it answers 200 with a body `done` accepts:
    /// that body, and how long it took. Panics with `what`, the last
    /// answer and the log's tail after 240 s.
    pub async fn wait_for(&self, what: &str, path: &str, done: impl Fn(&Value) -> bool) -> (Value, Duration) {
        let started = Instant::now();
        loop {
            let (status, body) = self.get(path).await;
            if status == 200 && done(&body) {
                return (body, started.elapsed());
            }
            assert!(started.elapsed() < Duration::from_secs(240), "{what}: {status} {body:#}\n{}", self.log_tail(60));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `POST path` that must answer 201 Created: the created object.
    pub async fn create(&self, path: &str, body: Value) -> Value {
        let (status, answer) = self.post(path, body).await;
        assert_eq!(status, 201, "POST {path}: {answer}");
        answer
    }

    /// A template `name` (in category 1) whose one version is `body`: its id.
    pub async fn template(&self, name: &str, body: String) -> i64 {
        let template = json!({"import_template": {"name": name, "category_id": 1}});
        let id = self.create("/api/import_templates", template).await["id"].as_i64().expect("a template id");
        self.create(&format!("/api/import_templates/{id}/create_version"), json!({"template_body": body})).await;
        id
    }

    /// The trigger of `template`, as `GET /api/triggers` lists it.
    pub async fn trigger_of(&self, template: i64) -> Value {
        let (_, all) = self.get("/api/triggers").await;
        let found = all.as_array().and_then(|all| all.iter().find(|t| t["template_id"] == template).cloned());
        found.unwrap_or_else(|| panic!("template {template} has no trigger: {all:#}"))
    }

    /// A Playroom from `playroom` (a create body), a Playspec of `compose`
    /// and a Playground on both, the last two named `name`: the
    /// Playground's detail.
    pub async fn playground(&self, playroom: Value, name: &str, compose: &str) -> Value {
        let room = self.create("/api/playrooms", playroom).await;
        let spec = json!({"playspec": {"name": name, "base_compose_yaml": compose}});
        let spec = self.create("/api/playspecs", spec).await;
        let pg = json!({"playground": {"name": name, "playspec_id": spec["id"], "playroom_id": room["id"]}});
        self.create("/api/playgrounds", pg).await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("play serve at {}, the end of its log:\n{}", self.base, self.log_tail(60));
        }
    }
}
