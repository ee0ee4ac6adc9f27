//! GitOps end to end (issue #14): the real `play` binary as server and as
//! client, real Docker, manifests from `manifests/`.
//!
//! - `readme_quick_start_runs_as_written`: the README's quick-start block,
//!   command by command, against a fresh server (local Playroom).
//! - `apply_twice_edit_prune_diff_wait_and_follow_logs`: the issue's
//!   "must show" list on an SSH Playroom of the harness's sshd: a second
//!   apply writes nothing, an edited Compose file recreates only the
//!   changed service, `--dry-run` writes nothing, `diff` exits 1 after an
//!   edit and after a drift, `--prune` deletes only what was removed,
//!   `wait` times out non-zero, `logs -f` shows a line written after it
//!   started.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::docker::ensure_busybox_image;
use crate::support::serve::{Play, Server};
use crate::support::sshd::Sshd;
use crate::support::webhooks::{Mode, Receiver};
use serde_json::{Value, json};

/// The image the example Compose file names, made from the test busybox
/// (it is busybox) when the machine has no such image.
fn ensure_example_image() {
    ensure_busybox_image();
    let present = Command::new("docker").args(["image", "inspect", "busybox:1.36"]).output().unwrap().status.success();
    if !present {
        crate::support::run(Command::new("docker").args([
            "tag",
            crate::support::docker::BUSYBOX_IMAGE,
            "busybox:1.36",
        ]));
    }
}

/// A fresh installation with `env`, served, at 5 s resyncs.
async fn start(env: &[(&str, &str)]) -> (Play, Server) {
    let mut play = Play::new().await.env("PLAY_RESYNC_INTERVAL", "5s");
    for (k, v) in env {
        play = play.env(*k, *v);
    }
    let server = play.serve().await;
    (play, server)
}

/// The README's quick starts as an operator follows them: the example's
/// and Caddy's images present, an installation served that allows local
/// Playrooms, Caddy as its edge image.
pub(crate) async fn start_quick_start() -> (Play, Server) {
    ensure_example_image();
    crate::support::caddy::ensure_caddy_image();
    start(&[("PLAY_ALLOW_LOCAL_PLAYROOMS", "true"), ("PLAY_EDGE_IMAGE", crate::support::caddy::CADDY_IMAGE)]).await
}

/// `play <args>` against `server`, with `env` added.
fn run(play: &Play, server: &Server, args: &[&str], env: &[(&str, &str)]) -> Output {
    play.client(server).envs(env.iter().copied()).args(args).output().unwrap()
}

/// What an apply could write, as text: rows of apply's own tables and
/// the events API keys caused. Reconcilers keep writing status, so
/// those rows are left out.
async fn written(play: &Play) -> String {
    use sqlx::Row;
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(play.database_url()).await.unwrap();
    let mut out = String::new();
    for query in [
        "SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS m FROM events WHERE actor_type = 'api_key'",
        "SELECT COUNT(*) AS n, CAST(COALESCE(SUM(version), 0) AS BIGINT) AS m FROM applied_objects",
        "SELECT COUNT(*) AS n, CAST(COALESCE(SUM(generation), 0) AS BIGINT) AS m FROM playgrounds",
        "SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS m FROM playspecs",
    ] {
        let row = sqlx::query(query).fetch_one(&pool).await.unwrap();
        out.push_str(&format!("{}:{} ", row.try_get::<i64, _>("n").unwrap(), row.try_get::<i64, _>("m").unwrap()));
    }
    for table in ["applied_objects", "playspecs", "webhook_endpoints"] {
        let rows = sqlx::query(&format!("SELECT updated_at FROM {table} ORDER BY id")).fetch_all(&pool).await.unwrap();
        for row in rows {
            out.push_str(&row.try_get::<String, _>("updated_at").unwrap());
            out.push(' ');
        }
    }
    pool.close().await;
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
pub(crate) fn ok(out: &Output, what: &str, server: &Server) -> String {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}\nserver log (tail):\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr),
        server.log_tail(40)
    );
    text(&out.stdout)
}

pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The commands of the README's quick-start block.
fn quick_start() -> Vec<String> {
    readme_block("## Quick start")
}

