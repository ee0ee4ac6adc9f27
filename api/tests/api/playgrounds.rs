//! Playground desired state and Launch over the real router and store.
//! Convergence on real hosts is the reconciler's and is tested end to end
//! separately.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::{Method, StatusCode};
use play_api::testing::TestApp;
use serde_json::{Value, json};

const COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    ports: ["8080:80"]
  worker:
    build: ./worker
  db:
    image: play-test/busybox:1
"#;

struct Fixture {
    app: TestApp,
    playspec: i64,
    playroom: i64,
}

async fn fixture() -> Fixture {
    let app = TestApp::new().await;
    let playspec = app
        .post("/api/playspecs", &app.admin, json!({"playspec": {"name": "shop", "base_compose_yaml": COMPOSE}}))
        .await;
    assert_eq!(playspec.status, StatusCode::CREATED, "{}", playspec.text);
    let playroom =
        app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "box", "host": "127.0.0.1"}})).await;
    Fixture { playspec: playspec.body["id"].as_i64().unwrap(), playroom: playroom.body["id"].as_i64().unwrap(), app }
}

impl Fixture {
    async fn create(&self, extra: Value) -> play_api::testing::Response {
        let mut body = json!({"name": "pr-42", "playspec_id": self.playspec, "playroom_id": self.playroom});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        self.app.post("/api/playgrounds", &self.app.admin, json!({"playground": body})).await
    }
}

#[tokio::test]
async fn create_records_desired_state_and_locks_the_playspec() {
    let f = fixture().await;
    let r = f
        .create(json!({"env_overrides": {"FEATURE_X": "on"}, "service_subdomains": {"web": "shop-pr-42"},
                       "services": {"worker": {"git_config": {"branch_name": "feature/x"}, "env_vars": {"QUEUE": "q1"}}}}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["id"].as_i64().unwrap();
    assert_eq!(r.body["status"], "in_progress");
    let project = r.body["compose_project"].as_str().unwrap();
    assert!(project.starts_with("play-") && project.ends_with(&format!("-{id}-pr-42")), "{project}");
    assert_eq!(r.body["env_overrides"], json!({"FEATURE_X": "on"}));
    assert_eq!(r.body["service_branches"], json!({"worker": {"branch_name": "feature/x"}}));
    assert_eq!((r.body["playspec_id"].as_i64(), r.body["playspec_name"].as_str()), (Some(f.playspec), Some("shop")));
    let remaining = r.body["time_remaining"].as_f64().unwrap();
    assert!((8.0 * 3600.0 - 60.0..=8.0 * 3600.0).contains(&remaining), "{remaining}");
    assert!(r.body["expiration_percentage"].as_f64().unwrap() < 1.0);
    assert_eq!((r.body["generation"].as_i64(), r.body["observed_generation"].as_i64()), (Some(1), Some(0)));

    let status = f.app.get(&format!("/api/playgrounds/{id}/status"), &f.app.admin).await;
    assert_eq!(status.body["creation_step"], "queued");
    assert_eq!(status.body["creation_step_label"], "Queued");
    assert_eq!(status.body["error_message"], Value::Null);
    assert_eq!(status.body["services"], json!([]));

    let list = f.app.get("/api/playgrounds", &f.app.admin).await;
    let mut keys: Vec<_> = list.body[0].as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "created_at",
            "expires_at",
            "id",
            "job_mode",
            "name",
            "playspec_id",
            "playspec_name",
            "service_branches",
            "status",
            "urls"
        ]
    );

    // The Playspec is now locked.
    let spec = f.app.get(&format!("/api/playspecs/{}", f.playspec), &f.app.admin).await;
    assert_eq!(spec.body["locked"], true);
    f.app
        .request(
            Method::PATCH,
            &format!("/api/playspecs/{}", f.playspec),
            Some(&f.app.admin),
            Some(json!({"playspec": {"description": "x"}})),
        )
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "LOCKED");

    let events = play_store::events::list_for_account(f.app.store(), f.app.account_id).await.unwrap();
    let created = events.iter().find(|e| e.event_type == "playground.created").unwrap();
    assert_eq!(created.entity_id, id);
    assert_eq!(created.playground_name.as_deref(), Some("pr-42"));
}

