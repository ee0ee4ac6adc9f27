//! `/api/schedules` over the real router and store: a template version
//! with an enabled `svc.schedule_config` makes its schedule; where and
//! with what it runs is set with `PATCH` (variables sealed, never shown);
//! scopes, another account, bad input. The runs themselves are tested
//! end to end in `tests/e2e/schedules_e2e.rs`.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use crate::support::templates::{
    activate_launch_setting, create_template, create_version, other_account, patch, pause_then_switch_off,
};
use axum::http::StatusCode;
use play_api::testing::TestApp;
use serde_json::json;

const NIGHTLY: &str = "svc:\n  job_mode: true\n  variables:\n    WHO: {required: true}\n  schedule_config: {enabled: true, cron: \"0 3 * * *\", time_zone: Europe/Paris, concurrency_policy: replace}\nservices:\n  job:\n    image: play-test/busybox:1\n    command: echo $$var__WHO\n";

#[tokio::test]
async fn a_scheduled_template_is_listed_and_runs_once_given_a_playroom() {
    let app = TestApp::new().await;
    let id = create_template(&app, &app.admin, "nightly", "").await;
    assert_eq!(create_version(&app, &app.admin, id, NIGHTLY, false).await.status, StatusCode::CREATED);
    let listed = app.get("/api/schedules", &app.admin).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    let schedule = &listed.body[0];
    assert_eq!((schedule["template_id"].as_i64(), schedule["cron"].as_str()), (Some(id), Some("0 3 * * *")));
    assert_eq!(
        (schedule["time_zone"].as_str(), schedule["concurrency_policy"].as_str()),
        (Some("Europe/Paris"), Some("replace"))
    );
    assert!(schedule["condition"].as_str().unwrap().contains("needs a Playroom"), "{schedule}");
    let path = format!("/api/schedules/{}", schedule["id"]);

    activate_launch_setting(&app, "schedule", &path).await;
    let runs = app.get(&format!("{path}/runs"), &app.admin).await;
    assert_eq!((runs.status, runs.body.as_array().map(Vec::len)), (StatusCode::OK, Some(0)));

    // Paused, it says so; a later version without a schedule switches it off.
    let off = "svc:\n  job_mode: true\nservices:\n  job:\n    image: play-test/busybox:1\n";
    let after = pause_then_switch_off(&app, "schedule", &path, id, off).await;
    assert_eq!(after.body["config_version"], 2);
}

