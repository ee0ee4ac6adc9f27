//! The client commands of the real `play` binary against a real `play
//! serve` (no Docker needed: the Playroom used is unreachable on purpose).
//! Each test has its own server, database and contexts directory
//! (`XDG_CONFIG_HOME`). Runs on the backend `PLAY_TEST_BACKEND` selects.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::support::free_port;
use crate::support::serve::{Play, Server};
use serde_json::{Value, json};

/// `play <args>` with `stdin` written to its standard input.
fn run_with_stdin(play: &Play, args: &[&str], stdin: &str) -> Output {
    let mut child =
        play.command().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// Logs `play`'s client in to `server` with its admin token.
fn login(play: &Play, server: &Server) {
    let out = run_with_stdin(play, &["login", &server.base, "--token-stdin"], &format!("{}\n", server.token));
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A Playroom nothing listens for (127.0.0.1 on a closed port): its id.
async fn unreachable_playroom(server: &Server, name: &str) -> i64 {
    let body = json!({"playroom": {"name": name, "host": "127.0.0.1", "port": free_port(), "user": "nobody"}});
    server.create("/api/playrooms", body).await["id"].as_i64().unwrap()
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
    let out = run_with_stdin(&play, &["login", &server.base, "--token-stdin"], &format!("{}\n", server.token));
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

/// `play login --web` prints a one-time link that signs a browser in to
/// the dashboard with the context's key: the link opens a confirmation
/// page, and its form starts a session once.
#[tokio::test]
async fn login_web_prints_a_one_time_sign_in_link() {
    let play = Play::new().await;
    let server = play.serve().await;
    login(&play, &server);
    let out = play.run(&["login", "--web"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let link = text(&out.stdout).trim().to_owned();
    assert!(link.starts_with(&format!("{}/sign-in/link/", server.base)), "{link}");
    let secret = link.rsplit('/').next().unwrap().to_owned();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let page = http.get(&link).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let cookie = page.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let html = page.text().await.unwrap();
    let nonce = html.split("name=\"csrf\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let redeem = || {
        http.post(format!("{}/sign-in/link", server.base))
            .header("cookie", &cookie)
            .form(&[("csrf", nonce.as_str()), ("secret", secret.as_str())])
            .send()
    };
    let first = redeem().await.unwrap();
    assert_eq!(first.status(), 303);
    assert!(first.headers()["set-cookie"].to_str().unwrap().starts_with("play_session="));
    assert_eq!(redeem().await.unwrap().status(), 401, "used once");
    assert!(!server.log().contains(&secret), "the secret is never logged");
    // Without a context there is no key to sign in with.
    let none = play.command().args(["login", "--web"]).env("XDG_CONFIG_HOME", play.path("nowhere")).output().unwrap();
    assert!(!none.status.success());
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
    unreachable_playroom(&server, "from-env").await;
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
    login(&play, &server);
    let out = play.run(&["get", "playroom", "nope"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no playroom named \"nope\""), "{}", text(&out.stderr));
    // An id that does not exist is the API's own 404.
    let out = play.run(&["describe", "playroom", "999"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("RESOURCE_NOT_FOUND"), "{}", text(&out.stderr));

    let id = unreachable_playroom(&server, "doomed").await;
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
    login(&play, &server);
    let room = unreachable_playroom(&server, "nowhere").await;
    let spec = server
        .create(
            "/api/playspecs",
            json!({"playspec": {"name": "web", "base_compose_yaml": "services:\n  web:\n    image: busybox\n"}}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    server
        .create("/api/playgrounds", json!({"playground": {"name": "demo", "playspec_id": spec, "playroom_id": room}}))
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

    // Asked to sleep and to wake: desired power, recorded (no reconciler
    // runs here, so the status stays; `--wait` times out with exit 5).
    let out = play.run(&["sleep", "demo", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let asleep: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((asleep["power"].as_str(), asleep["power_reason"].as_str()), (Some("asleep"), Some("api")));
    let out = play.run(&["wake", "demo"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "playground/demo: status in_progress, power awake");
    let out = play.run(&["sleep", "demo", "--wait", "--timeout", "1s"]);
    assert_eq!(code(&out), 5, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("to be sleeping"), "{}", text(&out.stderr));

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
    login(&play, &server);
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