#[tokio::test]
async fn job_mode_playgrounds_live_one_hour() {
    let f = fixture().await;
    let r = f.create(json!({"job_mode": true, "watched_services": ["worker"]})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let remaining = r.body["time_remaining"].as_f64().unwrap();
    assert!((3600.0 - 60.0..=3600.0).contains(&remaining), "{remaining}");
    assert_eq!(r.body["watched_services"], json!(["worker"]));
}

#[tokio::test]
async fn bad_input_is_refused_field_by_field_and_nothing_is_recorded() {
    let f = fixture().await;
    let before = (f.app.count("playgrounds").await, f.app.count("events").await);
    let r = f
        .create(json!({
            "name": "",
            "watched_services": ["web"],
            "env_overrides": {"1BAD": "x", "GOOD": "y", "ALSO-BAD": "z"},
            "service_subdomains": {"ghost": "a", "db": "b", "web": "Not_Valid"},
            "services": {"ghost": {}, "web": {"git_config": {"branch_name": "x"}}, "worker": {"git_config": {"create_branch": true}, "env_vars": {"x y": "1"}}}
        }))
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let mut keys: Vec<_> = details.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "playground.env_overrides.1BAD",
            "playground.env_overrides.ALSO-BAD",
            "playground.name",
            "playground.service_subdomains.db",
            "playground.service_subdomains.ghost",
            "playground.service_subdomains.web",
            "playground.services.ghost",
            "playground.services.web.git_config",
            "playground.services.worker.env_vars.x y",
            "playground.services.worker.git_config.base_branch_name",
            "playground.watched_services",
        ]
    );
    let r = f.create(json!({"unknown": true})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let r = f.app.post("/api/playgrounds", &f.app.admin, json!({"playground": {"name": "x"}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(details.as_object().unwrap().len(), 2, "{details}");
    assert_eq!((f.app.count("playgrounds").await, f.app.count("events").await), before);
}

#[tokio::test]
async fn unknown_or_foreign_playspecs_and_playrooms_are_404() {
    let f = fixture().await;
    f.create(json!({"playspec_id": 999_999})).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    f.create(json!({"playroom_id": 999_999})).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    let other = f.app.new_account("other").await;
    let token = f.app.key_for(other, play_model::scopes::ScopeSet::all(), None).await;
    let body = json!({"playground": {"name": "x", "playspec_id": f.playspec, "playroom_id": f.playroom}});
    f.app.post("/api/playgrounds", &token, body).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    assert_eq!(f.app.count("playgrounds").await, 0);
}

#[tokio::test]
async fn the_compose_policy_follows_the_playroom() {
    let app = TestApp::new().await;
    let yaml = "services:\n  x:\n    image: a\n    privileged: true\n";
    let spec =
        app.post("/api/playspecs", &app.admin, json!({"playspec": {"name": "p", "base_compose_yaml": yaml}})).await;
    let spec_id = spec.body["id"].as_i64().unwrap();
    for (name, trusted, expected) in
        [("plain", false, StatusCode::UNPROCESSABLE_ENTITY), ("trusted", true, StatusCode::CREATED)]
    {
        let room = app
            .post("/api/playrooms", &app.admin, json!({"playroom": {"name": name, "host": "h", "trusted": trusted}}))
            .await;
        let r = app
            .post(
                "/api/playgrounds",
                &app.admin,
                json!({"playground": {"name": name, "playspec_id": spec_id, "playroom_id": room.body["id"]}}),
            )
            .await;
        assert_eq!(r.status, expected, "{}", r.text);
        if !trusted {
            assert!(
                r.body["error"]["details"]["playspec.base_compose_yaml.services.x.privileged"].is_array(),
                "{}",
                r.text
            );
        }
    }
}

#[tokio::test]
async fn extend_expiration_moves_expires_at_within_bounds() {
    let f = fixture().await;
    let id = f.create(json!({})).await.body["id"].as_i64().unwrap();
    let path = format!("/api/playgrounds/{id}/extend_expiration");
    let before = f.app.get(&format!("/api/playgrounds/{id}"), &f.app.admin).await.body["expires_at"].clone();
    let r = f.app.request(Method::POST, &path, Some(&f.app.admin), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let parse = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert_eq!(parse(&r.body["expires_at"]) - parse(&before), chrono::Duration::hours(8));
    assert!(r.body["time_remaining"].as_f64().unwrap() > 15.0 * 3600.0);
    let r = f.app.post(&path, &f.app.admin, json!({"duration_hours": 2})).await;
    assert_eq!(parse(&r.body["expires_at"]) - parse(&before), chrono::Duration::hours(10));
    for bad in [json!({"duration_hours": 0}), json!({"duration_hours": -3}), json!({"duration_hours": 100_000})] {
        f.app.post(&path, &f.app.admin, bad).await.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    }
    f.app
        .post(&path, &f.app.admin, json!({"duration_hours": "soon"}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    f.app
        .post("/api/playgrounds/999999/extend_expiration", &f.app.admin, json!({}))
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn delete_is_202_destroying_and_idempotent() {
    let f = fixture().await;
    let id = f.create(json!({})).await.body["id"].as_i64().unwrap();
    let r = f.app.delete(&format!("/api/playgrounds/{id}"), &f.app.admin).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["status"], "destroying");
    assert_eq!(r.body["generation"], 2);
    let events = f.app.count("events").await;
    let again = f.app.delete(&format!("/api/playgrounds/{id}"), &f.app.admin).await;
    assert_eq!((again.status, again.body["generation"].as_i64()), (StatusCode::ACCEPTED, Some(2)));
    assert_eq!(f.app.count("events").await, events, "a repeated delete records nothing");
    f.app
        .post(&format!("/api/playgrounds/{id}/extend_expiration"), &f.app.admin, json!({}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
    // Still locked until the host confirms the Playground is gone.
    let spec = f.app.get(&format!("/api/playspecs/{}", f.playspec), &f.app.admin).await;
    assert_eq!(spec.body["locked"], true);
}

#[tokio::test]
async fn the_playground_quota_applies() {
    let app = TestApp::with_config(play_api::ApiConfig {
        quotas: play_model::model::quota::QuotaLimits::parse("playgrounds=1").unwrap(),
        ..TestApp::default_config()
    })
    .await;
    let f = Fixture { playspec: 0, playroom: 0, app };
    let spec = f
        .app
        .post("/api/playspecs", &f.app.admin, json!({"playspec": {"name": "s", "base_compose_yaml": COMPOSE}}))
        .await;
    let room = f.app.post("/api/playrooms", &f.app.admin, json!({"playroom": {"name": "r", "host": "h"}})).await;
    let body =
        |n: &str| json!({"playground": {"name": n, "playspec_id": spec.body["id"], "playroom_id": room.body["id"]}});
    assert_eq!(f.app.post("/api/playgrounds", &f.app.admin, body("a")).await.status, StatusCode::CREATED);
    f.app
        .post("/api/playgrounds", &f.app.admin, body("b"))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "QUOTA_EXCEEDED");
}

#[tokio::test]
async fn launch_creates_a_playspec_and_optionally_a_playground() {
    let f = fixture().await;
    let r = f.app.post("/api/launch", &f.app.admin, json!({"name": "quick", "compose_yaml": COMPOSE})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert!(r.body.get("playground_id").is_none());
    assert_eq!(r.body["playzones_created"], json!([]));
    let spec = f.app.get(&format!("/api/playspecs/{}", r.body["playspecs_created"]), &f.app.admin).await;
    assert_eq!(spec.body["services"].as_array().unwrap().len(), 3);

    let r = f
        .app
        .post("/api/launch", &f.app.admin, json!({"name": "full", "compose_yaml": COMPOSE, "create_playground": true, "playroom_id": f.playroom, "persist_volumes": true}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let playground = f.app.get(&format!("/api/playgrounds/{}", r.body["playground_id"]), &f.app.admin).await;
    assert_eq!(playground.body["status"], "in_progress");
    assert_eq!(playground.body["playspec_id"], r.body["playspecs_created"]);
    let spec = f.app.get(&format!("/api/playspecs/{}", r.body["playspecs_created"]), &f.app.admin).await;
    assert_eq!((spec.body["locked"].as_bool(), spec.body["persist_volumes"].as_bool()), (Some(true), Some(true)));
    assert!(playground.body["agent"].is_null(), "no agent named: {}", playground.body);

    // The contract's `agent` is recorded on the Playground: its detail and
    // its `playground.created` event (issue #52, item 4).
    let body = json!({"name": "assisted", "compose_yaml": COMPOSE, "create_playground": true,
                      "playroom_id": f.playroom, "agent": "claude-code"});
    let r = f.app.post("/api/launch", &f.app.admin, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["playground_id"].as_i64().unwrap();
    let playground = f.app.get(&format!("/api/playgrounds/{id}"), &f.app.admin).await;
    assert_eq!(playground.body["agent"], "claude-code", "{}", playground.body);
    let events = play_store::events::list_for_account(f.app.store(), f.app.account_id).await.unwrap();
    let created = events.iter().find(|e| e.event_type == "playground.created" && e.entity_id == id).unwrap();
    assert_eq!(created.metadata.as_ref().unwrap()["agent"], "claude-code");
}

#[tokio::test]
async fn launch_refuses_bad_input_and_writes_nothing() {
    let f = fixture().await;
    let before = (f.app.count("playspecs").await, f.app.count("playgrounds").await, f.app.count("events").await);
    let r = f
        .app
        .post(
            "/api/launch",
            &f.app.admin,
            json!({"name": "x", "compose_yaml": COMPOSE, "create_playground": true, "agent": "claude"}),
        )
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details.get("playroom_id").is_some() && details.get("agent").is_none(), "{details}");
    // An agent is recorded on the Playground: without one it is refused;
    // a name outside the allowlist is refused as the attack it may be.
    for (agent, create) in [("claude-code", false), ("$(id)", true), ("Claude", true), ("a\nb", true), ("", true)] {
        let body = json!({"name": "x", "compose_yaml": COMPOSE, "create_playground": create,
                          "playroom_id": f.playroom, "agent": agent});
        let r = f.app.post("/api/launch", &f.app.admin, body).await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert_eq!(details.as_object().unwrap().keys().collect::<Vec<_>>(), ["agent"], "{agent:?}: {details}");
    }
    let r = f.app.post("/api/launch", &f.app.admin, json!({"name": "x", "compose_yaml": "services: [1, 2]"})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let r = f
        .app
        .post(
            "/api/launch",
            &f.app.admin,
            json!({"name": "x", "compose_yaml": COMPOSE, "create_playground": true, "playroom_id": 999_999}),
        )
        .await;
    r.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    // A second launch with a taken name fails whole: no Playground either.
    let ok = f.app.post("/api/launch", &f.app.admin, json!({"name": "dup", "compose_yaml": COMPOSE})).await;
    assert_eq!(ok.status, StatusCode::CREATED);
    let counts = (f.app.count("playspecs").await, f.app.count("playgrounds").await, f.app.count("events").await);
    let r = f
        .app
        .post(
            "/api/launch",
            &f.app.admin,
            json!({"name": "dup", "compose_yaml": COMPOSE, "create_playground": true, "playroom_id": f.playroom}),
        )
        .await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!((f.app.count("playspecs").await, f.app.count("playgrounds").await, f.app.count("events").await), counts);
    assert_eq!(before.1, 0);
}

#[tokio::test]
async fn changes_of_desired_state_wake_the_playground_reconciler() {
    use play_core::wake::ChannelWaker;
    let waker = ChannelWaker::new();
    let mut wakes = waker.subscribe(play_core::wake::Kind::Playground);
    let app = TestApp::with_waker(
        TestApp::default_config(),
        std::sync::Arc::new(play_api::testing::NoHosts),
        std::sync::Arc::new(waker),
    )
    .await;
    let spec =
        app.post("/api/playspecs", &app.admin, json!({"playspec": {"name": "s", "base_compose_yaml": COMPOSE}})).await;
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "r", "host": "h"}})).await;
    let r = app
        .post(
            "/api/playgrounds",
            &app.admin,
            json!({"playground": {"name": "a", "playspec_id": spec.body["id"], "playroom_id": room.body["id"]}}),
        )
        .await;
    let id = r.body["id"].as_i64().unwrap();
    assert_eq!(wakes.try_recv(), Some(id), "create wakes the reconciler");
    app.post(&format!("/api/playgrounds/{id}/extend_expiration"), &app.admin, json!({})).await;
    assert_eq!(wakes.try_recv(), Some(id), "extend moves the expiry timer");
    app.delete(&format!("/api/playgrounds/{id}"), &app.admin).await;
    assert_eq!(wakes.try_recv(), Some(id), "delete wakes the reconciler");
    let bad = app.post("/api/playgrounds", &app.admin, json!({"playground": {"name": ""}})).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(wakes.try_recv(), None, "a refused request wakes nothing");
    let launched = app
        .post(
            "/api/launch",
            &app.admin,
            json!({"name": "l", "compose_yaml": COMPOSE, "create_playground": true, "playroom_id": room.body["id"]}),
        )
        .await;
    assert_eq!(wakes.try_recv(), launched.body["playground_id"].as_i64());
}
