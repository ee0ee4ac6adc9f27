//! Rollout, hard restart (and its other name, recreate) over the real
//! router and store: what they record, what they refuse, and that a refused
//! request changes nothing. What the reconciler then does on a host is
//! tested end to end in `tests/e2e/playground_ops_e2e.rs`.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::{Method, StatusCode};
use play_api::testing::TestApp;
use serde_json::{Value, json};

const COMPOSE: &str = r#"
services:
  web:
    image: "play-test/busybox:${TAG:?TAG must be set}"
    ports: ["8080:80"]
  db:
    image: play-test/busybox:1
"#;

async fn setup() -> (TestApp, i64) {
    let app = TestApp::new().await;
    let spec = app
        .post("/api/playspecs", &app.admin, json!({"playspec": {"name": "shop", "base_compose_yaml": COMPOSE}}))
        .await;
    assert_eq!(spec.status, StatusCode::CREATED, "{}", spec.text);
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "box", "host": "127.0.0.1"}})).await;
    let r = app
        .post(
            "/api/playgrounds",
            &app.admin,
            json!({"playground": {"name": "pr", "playspec_id": spec.body["id"], "playroom_id": room.body["id"],
                                  "env_overrides": {"TAG": "1"}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    (app, r.body["id"].as_i64().unwrap())
}

async fn post(app: &TestApp, path: &str, body: Option<Value>) -> play_api::testing::Response {
    app.request(Method::POST, path, Some(&app.admin), body).await
}

#[tokio::test]
async fn create_refuses_overrides_that_leave_a_required_variable_unset() {
    let app = TestApp::new().await;
    let spec = app
        .post("/api/playspecs", &app.admin, json!({"playspec": {"name": "shop", "base_compose_yaml": COMPOSE}}))
        .await;
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "box", "host": "127.0.0.1"}})).await;
    let r = app
        .post(
            "/api/playgrounds",
            &app.admin,
            json!({"playground": {"name": "pr", "playspec_id": spec.body["id"], "playroom_id": room.body["id"]}}),
        )
        .await;
    let err = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(err["playspec.base_compose_yaml.services.web.image"][0].as_str().unwrap().contains("TAG"));
    assert_eq!(app.count("playgrounds").await, 0);
}

