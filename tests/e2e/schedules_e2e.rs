//! Schedules end to end (issue #30) on a real host (the harness's sshd,
//! the machine's Docker engine), under the reconcile runtime: a template
//! whose `svc.schedule_config` fires every 2 seconds runs its job, each
//! scheduled time gets exactly one run row, a job still running makes
//! `forbid` skip the next times with the reason, and a schedule that was
//! not attended for 30 seconds starts one catch-up run and records the
//! other times as missed.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::time::{Duration, Instant};

use crate::support::world::World;
use axum::http::StatusCode;
use serde_json::{Value, json};

fn template(command: &str) -> String {
    format!(
        "svc:\n  job_mode: true\n  schedule_config: {{enabled: true, cron: \"*/2 * * * * *\"}}\nservices:\n  job:\n    \
         image: play-test/busybox:1\n    command: {command}\n"
    )
}

/// Makes a template of `body` and points its schedule at the world's
/// Playroom; the schedule's API path.
async fn scheduled(w: &World, name: &str, body: &str) -> String {
    let app = &w.app;
    let made = app
        .post("/api/import_templates", &app.admin, json!({"import_template": {"name": name, "category_id": 1}}))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let id = made.body["id"].as_i64().unwrap();
    let version = app
        .post(&format!("/api/import_templates/{id}/create_version"), &app.admin, json!({"template_body": body}))
        .await;
    assert_eq!(version.status, StatusCode::CREATED, "{}", version.text);
    let all = app.get("/api/schedules", &app.admin).await;
    let schedule = all.body.as_array().unwrap().iter().find(|s| s["template_id"] == id).unwrap()["id"].clone();
    let path = format!("/api/schedules/{schedule}");
    let set = app
        .request(
            axum::http::Method::PATCH,
            &path,
            Some(&app.admin),
            Some(json!({"schedule": {"playroom_id": w.playroom}})),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    path
}

async fn runs(w: &World, path: &str) -> Vec<Value> {
    let r = w.app.get(&format!("{path}/runs?limit=500"), &w.app.admin).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let mut all = r.body.as_array().unwrap().clone();
    all.reverse();
    all
}

/// Waits until `ok` holds for the runs (or fails after `limit`).
async fn wait_runs(w: &World, path: &str, limit: Duration, ok: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let all = runs(w, path).await;
        if ok(&all) {
            return all;
        }
        assert!(started.elapsed() < limit, "runs never got there: {all:#?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// [`wait_runs`] until `n` runs `succeeded`, each time recorded once.
async fn wait_succeeded(w: &World, path: &str, n: usize) -> Vec<Value> {
    let all = wait_runs(w, path, Duration::from_secs(90), |all| {
        all.iter().filter(|r| r["status"] == "succeeded").count() >= n
    })
    .await;
    one_row_per_time(&all);
    all
}

fn times(all: &[Value]) -> Vec<chrono::DateTime<chrono::Utc>> {
    all.iter().map(|r| r["scheduled_at"].as_str().unwrap().parse().unwrap()).collect()
}

/// One row per time, two seconds apart, none missing in between.
fn one_row_per_time(all: &[Value]) {
    let at = times(all);
    for pair in at.windows(2) {
        assert_eq!(pair[1] - pair[0], chrono::Duration::seconds(2), "{all:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_runs_its_job_once_per_time_and_forbid_skips_while_one_runs() {
    let w = World::start().await;
    let (_playgrounds, _schedules) = w.runtimes_with_schedules("local");
    let quick = scheduled(&w, "quick", &template("sh -c 'echo ran at $$(date +%s)'")).await;
    let all = wait_succeeded(&w, &quick, 2).await;
    let done: Vec<&Value> = all.iter().filter(|r| r["status"] == "succeeded").collect();
    for run in &done {
        assert_eq!(run["exit_code"], 0, "{run}");
        assert!(run["log_tail"].as_str().unwrap().contains("ran at"), "{run}");
        assert!(run["duration_seconds"].as_f64().unwrap() > 0.0, "{run}");
    }
    let schedule = w.app.get(&quick, &w.app.admin).await.body;
    assert!(schedule["last_success_at"].is_string() && schedule["consecutive_failures"] == 0, "{schedule}");
    // Every other status is a time the running job made forbid skip.
    for run in all.iter().filter(|r| r["status"] == "skipped") {
        assert!(run["reason"].as_str().unwrap().contains("concurrency_policy: forbid"), "{run}");
    }
    w.app
        .request(axum::http::Method::PATCH, &quick, Some(&w.app.admin), Some(json!({"schedule": {"paused": true}})))
        .await;

    // A job of 5 seconds: the times in between are skipped, each with its reason.
    let slow = scheduled(&w, "slow", &template("sh -c 'sleep 5; echo slow'")).await;
    let all = wait_runs(&w, &slow, Duration::from_secs(90), |all| {
        all.iter().any(|r| r["status"] == "succeeded") && all.iter().filter(|r| r["status"] == "skipped").count() >= 2
    })
    .await;
    one_row_per_time(&all);
    let ids: std::collections::BTreeSet<i64> = all.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids.len(), all.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_thirty_seconds_unattended_one_catch_up_run_and_the_rest_missed() {
    let w = World::start().await;
    let path = scheduled(&w, "nightly", &template("sh -c 'echo caught up'")).await;
    let id: i64 = path.rsplit('/').next().unwrap().parse().unwrap();
    // What a play that was down for 30 seconds leaves: the cursor at a time
    // 30 seconds ago (nothing ran since).
    let now = chrono::Utc::now();
    let back = now - chrono::Duration::seconds(30);
    let back = back - chrono::Duration::nanoseconds(i64::from(back.timestamp_subsec_nanos()));
    let back = if back.timestamp() % 2 == 0 { back } else { back + chrono::Duration::seconds(1) };
    sqlx::query("UPDATE schedules SET next_at = $1 WHERE id = $2")
        .bind(play_model::time::to_db(&back))
        .bind(id)
        .execute(w.app.store().pool())
        .await
        .unwrap();
    let (_playgrounds, _schedules) = w.runtimes_with_schedules("local");
    let all = wait_runs(&w, &path, Duration::from_secs(60), |all| all.iter().any(|r| r["status"] == "succeeded")).await;
    let missed = all.iter().filter(|r| r["status"] == "missed").count();
    let started: Vec<&Value> = all.iter().filter(|r| r["playground_id"].is_i64()).collect();
    assert!(missed >= 14, "the times of the outage but the latest are missed: {all:#?}");
    assert!(times(&all)[0] == back, "from the cursor on: {all:#?}");
    // One catch-up run: every time before the first run that started is
    // missed, and that run is the outage's latest time (or, on a slow
    // machine, a time after it): never an earlier one.
    let first_started: chrono::DateTime<chrono::Utc> = started[0]["scheduled_at"].as_str().unwrap().parse().unwrap();
    assert!(first_started >= now - chrono::Duration::seconds(2), "{all:#?}");
    let mut before = all.iter().take_while(|r| r["id"] != started[0]["id"]);
    assert!(before.all(|r| r["status"] == "missed"), "{all:#?}");
    one_row_per_time(&all);
    let events = w.app.get("/api/webhook_endpoints/event_types", &w.app.admin).await;
    assert!(events.text.contains("schedule.run.missed"), "{}", events.text);
}

/// Two replicas attend the same schedule (on PostgreSQL, as two `play
/// serve` processes would share it): still one row per time, and one
/// Playground per started run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_start_each_time_once() {
    let w = World::start().await;
    let (_playgrounds_a, _schedules_a) = w.runtimes_with_schedules("replica-a");
    let (_playgrounds_b, _schedules_b) = w.runtimes_with_schedules("replica-b");
    let path = scheduled(&w, "twice", &template("sh -c 'echo once'")).await;
    let all = wait_succeeded(&w, &path, 3).await;
    let launched = all.iter().filter(|r| r["playground_id"].is_i64()).count();
    let playgrounds: i64 = sqlx::Row::get(
        &sqlx::query("SELECT COUNT(*) AS n FROM playspecs WHERE name LIKE 'schedule-%'")
            .fetch_one(w.app.store().pool())
            .await
            .unwrap(),
        "n",
    );
    assert!(playgrounds as usize <= launched + 1, "one launch per started run: {playgrounds} for {launched}");
}
