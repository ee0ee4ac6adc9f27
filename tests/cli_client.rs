//! The client commands of the real `play` binary against a real `play
//! serve` (no Docker needed: the Playroom used is unreachable on purpose).
//! Each test has its own server, database and contexts directory
//! (`XDG_CONFIG_HOME`). Runs on the backend `PLAY_TEST_BACKEND` selects.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

struct Play {
    data_dir: tempfile::TempDir,
    config_home: tempfile::TempDir,
    database_url: String,
    _sqlite_dir: Option<tempfile::TempDir>,
}

struct Server {
    child: Child,
    base: String,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Play {
    async fn new() -> Play {
        let (database_url, sqlite_dir) = play_core::testing::fresh_database_url().await;
        Play {
            data_dir: tempfile::tempdir().unwrap(),
            config_home: tempfile::tempdir().unwrap(),
            database_url,
            _sqlite_dir: sqlite_dir,
        }
    }

    /// The binary with this test's contexts directory and none of the
    /// caller's client settings.
    fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_play"));
        cmd.env("PLAY_DATA_DIR", self.data_dir.path())
            .env("PLAY_DATABASE_URL", &self.database_url)
            .env("XDG_CONFIG_HOME", self.config_home.path())
            .env("PLAY_LOG", "info")
            .env("NO_COLOR", "1")
            .env_remove("PLAY_URL")
            .env_remove("PLAY_TOKEN")
            .env_remove("PLAY_CONTEXT")
            .env_remove("PLAY_LISTEN");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).stdin(Stdio::null()).output().unwrap()
    }

    fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }

    fn config_file(&self) -> PathBuf {
        self.config_home.path().join("play").join("config.toml")
    }

    async fn serve(&self) -> Server {
        let port = free_port();
        let child = self
            .command()
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut server = Server { child, base: format!("http://127.0.0.1:{port}"), token: String::new() };
        let client = reqwest::Client::new();
        for _ in 0..300 {
            if let Ok(r) = client.get(format!("{}/healthz", server.base)).send().await
                && r.status().is_success()
            {
                let token = std::fs::read_to_string(self.data_dir.path().join("admin.token")).unwrap();
                server.token = token.trim().to_owned();
                return server;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("play serve did not become healthy");
    }

    /// Logs in to `server` with its admin token.
    fn login(&self, server: &Server) {
        let out = self.run_with_stdin(&["login", &server.base, "--token-stdin"], &format!("{}\n", server.token));
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

impl Server {
    async fn post(&self, path: &str, body: Value) -> Value {
        let response = reqwest::Client::new()
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert!(status.is_success(), "POST {path}: {status} {body}");
        body
    }

    /// A Playroom nothing listens for: 127.0.0.1 on a closed port.
    async fn unreachable_playroom(&self, name: &str) -> i64 {
        let body = json!({"playroom": {"name": name, "host": "127.0.0.1", "port": free_port(), "user": "nobody"}});
        self.post("/api/playrooms", body).await["id"].as_i64().unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

#[tokio::test]
async fn login_stores_a_private_context_and_get_uses_it() {
    let play = Play::new().await;
    let server = play.serve().await;
    let out = play.run_with_stdin(&["login", &server.base, "--token-stdin"], &format!("{}\n", server.token));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains(&server.token) && !text(&out.stderr).contains(&server.token));
    let mode = std::fs::metadata(play.config_file()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let out = play.run(&["get", "playrooms", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), json!([]));

    let contexts = play.run(&["config", "get-contexts"]);
    let shown = text(&contexts.stdout);
    assert!(shown.contains(&server.base) && shown.contains('*'), "{shown}");
    assert!(!shown.contains(&server.token));
}

#[tokio::test]
async fn bad_tokens_and_unreachable_servers_have_their_exit_codes() {
    let play = Play::new().await;
    let server = play.serve().await;
    let bad = play.run(&["login", &server.base, "--token", "play_not_a_real_token"]);
    assert_eq!(code(&bad), 3, "{}", text(&bad.stderr));
    assert!(text(&bad.stderr).contains("the server refused the token"), "{}", text(&bad.stderr));
    assert!(!play.config_file().exists());

    let down = format!("http://127.0.0.1:{}", free_port());
    let out = play.run(&["login", &down, "--token", "x"]);
    assert_eq!(code(&out), 4, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("cannot reach"), "{}", text(&out.stderr));

    // Not logged in at all: a plain failure with advice.
    let out = play.run(&["get", "playrooms"]);
    assert_eq!(code(&out), 1);
    assert!(text(&out.stderr).contains("not logged in"), "{}", text(&out.stderr));
    // A kind clap cannot read is a usage error.
    assert_eq!(code(&play.run(&["get", "deployments"])), 2);
}

#[tokio::test]
async fn environment_variables_stand_in_for_a_context() {
    let play = Play::new().await;
    let server = play.serve().await;
    server.unreachable_playroom("from-env").await;
    let out = play
        .command()
        .args(["get", "pr"])
        .env("PLAY_URL", &server.base)
        .env("PLAY_TOKEN", &server.token)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.starts_with("NAME") && table.contains("from-env"), "{table}");
}

#[tokio::test]
async fn names_that_match_nothing_exit_3_and_a_playroom_is_deleted_by_name() {
    let play = Play::new().await;
    let server = play.serve().await;
    play.login(&server);
    let out = play.run(&["get", "playroom", "nope"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no playroom named \"nope\""), "{}", text(&out.stderr));
    // An id that does not exist is the API's own 404.
    let out = play.run(&["describe", "playroom", "999"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("RESOURCE_NOT_FOUND"), "{}", text(&out.stderr));

    let id = server.unreachable_playroom("doomed").await;
    let out = play.run(&["get", "playroom", "doomed", "-o", "json"]);
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["id"], id);
    let described = play.run(&["describe", "playroom", "doomed"]);
    assert!(text(&described.stdout).contains("host: 127.0.0.1"), "{}", text(&described.stdout));

    let out = play.run(&["delete", "playroom", "doomed"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "playroom/doomed deleted");
    assert_eq!(code(&play.run(&["get", "playroom", "doomed"])), 3);
    assert_eq!(code(&play.run(&["delete", "playroom", "doomed"])), 3);
    assert!(play.run(&["delete", "playroom", "doomed", "--ignore-not-found"]).status.success());
}

#[tokio::test]
async fn a_playground_that_cannot_start_is_extended_and_waited_for_until_the_timeout() {
    let play = Play::new().await;
    let server = play.serve().await;
    play.login(&server);
    let room = server.unreachable_playroom("nowhere").await;
    let spec = server
        .post(
            "/api/playspecs",
            json!({"playspec": {"name": "web", "base_compose_yaml": "services:\n  web:\n    image: busybox\n"}}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    server
        .post("/api/playgrounds", json!({"playground": {"name": "demo", "playspec_id": spec, "playroom_id": room}}))
        .await;

    let listed = play.run(&["get", "playgrounds"]);
    assert!(text(&listed.stdout).lines().nth(1).unwrap().starts_with("demo "), "{}", text(&listed.stdout));

    let out = play.run(&["extend", "demo", "--hours", "2", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let extended: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(extended["time_remaining"].as_f64().unwrap() > 8.0 * 3600.0, "{extended}");
    let out = play.run(&["extend", "demo", "--hours", "0"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));

    let started = std::time::Instant::now();
    let out = play.run(&["wait", "playground/demo", "--for=status=running", "--timeout", "2s"]);
    assert_eq!(code(&out), 5, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("timed out after 2s waiting for playground/demo to be running"),
        "{}",
        text(&out.stderr)
    );
    assert!(started.elapsed() < Duration::from_secs(20));

    let described = text(&play.run(&["describe", "pg", "demo"]).stdout);
    assert!(described.contains("Name:        demo") && described.contains("Services:"), "{described}");

    let out = play.run(&["delete", "playground", "demo"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("playground/demo destroying"), "{}", text(&out.stdout));
}

#[tokio::test]
async fn manifests_that_do_not_validate_are_refused_before_anything_is_sent() {
    let play = Play::new().await;
    let server = play.serve().await;
    play.login(&server);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.yaml");
    std::fs::write(&file, "apiVersion: play/v1\nkind: Playspec\nmetadata:\n  name: web\nspec:\n  composeFile: ./compose.yaml\n  replicas: 2\n").unwrap();
    let out = play.run(&["apply", "-f", file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{}: document 1: spec.replicas (line 7): unknown field", file.display())),
        "{stderr}"
    );
}

#[tokio::test]
async fn completions_are_printed_for_a_shell() {
    let play = Play::new().await;
    let out = play.run(&["completions", "bash"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("_play()"), "{}", text(&out.stdout));
}