#[tokio::test]
async fn rollout_bumps_the_generation_and_applies_changed_settings() {
    let (app, id) = setup().await;
    let events = app.count("events").await;

    // No body: apply the same settings again.
    let r = post(&app, &format!("/api/playgrounds/{id}/rollout"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!((r.body["generation"].as_i64(), r.body["status"].as_str()), (Some(2), Some("in_progress")));
    assert_eq!(r.body["env_overrides"], json!({"TAG": "1"}));
    assert!(app.count("events").await > events, "playground.updated is recorded");

    // Changed overrides replace the old ones whole.
    let r = post(
        &app,
        &format!("/api/playgrounds/{id}/rollout"),
        Some(json!({"playground": {"env_overrides": {"TAG": "2", "MODE": "x"}}})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["generation"], 3);
    assert_eq!(r.body["env_overrides"], json!({"MODE": "x", "TAG": "2"}));
    let status = app.get(&format!("/api/playgrounds/{id}/status"), &app.admin).await;
    assert_eq!(status.body["creation_step"], "queued");
    // A change of settings never needs a recreation the caller must ask
    // for: the reconciler converges it (docs/contract.md, "needs_recreation").
    assert_eq!(status.body["needs_recreation"], false, "{}", status.text);
    let detail = app.get(&format!("/api/playgrounds/{id}"), &app.admin).await;
    assert_eq!(detail.body["needs_recreation"], false, "{}", detail.text);
}

#[tokio::test]
async fn a_refused_rollout_changes_nothing() {
    let (app, id) = setup().await;
    let path = format!("/api/playgrounds/{id}/rollout");
    let snapshot = async || {
        let mut body = app.get(&format!("/api/playgrounds/{id}"), &app.admin).await.body;
        for moving in ["time_remaining", "expiration_percentage"] {
            body.as_object_mut().unwrap().remove(moving);
        }
        body
    };
    let before = snapshot().await;
    let events = app.count("events").await;

    let bad = post(&app, &path, Some(json!({"playground": {"env_overrides": {"1BAD": "x"}}}))).await;
    let err = bad.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(err["playground.env_overrides.1BAD"].is_array(), "{err}");

    // Dropping TAG leaves `${TAG:?}` unset: the Compose could not run.
    let bad = post(&app, &path, Some(json!({"playground": {"env_overrides": {}}}))).await;
    bad.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");

    let bad = post(&app, &path, Some(json!({"playground": {"services": {"nope": {"env_vars": {}}}}}))).await;
    let err = bad.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(err["playground.services.nope"].is_array(), "{err}");

    let bad = post(&app, &path, Some(json!({"playground": {"service_subdomains": {"db": "x"}}}))).await;
    bad.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");

    // Fields a rollout cannot change are refused, not ignored.
    let bad = post(&app, &path, Some(json!({"playground": {"name": "renamed"}}))).await;
    assert!(bad.status.is_client_error(), "{}", bad.text);

    assert_eq!(before, snapshot().await);
    assert_eq!(app.count("events").await, events);
}

#[tokio::test]
async fn hard_restart_and_recreate_record_a_fresh_provisioning() {
    let (app, id) = setup().await;
    let r = post(&app, &format!("/api/playgrounds/{id}/hard_restart"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!((r.body["generation"].as_i64(), r.body["status"].as_str()), (Some(2), Some("in_progress")));
    let r = post(&app, &format!("/api/playgrounds/{id}/recreate"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["generation"], 3);
    let epoch: i64 = sqlx::query_scalar("SELECT restart_epoch FROM playgrounds WHERE id = $1")
        .bind(id)
        .fetch_one(app.store().pool())
        .await
        .unwrap();
    assert_eq!(epoch, 2, "each hard restart is a new epoch");
}

#[tokio::test]
async fn destroying_or_foreign_playgrounds_refuse_both() {
    let (app, id) = setup().await;
    let other = app.new_account("other").await;
    let token = app.key_for(other, play_model::scopes::ScopeSet::all(), None).await;
    for op in ["rollout", "hard_restart", "sleep", "wake"] {
        app.request(Method::POST, &format!("/api/playgrounds/{id}/{op}"), Some(&token), None)
            .await
            .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    }
    app.delete(&format!("/api/playgrounds/{id}"), &app.admin).await;
    for op in ["rollout", "hard_restart", "recreate", "sleep", "wake"] {
        post(&app, &format!("/api/playgrounds/{id}/{op}"), None)
            .await
            .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
    }
    let p = app.get(&format!("/api/playgrounds/{id}"), &app.admin).await;
    assert_eq!(p.body["status"], "destroying");
}

#[tokio::test]
async fn sleep_and_wake_record_the_desired_power_once() {
    let (app, id) = setup().await;
    let r = post(&app, &format!("/api/playgrounds/{id}/sleep"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!((r.body["power"].as_str(), r.body["power_reason"].as_str()), (Some("asleep"), Some("api")));
    assert_eq!(r.body["generation"], 2, "a change of desired state");
    assert_eq!(r.body["sleep_after"], Value::Null, "never, unless set (no installation default here)");
    // Asking again changes nothing and records nothing.
    let again = post(&app, &format!("/api/playgrounds/{id}/sleep"), None).await;
    assert_eq!(again.body["generation"], 2);
    let r = post(&app, &format!("/api/playgrounds/{id}/wake"), None).await;
    assert_eq!((r.body["power"].as_str(), r.body["generation"].as_i64()), (Some("awake"), Some(3)));
    let updates: Vec<String> = sqlx::query_scalar(
        "SELECT metadata FROM events WHERE entity_type = 'playground' AND action = 'updated' ORDER BY id",
    )
    .fetch_all(app.store().pool())
    .await
    .unwrap();
    assert_eq!(updates.len(), 2, "{updates:?}");
    assert!(updates[0].contains("\"sleep\"") && updates[1].contains("\"wake\""), "{updates:?}");
}

#[tokio::test]
async fn sleep_after_is_checked_and_a_job_never_sleeps() {
    let (app, _) = setup().await;
    let spec: i64 = sqlx::query_scalar("SELECT id FROM playspecs").fetch_one(app.store().pool()).await.unwrap();
    let room: i64 = sqlx::query_scalar("SELECT id FROM playrooms").fetch_one(app.store().pool()).await.unwrap();
    let create = |extra: Value| {
        let mut body = json!({"name": "x", "playspec_id": spec, "playroom_id": room, "env_overrides": {"TAG": "1"}});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({"playground": body})
    };
    for (bad, says) in [
        (json!({"sleep_after": "1s"}), "between 5s and 30days"),
        (json!({"sleep_after": "soon"}), "\"never\""),
        (json!({"sleep_after": "10m", "job_mode": true}), "never sleeps"),
    ] {
        let r = app.post("/api/playgrounds", &app.admin, create(bad)).await;
        let err = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert!(err["playground.sleep_after"][0].as_str().unwrap().contains(says), "{err}");
    }
    let r = app.post("/api/playgrounds", &app.admin, create(json!({"sleep_after": "90m"}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["sleep_after"], "1h 30m");
    let job = app.post("/api/playgrounds", &app.admin, create(json!({"name": "j", "job_mode": true}))).await;
    assert_eq!(job.status, StatusCode::CREATED, "{}", job.text);
    let id = job.body["id"].as_i64().unwrap();
    post(&app, &format!("/api/playgrounds/{id}/sleep"), None)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
}

#[tokio::test]
async fn a_playspec_gives_its_playgrounds_a_default_sleep_after() {
    let app = TestApp::new().await;
    let spec = app
        .post(
            "/api/playspecs",
            &app.admin,
            json!({"playspec": {"name": "shop", "base_compose_yaml": COMPOSE, "sleep_after": "20m"}}),
        )
        .await;
    assert_eq!((spec.status, spec.body["sleep_after"].as_str()), (StatusCode::CREATED, Some("20m")), "{}", spec.text);
    let bad = app
        .post(
            "/api/playspecs",
            &app.admin,
            json!({"playspec": {"name": "x", "base_compose_yaml": COMPOSE, "sleep_after": "2s"}}),
        )
        .await;
    let err = bad.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(err["playspec.sleep_after"][0].as_str().unwrap().contains("between"), "{err}");
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "box", "host": "127.0.0.1"}})).await;
    let body = |name: &str, extra: Value| {
        let mut p = json!({"name": name, "playspec_id": spec.body["id"], "playroom_id": room.body["id"],
            "env_overrides": {"TAG": "1"}});
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({"playground": p})
    };
    let inherits = app.post("/api/playgrounds", &app.admin, body("a", json!({}))).await;
    assert_eq!(inherits.body["sleep_after"], "20m", "{}", inherits.text);
    let own = app.post("/api/playgrounds", &app.admin, body("b", json!({"sleep_after": "never"}))).await;
    assert_eq!(own.body["sleep_after"], Value::Null, "its own `never` wins: {}", own.text);
}

#[tokio::test]
async fn a_rollout_changes_or_clears_the_playgrounds_own_sleep_after() {
    let (app, id) = setup().await;
    let r =
        post(&app, &format!("/api/playgrounds/{id}/rollout"), Some(json!({"playground": {"sleep_after": "1h"}}))).await;
    assert_eq!((r.status, r.body["sleep_after"].as_str()), (StatusCode::OK, Some("1h")), "{}", r.text);
    let r =
        post(&app, &format!("/api/playgrounds/{id}/rollout"), Some(json!({"playground": {"sleep_after": null}}))).await;
    assert_eq!((r.status, r.body["sleep_after"].clone()), (StatusCode::OK, Value::Null), "{}", r.text);
    let r =
        post(&app, &format!("/api/playgrounds/{id}/rollout"), Some(json!({"playground": {"sleep_after": "2s"}}))).await;
    let err = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(err["playground.sleep_after"][0].as_str().unwrap().contains("between"), "{err}");
}