#[tokio::test]
async fn bad_settings_another_account_and_bad_input_are_refused() {
    let app = TestApp::new().await;
    let id = create_template(&app, &app.admin, "nightly", "").await;
    for (cron, field) in [("0 0 30 2 *", "cron"), ("*/5 * *", "cron")] {
        let body = NIGHTLY.replace("0 3 * * *", cron);
        let r = create_version(&app, &app.admin, id, &body, false).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{cron}: {}", r.text);
        assert!(r.text.contains(&format!("svc.schedule_config.{field}")), "{}", r.text);
    }
    create_version(&app, &app.admin, id, NIGHTLY, false).await;
    let schedule = app.get("/api/schedules", &app.admin).await.body[0]["id"].as_i64().unwrap();
    let path = format!("/api/schedules/{schedule}");
    let other = other_account(&app, "other").await;
    assert_eq!(app.get(&path, &other).await.status, StatusCode::NOT_FOUND);
    let theirs = patch(&app, &path, &other, Some(json!({"schedule": {"paused": true}}))).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/api/schedules", &other).await.body.as_array().unwrap().len(), 0);

    let unknown_room = patch(&app, &path, &app.admin, Some(json!({"schedule": {"playroom_id": 999}}))).await;
    assert_eq!(unknown_room.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", unknown_room.text);
    assert!(unknown_room.body["error"]["details"]["playroom_id"].is_array());
    let typo = patch(&app, &path, &app.admin, Some(json!({"schedule": {"pause": true}}))).await;
    assert_eq!(typo.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", typo.text);
    let unchanged = app.get(&path, &app.admin).await;
    assert_eq!((unchanged.body["paused"].as_bool(), unchanged.body["playroom_id"].as_i64()), (Some(false), None));
}

#[tokio::test]
async fn a_schedule_more_frequent_than_the_operator_allows_is_refused_everywhere() {
    let config =
        play_api::ApiConfig { schedule_min_interval: std::time::Duration::from_secs(60), ..TestApp::default_config() };
    let app = TestApp::with_config(config).await;
    let id = create_template(&app, &app.admin, "often", "").await;
    let every_two_seconds = NIGHTLY.replace("0 3 * * *", "*/2 * * * * *");
    let refused = create_version(&app, &app.admin, id, &every_two_seconds, false).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text);
    let said = refused.body["error"]["details"]["svc.schedule_config.cron"][0].as_str().unwrap();
    assert!(said.contains("every 2 s") && said.contains("PLAY_SCHEDULE_MIN_INTERVAL"), "{said}");
    let manifest = json!({"objects": [{"apiVersion": "play/v1", "kind": "ImportTemplate", "metadata": {"name": "often"},
        "spec": {"category_id": 1, "template_body": every_two_seconds}}]});
    let applied = app.post("/api/apply", &app.admin, manifest).await;
    assert_eq!(applied.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", applied.text);
    assert!(
        applied.body["error"]["details"]["objects[0].spec.svc.schedule_config.cron"].is_array(),
        "{}",
        applied.text
    );
    let hourly = create_version(&app, &app.admin, id, NIGHTLY, false).await;
    assert_eq!(hourly.status, StatusCode::CREATED, "{}", hourly.text);
    assert_eq!(app.count("schedules").await, 1);
}

#[tokio::test]
async fn a_version_change_and_a_patch_wake_the_schedule_loop() {
    use play_core::wake::{ChannelWaker, Kind};
    let waker = ChannelWaker::new();
    let mut wakes = waker.subscribe(Kind::Schedule);
    let app = TestApp::with_waker(
        TestApp::default_config(),
        std::sync::Arc::new(play_api::testing::NoHosts),
        std::sync::Arc::new(waker),
    )
    .await;
    let id = create_template(&app, &app.admin, "nightly", "").await;
    create_version(&app, &app.admin, id, NIGHTLY, false).await;
    let schedule = app.get("/api/schedules", &app.admin).await.body[0]["id"].as_i64().unwrap();
    assert_eq!(wakes.try_recv(), Some(schedule), "a new version");
    patch(&app, &format!("/api/schedules/{schedule}"), &app.admin, Some(json!({"schedule": {"paused": true}}))).await;
    assert_eq!(wakes.try_recv(), Some(schedule), "a patch");
    create_version(&app, &app.admin, id, &NIGHTLY.replace("0 3", "0 4"), false).await;
    assert_eq!(wakes.try_recv(), Some(schedule), "another version");
}

/// A version that turns a schedule on says it runs nothing until it has a
/// Playroom, and how to give it one; the template's detail shows the
/// condition to its owner only (issue #52, item 6).
#[tokio::test]
async fn an_idle_schedule_is_announced_by_its_version_and_shown_on_its_template() {
    let app = TestApp::new().await;
    let id = create_template(&app, &app.admin, "nightly", "").await;
    let created = create_version(&app, &app.admin, id, NIGHTLY, true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let schedule = app.get("/api/schedules", &app.admin).await.body[0]["id"].as_i64().unwrap();
    let warning = created.body["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["path"] == "svc.schedule_config")
        .unwrap_or_else(|| panic!("no warning: {}", created.text));
    let message = warning["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("PATCH /api/schedules/{schedule}")) && message.contains("playroom_id"),
        "{message}"
    );

    let detail = app.get(&format!("/api/import_templates/{id}"), &app.admin).await;
    assert_eq!(detail.body["schedule"]["id"], schedule, "{}", detail.text);
    let condition = detail.body["schedule"]["condition"].as_str().unwrap();
    assert!(condition.contains(&format!("/api/schedules/{schedule}")), "{condition}");
    assert!(detail.body["trigger"].is_null(), "{}", detail.text);
    let stranger = other_account(&app, "stranger").await;
    let theirs = app.get(&format!("/api/import_templates/{id}"), &stranger).await;
    assert_eq!(theirs.status, StatusCode::OK, "a public template: {}", theirs.text);
    assert!(theirs.body["schedule"].is_null(), "another account sees no schedule: {}", theirs.text);

    // Given a Playroom, it acts: no condition, and no warning on the next version.
    activate_launch_setting(&app, "schedule", &format!("/api/schedules/{schedule}")).await;
    let detail = app.get(&format!("/api/import_templates/{id}"), &app.admin).await;
    assert!(detail.body["schedule"]["condition"].is_null(), "{}", detail.text);
    let again = create_version(&app, &app.admin, id, &NIGHTLY.replace("0 3", "0 4"), false).await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text);
    let idle = again.body["warnings"].as_array().unwrap().iter().any(|w| w["path"] == "svc.schedule_config");
    assert!(!idle, "{}", again.text);
}
