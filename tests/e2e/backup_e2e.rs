//! `play backup` and `play restore` with the real binary (issue #53):
//! backed up while `play serve` runs and a client writes, restored into a
//! new installation on the same Playroom. The Playground in the backup is
//! adopted (same container, not restarted, its volume's data there), the
//! Playground made after the backup is quarantined (stopped, kept, listed
//! by `play orphans`), the repository clones with the backed-up commit,
//! the webhook secret still signs and the admin token still works.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::docker::{ensure_busybox_image, project_containers};
use crate::support::git_cli::{git, ok, with_key};
use crate::support::serve::{Play, Server};
use crate::support::sshd::Sshd;
use crate::support::webhooks::{Mode, Receiver, verify};
use crate::support::world::inspect;

const COMPOSE: &str = r#"
services:
  app:
    image: play-test/busybox:1
    command: ["sh", "-c", "test -f /data/f || echo backed-up > /data/f; sleep 3600"]
    volumes:
      - data:/data
volumes:
  data: {}
"#;

fn installation(play: Play) -> Play {
    play.env("PLAY_WEBHOOK_ALLOW_HTTP", "true")
        .env("PLAY_WEBHOOK_ALLOWLIST", "127.0.0.1")
        .serve_args(&["--sweep-interval", "1s"])
}