/// The commands of the first `sh` block after the README's `heading`.
pub(crate) fn readme_block(heading: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(readme.contains(heading), "the README has a section {heading:?}");
    let section = readme.split(heading).nth(1).unwrap();
    let block = section.split("```sh").nth(1).unwrap().split("```").next().unwrap();
    block.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

#[tokio::test]
async fn readme_quick_start_runs_as_written() {
    let (play, server) = start_quick_start().await;
    let commands = quick_start();
    assert!(commands.iter().any(|c| c.starts_with("play apply")), "{commands:?}");
    for line in &commands {
        let line = line.replace("http://127.0.0.1:8080", &server.base);
        let (line, stdin) = match line.split_once(" < ") {
            Some((cmd, file)) => (cmd.to_owned(), Some(file.trim().replace(".play/", ""))),
            None => (line.clone(), None),
        };
        let mut words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        assert_eq!(words.remove(0), "play", "{line}");
        for w in &mut words {
            if w.starts_with("manifests/") {
                *w = repo().join(&*w).display().to_string();
            }
        }
        let mut cmd = play.client(&server);
        // `login` stores a context: without the overrides, as a user runs it.
        cmd.env_remove("PLAY_URL").env_remove("PLAY_TOKEN").args(&words).current_dir(repo());
        if let Some(file) = stdin {
            cmd.stdin(std::fs::File::open(play.path(&file)).unwrap());
        }
        let out = cmd.output().unwrap();
        let stdout = ok(&out, &line, &server);
        if line.starts_with("play apply") {
            assert!(stdout.contains("playground/example created"), "{stdout}");
        }
        if line.starts_with("play get playgrounds") {
            assert!(stdout.contains("example") && stdout.contains("running"), "{stdout}");
        }
    }
    let left = server.ok(reqwest::Method::GET, "/api/playgrounds", None).await;
    assert!(left.as_array().unwrap().iter().all(|p| p["status"] == "destroyed"), "{left}");
}

/// `manifests/` copied to a work directory, with the Playroom replaced by
/// one on `sshd` whose key is read from a file (`valueFrom`), and without
/// `branches/` (its own quick start, `quick_start_branches_e2e`): `-R`
/// reads the example set and `events/`.
fn work_copy(sshd: &Sshd) -> tempfile::TempDir {
    let work = tempfile::tempdir().unwrap();
    crate::support::run(Command::new("cp").arg("-r").arg(repo().join("manifests")).arg(work.path()));
    let dir = work.path().join("manifests");
    std::fs::remove_dir_all(dir.join("branches")).unwrap();
    std::fs::write(dir.join("id_ed25519"), format!("{}\n", sshd.client_key.private_openssh)).unwrap();
    let playroom = format!(
        "apiVersion: play/v1\nkind: Playroom\nmetadata:\n  name: local\nspec:\n  host: 127.0.0.1\n  port: {}\n  user: {}\n  \
         ssh_private_key:\n    valueFrom:\n      file: ./id_ed25519\n  edge:\n    enabled: false\n",
        sshd.port, sshd.user
    );
    std::fs::write(dir.join("playroom.yaml"), playroom).unwrap();
    work
}

fn results(stdout: &str) -> Vec<(String, String)> {
    let answer: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                format!("{}/{}", r["kind"].as_str().unwrap(), r["name"].as_str().unwrap()),
                r["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn container_id(project: &str, service: &str) -> String {
    let out = crate::support::run(Command::new("docker").args([
        "ps",
        "-q",
        "--no-trunc",
        "--filter",
        &format!("label=com.docker.compose.project={project}"),
        "--filter",
        &format!("label=com.docker.compose.service={service}"),
    ]));
    text(&out.stdout).trim().to_owned()
}

/// Reads `child`'s stdout lines on a thread until one contains `needle`.
fn wait_for_line(child: &mut Child, needle: &str, within: Duration) -> bool {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = std::time::Instant::now() + within;
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

#[tokio::test]
async fn apply_twice_edit_prune_diff_wait_and_follow_logs() {
    ensure_example_image();
    let sshd = Sshd::start();
    let receiver = Receiver::start("127.0.0.1", Mode::Status(200)).await;
    let (play, server) = start(&[("PLAY_WEBHOOK_ALLOW_HTTP", "true"), ("PLAY_WEBHOOK_ALLOWLIST", "127.0.0.1")]).await;
    let work = work_copy(&sshd);
    let dir = work.path().join("manifests");
    let d = dir.display().to_string();
    let hook_env = [
        ("PLAY_EXAMPLE_WEBHOOK_URL", receiver.url()),
        ("PLAY_EXAMPLE_WEBHOOK_SECRET", "a-signing-secret-of-the-test-0123456789".to_owned()),
    ];
    let env: Vec<(&str, &str)> = hook_env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    // A fresh server: everything is created, and --wait returns once the
    // Playground runs.
    let first = ok(
        &run(&play, &server, &["apply", "-f", &d, "-R", "--wait", "--timeout", "5m", "-o", "json"], &env),
        "first apply",
        &server,
    );
    let created = results(&first);
    assert_eq!(created.len(), 4, "{first}");
    assert!(created.iter().all(|(_, a)| a == "created"), "{first}");
    let playgrounds = server.ok(reqwest::Method::GET, "/api/playgrounds", None).await;
    let pg = &playgrounds[0];
    assert_eq!(pg["status"], "running", "{playgrounds}");
    let id = pg["id"].as_i64().unwrap();
    let detail = server.ok(reqwest::Method::GET, &format!("/api/playgrounds/{id}"), None).await;
    let project = detail["compose_project"].as_str().unwrap().to_owned();
    let (web, db) = (container_id(&project, "web"), container_id(&project, "db"));
    assert!(!web.is_empty() && !db.is_empty(), "{project}");

    // Applying again: every object unchanged, nothing written.
    let before = written(&play).await;
    let again = ok(&run(&play, &server, &["apply", "-f", &d, "-R", "-o", "json"], &env), "second apply", &server);
    assert!(results(&again).iter().all(|(_, a)| a == "unchanged"), "{again}");
    assert_eq!(written(&play).await, before, "an unchanged apply writes nothing");
    let diff = run(&play, &server, &["diff", "-f", &d, "-R"], &env);
    assert_eq!(diff.status.code(), Some(0), "no difference: {}{}", text(&diff.stdout), text(&diff.stderr));

    // An edit: diff says so (exit 1), a dry run writes nothing.
    let compose = std::fs::read_to_string(dir.join("compose.yaml")).unwrap();
    let edited = compose.replace(
        "    volumes:\n      - db-data:/data\n",
        "    environment:\n      GREETING: hello\n    volumes:\n      - db-data:/data\n",
    );
    assert_ne!(edited, compose);
    std::fs::write(dir.join("compose.yaml"), &edited).unwrap();
    let diff = run(&play, &server, &["diff", "-f", &d, "-R"], &env);
    assert_eq!(diff.status.code(), Some(1), "{}{}", text(&diff.stdout), text(&diff.stderr));
    assert!(text(&diff.stdout).contains("GREETING"), "the diff shows the change: {}", text(&diff.stdout));
    let dry = ok(&run(&play, &server, &["apply", "-f", &d, "-R", "--dry-run", "-o", "json"], &env), "dry run", &server);
    assert!(results(&dry).contains(&("Playspec/example".into(), "configured".into())), "{dry}");
    assert_eq!(written(&play).await, before, "a dry run writes nothing");

    // Applying the edit rolls the Playground to the new revision: only
    // db is recreated. web keeps its container: its mounted file is a new
    // row in the new revision, but the same file.
    let rolled = ok(
        &run(&play, &server, &["apply", "-f", &d, "-R", "--wait", "--timeout", "5m", "-o", "json"], &env),
        "apply edit",
        &server,
    );
    let rolled = results(&rolled);
    assert!(rolled.contains(&("Playground/example".into(), "configured".into())), "{rolled:?}");
    let mut new_db = String::new();
    for _ in 0..600 {
        new_db = container_id(&project, "db");
        if !new_db.is_empty() && new_db != db {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_ne!(new_db, db, "db's config changed: recreated");
    assert_eq!(container_id(&project, "web"), web, "web's config did not change: the same container");
    let diff = run(&play, &server, &["diff", "-f", &d, "-R"], &env);
    assert_eq!(diff.status.code(), Some(0), "applied: {}{}", text(&diff.stdout), text(&diff.stderr));

    // A drift (a change made outside apply): diff exits 1, apply undoes it.
    server
        .ok(
            reqwest::Method::POST,
            &format!("/api/playgrounds/{id}/rollout"),
            Some(json!({"playground": {"env_overrides": {"MODE": "hacked"}}})),
        )
        .await;
    let diff = run(&play, &server, &["diff", "-f", &d, "-R"], &env);
    assert_eq!(diff.status.code(), Some(1), "{}{}", text(&diff.stdout), text(&diff.stderr));
    assert!(text(&diff.stdout).contains("MODE"), "{}", text(&diff.stdout));
    ok(
        &run(&play, &server, &["apply", "-f", &d, "-R", "--wait", "--timeout", "5m"], &env),
        "apply over drift",
        &server,
    );
    let detail = server.ok(reqwest::Method::GET, &format!("/api/playgrounds/{id}"), None).await;
    assert_eq!(detail["env_overrides"]["MODE"], "demo");

    // logs -f shows a line written after it started.
    let mut follow = play
        .client(&server)
        .args(["logs", "example", "web", "-f", "--tail", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let marker = format!("marker-{}", std::process::id());
    let web_now = container_id(&project, "web");
    let _ = Command::new("docker")
        .args(["exec", &web_now, "wget", "-q", "-O", "/dev/null", &format!("http://127.0.0.1:8080/{marker}")])
        .output();
    let seen = wait_for_line(&mut follow, &marker, Duration::from_secs(30));
    let _ = follow.kill();
    let _ = follow.wait();
    assert!(seen, "logs -f printed the request made after it started");

    // launch: one call from a Compose file to a running Playground, its
    // creation steps printed one per line when not on a terminal.
    let compose = work.path().join("launch.yaml");
    std::fs::write(&compose, "services:\n  app:\n    image: busybox:1.36\n    command: [\"sleep\", \"3600\"]\n")
        .unwrap();
    let launched = run(
        &play,
        &server,
        &[
            "launch",
            "-f",
            compose.to_str().unwrap(),
            "--playroom",
            "local",
            "--name",
            "quick",
            "--wait",
            "--timeout",
            "3m",
        ],
        &[],
    );
    let launched = ok(&launched, "launch --wait", &server);
    assert!(launched.contains("playground/quick created"), "{launched}");
    assert!(launched.lines().any(|l| l.contains("running")), "the steps end in running: {launched}");
    ok(
        &run(&play, &server, &["delete", "playground", "quick", "--wait", "--timeout", "3m"], &[]),
        "delete launched",
        &server,
    );

    // wait times out with its own exit code.
    let wait = run(&play, &server, &["wait", "playground/example", "--for=delete", "--timeout", "2s"], &[]);
    assert_eq!(wait.status.code(), Some(5), "{}", text(&wait.stderr));

    // The webhook endpoint of the set received the Playground's events.
    let mut delivered = false;
    for _ in 0..300 {
        delivered = receiver.hits().iter().any(|h| h.header("x-webhook-event") == "playground.created");
        if delivered {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(delivered, "the set's webhook endpoint got playground.created");

    // Pruning: the endpoint's document removed; only it goes.
    std::fs::remove_file(dir.join("events/webhook.yaml")).unwrap();
    let pruned = ok(&run(&play, &server, &["apply", "-f", &d, "-R", "--prune", "-o", "json"], &[]), "prune", &server);
    let pruned = results(&pruned);
    assert_eq!(
        pruned.iter().filter(|(_, a)| a != "unchanged").collect::<Vec<_>>(),
        [&("WebhookEndpoint/example-events".to_owned(), "pruned".to_owned())],
        "{pruned:?}"
    );
    let hooks = server.ok(reqwest::Method::GET, "/api/webhook_endpoints", None).await;
    assert_eq!(hooks, json!([]));
    let still = server.ok(reqwest::Method::GET, &format!("/api/playgrounds/{id}"), None).await;
    assert_eq!(still["status"], "running");

    ok(&run(&play, &server, &["delete", "-f", &d, "-R", "--wait", "--timeout", "3m"], &[]), "delete -f", &server);
    assert!(container_id(&project, "web").is_empty() && container_id(&project, "db").is_empty());
}