async fn running(server: &Server, id: i64) -> Value {
    let path = format!("/api/playgrounds/{id}");
    server.wait_for("the Playground running", &path, |b| b["status"] == "running").await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_online_restores_into_a_new_installation_that_adopts_and_quarantines() {
    ensure_busybox_image();
    let sshd = Sshd::start();
    let play = installation(Play::new().await);
    let mut server = play.serve().await;
    let kept = server.playground(sshd.playroom_body("box"), "kept", COMPOSE).await;
    let (kept_id, kept_project) = (kept["id"].as_i64().unwrap(), kept["compose_project"].as_str().unwrap().to_owned());
    running(&server, kept_id).await;
    let container = format!("{kept_project}-app-1");
    let (container_id, started_at) = (inspect(&container, "{{.Id}}"), inspect(&container, "{{.State.StartedAt}}"));

    // A repository with a push, and a webhook endpoint with its secret.
    assert_eq!(server.post("/api/repos", json!({"name": "demo", "auto_init": true})).await.0, 201);
    let work = tempfile::tempdir().unwrap();
    let url = with_key(&format!("{}/git/default/demo.git", server.base), &server.token);
    let clone = work.path().join("clone");
    ok(&git(work.path(), &["clone", "--quiet", &url, clone.to_str().unwrap()]));
    std::fs::write(clone.join("app.txt"), "backed up").unwrap();
    ok(&git(&clone, &["add", "app.txt"]));
    ok(&git(&clone, &["commit", "--quiet", "-m", "backed up"]));
    ok(&git(&clone, &["push", "--quiet", "origin", "HEAD"]));
    let backed_up_commit = ok(&git(&clone, &["rev-parse", "HEAD"]));
    let receiver = Receiver::start("127.0.0.1", Mode::Status(200)).await;
    let endpoint = json!({"webhook_endpoint": {"url": receiver.url(), "events": ["playground.created"]}});
    let endpoint = server.create("/api/webhook_endpoints", endpoint).await;
    let secret = endpoint["secret"].as_str().unwrap().to_owned();

    // Back up while a client writes; the writes' latencies are printed.
    let archive = play.data_dir().parent().unwrap().join(format!("backup-{}.tar.zst", std::process::id()));
    let writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let writer = {
        let (base, token, writing) = (server.base.clone(), server.token.clone(), std::sync::Arc::clone(&writing));
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut latencies = Vec::new();
            while writing.load(std::sync::atomic::Ordering::Relaxed) {
                let n = latencies.len();
                let body = json!({"playspec": {"name": format!("w{n}"), "base_compose_yaml": COMPOSE}});
                let started = Instant::now();
                let r = client.post(format!("{base}/api/playspecs")).bearer_auth(&token).json(&body).send().await;
                assert_eq!(r.unwrap().status().as_u16(), 201);
                latencies.push(started.elapsed());
            }
            latencies
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let backup = {
        let mut command = play.command();
        command.args(["backup", "--output", archive.to_str().unwrap()]);
        tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap()
    };
    writing.store(false, std::sync::atomic::Ordering::Relaxed);
    let mut latencies = writer.await.unwrap();
    assert!(backup.status.success(), "{}", String::from_utf8_lossy(&backup.stderr));
    latencies.sort();
    let p99 = latencies[(latencies.len() * 99 / 100).min(latencies.len() - 1)];
    eprintln!("{} writes during the backup; p99 {p99:?}, max {:?}", latencies.len(), latencies.last().unwrap());

    // After the backup: a Playground the backup does not know.
    let spec =
        server.create("/api/playspecs", json!({"playspec": {"name": "later", "base_compose_yaml": COMPOSE}})).await;
    let later = json!({"playground": {"name": "later", "playspec_id": spec["id"], "playroom_id": kept["playroom_id"]}});
    let later = server.create("/api/playgrounds", later).await;
    let later_project = later["compose_project"].as_str().unwrap().to_owned();
    running(&server, later["id"].as_i64().unwrap()).await;
    let later_containers = project_containers(&later_project);
    assert_eq!(later_containers.len(), 1);
    server.terminate();
    server.wait_exit(Duration::from_secs(30)).await;

    // A new installation: its data directory holds only the master key
    // (kept apart from backups) before the restore.
    let restored = installation(Play::new().await);
    std::fs::copy(play.path("master.key"), restored.path("master.key")).unwrap();
    let out = restored.run(&["restore", archive.to_str().unwrap(), "--quarantine", "1h"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The backed-up admin token opens the restored installation.
    std::fs::copy(play.path("admin.token"), restored.path("admin.token")).unwrap();
    let server = restored.serve().await;
    assert_eq!(server.token, std::fs::read_to_string(play.path("admin.token")).unwrap().trim());

    // Adopted: the same container, never restarted, its data there.
    running(&server, kept_id).await;
    assert_eq!(inspect(&container, "{{.Id}}"), container_id);
    assert_eq!(inspect(&container, "{{.State.StartedAt}}"), started_at, "the container was restarted");
    let data = crate::support::run(std::process::Command::new("docker").args(["exec", &container, "cat", "/data/f"]));
    assert_eq!(String::from_utf8_lossy(&data.stdout).trim(), "backed-up");

    // Quarantined, not removed: stopped, kept and listed.
    let deadline = Instant::now() + Duration::from_secs(60);
    while inspect(&later_containers[0], "{{.State.Running}}") != "false" {
        assert!(Instant::now() < deadline, "the later Playground's container was never stopped");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(project_containers(&later_project), later_containers, "kept");
    let orphans = restored.run(&["orphans"]);
    let listed = String::from_utf8_lossy(&orphans.stdout);
    assert!(orphans.status.success() && listed.contains(&later_containers[0]), "{listed}");
    assert!(!listed.contains(&container), "{listed}");

    // The repository as backed up, and the webhook secret still signs.
    let url = with_key(&format!("{}/git/default/demo.git", server.base), &server.token);
    let again = work.path().join("again");
    ok(&git(work.path(), &["clone", "--quiet", &url, again.to_str().unwrap()]));
    assert_eq!(ok(&git(&again, &["rev-parse", "HEAD"])), backed_up_commit);
    let id = endpoint["id"].as_i64().unwrap();
    let tested = server.ok(reqwest::Method::POST, &format!("/api/webhook_endpoints/{id}/test"), Some(json!({}))).await;
    assert_eq!(tested["delivered"], true, "{tested}");
    let hits = receiver.hits();
    let test = hits.iter().find(|h| h.header("x-webhook-event") == "webhook.test").expect("the test delivery");
    verify(&secret, test);
    let _ = std::fs::remove_file(&archive);
}

/// The value of the sample `name` (no labels) on play serve's `/metrics`.
async fn metric(server: &Server, name: &str) -> f64 {
    let text = reqwest::get(format!("{}/metrics", server.base)).await.unwrap().text().await.unwrap();
    let line = text.lines().find(|l| l.split_whitespace().next() == Some(name));
    line.and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no {name}"))
}

/// Scheduled backups (issue #53, item 2): every second here; each one
/// verified before it counts, the newest two kept, each restorable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_backups_are_verified_and_the_newest_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let play = Play::new()
        .await
        .env("PLAY_BACKUP_DIR", dir.path())
        .env("PLAY_BACKUP_SCHEDULE", "* * * * * *")
        .env("PLAY_BACKUP_KEEP", "2");
    let server = play.serve().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let first = loop {
        let at = metric(&server, "play_backup_last_success_timestamp_seconds").await;
        if at > 0.0 {
            break at;
        }
        assert!(Instant::now() < deadline, "no scheduled backup within a minute:\n{}", server.log_tail(20));
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // Two more, then the oldest go.
    while metric(&server, "play_backup_last_success_timestamp_seconds").await < first + 2.0 {
        assert!(Instant::now() < deadline, "the schedule stopped:\n{}", server.log_tail(20));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(metric(&server, "play_backup_failures_total").await, 0.0);
    assert!(metric(&server, "play_backup_bytes").await > 0.0);
    drop(server);
    let mut kept: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    kept.sort();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(kept.iter().all(|p| p.file_name().unwrap().to_string_lossy().starts_with("play-backup-scheduled-")));
    let target = tempfile::tempdir().unwrap();
    let restore = restore_command(&play, target.path(), &kept[1]).await.output().unwrap();
    assert!(restore.status.success(), "{}", String::from_utf8_lossy(&restore.stderr));
}

/// A scheduled backup that cannot be written is a failure, counted and
/// sent as `system.backup.failed` to the operator's webhooks; it never
/// moves the time of the last success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_backup_that_fails_is_counted_and_never_reported_as_a_success() {
    let blocked = tempfile::NamedTempFile::new().unwrap();
    let play = installation(Play::new().await)
        .env("PLAY_BACKUP_DIR", blocked.path().join("backups"))
        .env("PLAY_BACKUP_SCHEDULE", "* * * * * *");
    let server = play.serve().await;
    let receiver = Receiver::start("127.0.0.1", Mode::Status(200)).await;
    let endpoint = json!({"webhook_endpoint": {"url": receiver.url(), "events": ["system.backup.failed"]}});
    let secret = server.create("/api/webhook_endpoints", endpoint).await["secret"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric(&server, "play_backup_failures_total").await < 2.0 {
        assert!(Instant::now() < deadline, "no failure counted:\n{}", server.log_tail(20));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(metric(&server, "play_backup_last_success_timestamp_seconds").await, 0.0);
    assert!(server.log().contains("scheduled backup failed"), "{}", server.log_tail(20));
    let hits = receiver.wait_for(1, Duration::from_secs(30)).await;
    assert_eq!(hits[0].header("x-webhook-event"), "system.backup.failed");
    verify(&secret, &hits[0]);
    let body = hits[0].json();
    assert!(body.to_string().contains("scheduled_for"), "{body}");
}

/// `play restore ARCHIVE` into a new data directory under `dir` (SQLite),
/// with `play`'s master key.
async fn restore_command(play: &Play, dir: &std::path::Path, archive: &std::path::Path) -> std::process::Command {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(play.path("master.key"), data.join("master.key")).unwrap();
    let mut command = play.command();
    command.env("PLAY_DATA_DIR", &data).args(["restore", archive.to_str().unwrap()]);
    if play_store::testing::backend() == play_store::Backend::Postgres {
        // A PostgreSQL backup restores into an empty PostgreSQL database.
        let url = play_store::testing::fresh_database_url().await.0;
        command.env("PLAY_DATABASE_URL", url);
    } else {
        command.env("PLAY_DATABASE_URL", format!("sqlite://{}", data.join("play.db").display()));
    }
    command
}

/// Two replicas on one store, each with a backup folder of its own: each
/// fire time is taken by one of them only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fire_time_is_backed_up_by_one_replica() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let play = Play::new().await.env("PLAY_BACKUP_SCHEDULE", "* * * * * *").env("PLAY_BACKUP_KEEP", "1000");
    let a = play.replica("a").env("PLAY_BACKUP_DIR", a_dir.path());
    let b = play.replica("b").env("PLAY_BACKUP_DIR", b_dir.path());
    let (server_a, server_b) = (a.serve().await, b.serve().await);
    let names = |dir: &std::path::Path| -> std::collections::BTreeSet<String> {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while names(a_dir.path()).len() + names(b_dir.path()).len() < 6 {
        assert!(Instant::now() < deadline, "too few backups:\n{}\n{}", server_a.log_tail(10), server_b.log_tail(10));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop((server_a, server_b));
    let twice: Vec<_> = names(a_dir.path()).intersection(&names(b_dir.path())).cloned().collect();
    assert!(twice.is_empty(), "fire times backed up by both replicas: {twice:?}");
}

/// Schedules across a restore (issue #53, item 3): a time the backup
/// recorded a run for is never run again; every time has one row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_schedule_never_runs_a_time_the_backup_recorded_again() {
    use crate::schedules_sigkill_e2e::{at, every_two_seconds, runs, wait_runs};
    let sshd = Sshd::start();
    let (play, mut server, schedule) = every_two_seconds(&sshd, "tick", "allow", "\"true\"").await;
    wait_runs(&server, &schedule, "two runs succeeded", |all| {
        all.iter().filter(|r| r["status"] == "succeeded").count() >= 2
    })
    .await;
    // Every run recorded before the backup starts is in it.
    let recorded: Vec<Value> =
        runs(&server, &schedule).await.into_iter().filter(|r| r["status"] == "succeeded").collect();
    let archive = play.data_dir().parent().unwrap().join(format!("schedules-{}.tar.zst", std::process::id()));
    let out = play.run(&["backup", "--output", archive.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    server.kill();

    let restored = Play::new().await.env("PLAY_SCHEDULE_MIN_INTERVAL", "1s");
    std::fs::copy(play.path("master.key"), restored.path("master.key")).unwrap();
    let out = restored.run(&["restore", archive.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::copy(play.path("admin.token"), restored.path("admin.token")).unwrap();
    let started = chrono::Utc::now();
    let server = restored.serve().await;
    let all = wait_runs(&server, &schedule, "a run after the restore", |all| {
        all.iter().any(|r| at(r) > started + chrono::Duration::seconds(2) && r["status"] == "succeeded")
    })
    .await;
    let mut times: Vec<_> = all.iter().map(at).collect();
    times.dedup();
    assert_eq!(times.len(), all.len(), "one row per time: {all:#?}");
    for run in &recorded {
        let same: Vec<&Value> = all.iter().filter(|r| at(r) == at(run)).collect();
        assert_eq!(same.len(), 1, "{run}");
        assert_eq!(same[0]["status"], "succeeded", "the backed-up run of {} changed: {:#?}", run["scheduled_at"], same);
        assert_eq!(same[0]["id"], run["id"], "{run}");
    }
    let _ = std::fs::remove_file(&archive);
}
