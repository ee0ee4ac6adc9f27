//! `job_result` and cached logs over the real router and store. The
//! completion is written with the store call the Playground reconciler uses
//! (the reconciler itself is tested end to end in
//! `tests/e2e/playground_job_e2e.rs`); no host is reached.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::collections::BTreeMap;
use std::time::Duration;

use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::model::quota::Resource;
use play_model::playground::ServiceStatus;
use play_model::playground::job::Completion;
use play_model::scopes::{Scope, ScopeSet};
use play_model::time;
use play_store::job_results;
use play_store::playground_status::Fence;
use play_store::quotas;
use play_store::{leases, playspecs};
use serde_json::{Value, json};

const COMPOSE: &str = r#"
services:
  run:
    image: play-test/busybox:1
    command: sh -c 'echo hello; exit 3'
  db:
    image: play-test/busybox:1
  debug:
    image: play-test/busybox:1
    profiles: [debug]
"#;

struct Fixture {
    app: TestApp,
    playspec: i64,
    playroom: i64,
}

async fn fixture() -> Fixture {
    let app = TestApp::new().await;
    let playspec = app
        .post("/api/playspecs", &app.admin, json!({"playspec": {"name": "job", "base_compose_yaml": COMPOSE}}))
        .await;
    assert_eq!(playspec.status, StatusCode::CREATED, "{}", playspec.text);
    let playroom =
        app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "box", "host": "127.0.0.1"}})).await;
    Fixture { playspec: playspec.body["id"].as_i64().unwrap(), playroom: playroom.body["id"].as_i64().unwrap(), app }
}

impl Fixture {
    async fn create(&self, name: &str, job_mode: bool) -> i64 {
        let body = json!({"playground": {"name": name, "playspec_id": self.playspec, "playroom_id": self.playroom,
                                         "job_mode": job_mode}});
        let r = self.app.post("/api/playgrounds", &self.app.admin, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        r.body["id"].as_i64().unwrap()
    }

    /// Records the job's completion as the reconciler does (exit code 3,
    /// 1500 lines of `run`, nothing from `db`); with `release`, also its
    /// host clean-up.
    async fn complete(&self, id: i64, release: bool) {
        let store = self.app.store();
        let lease = leases::claim(store, "playground", id, "test", time::now(), Duration::from_secs(60)).await;
        let fence = Fence { reconciler: "playground", owner: "test", token: lease.unwrap().unwrap().token };
        let run: Vec<String> = (1..=1500).map(|i| format!("line {i}")).collect();
        let logs = BTreeMap::from([("run".to_owned(), run), ("db".to_owned(), Vec::new())]);
        let watched = BTreeMap::from([("run".to_owned(), 3)]);
        let services: Vec<ServiceStatus> = Vec::new();
        let done = Completion {
            exit_code: 3,
            completed_at: time::now(),
            tail_logs: "line 1499\nline 1500",
            watched: &watched,
            logs: &logs,
            services: &services,
            keep_until: time::now() + chrono::Duration::hours(24),
        };
        assert!(job_results::record_completion(store, fence, id, &done).await.unwrap().is_held());
        if release {
            assert!(job_results::release_host(store, fence, id).await.unwrap().is_held());
        }
    }

    async fn locked(&self) -> Value {
        self.app.get(&format!("/api/playspecs/{}", self.playspec), &self.app.admin).await.body["locked"].clone()
    }
}

#[tokio::test]
async fn job_result_is_invalid_state_until_the_job_completes_and_404_for_others() {
    let f = fixture().await;
    let service = f.create("service", false).await;
    let job = f.create("job", true).await;

    let r = f.app.get(&format!("/api/playgrounds/{service}/job_result"), &f.app.admin).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
    assert!(r.body["error"]["message"].as_str().unwrap().contains("not in job mode"), "{}", r.text);
    let r = f.app.get(&format!("/api/playgrounds/{job}/job_result"), &f.app.admin).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
    assert!(r.body["error"]["message"].as_str().unwrap().contains("not completed yet"), "{}", r.text);
    f.app
        .get("/api/playgrounds/999999/job_result", &f.app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    f.app
        .get("/api/playgrounds/abc/job_result", &f.app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");

    f.complete(job, false).await;
    let r = f.app.get(&format!("/api/playgrounds/{job}/job_result"), &f.app.admin).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let mut keys: Vec<_> = r.body.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["completed_at", "exit_code", "tail_logs"]);
    assert_eq!((r.body["exit_code"].as_i64(), r.body["tail_logs"].as_str()), (Some(3), Some("line 1499\nline 1500")));
    let detail = f.app.get(&format!("/api/playgrounds/{job}"), &f.app.admin).await;
    assert_eq!(detail.body["status"], "complete");

    // Another account sees neither the Playground nor its result.
    let other = f.app.new_account("other").await;
    let token = f.app.key_for(other, [Scope::PlaygroundsRead].into_iter().collect::<ScopeSet>(), None).await;
    f.app
        .get(&format!("/api/playgrounds/{job}/job_result"), &token)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    f.app
        .get(&format!("/api/playgrounds/{job}/logs/run"), &token)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");

    // The route is in the OpenAPI document with its scope.
    let doc = f.app.request(axum::http::Method::GET, "/api/openapi.json", None, None).await;
    let op = &doc.body["paths"]["/api/playgrounds/{id}/job_result"]["get"];
    assert_eq!(op["security"][0]["bearer"][0], "playgrounds:read", "{op}");
    assert!(doc.body["components"]["schemas"]["JobResult"].is_object());
}

#[tokio::test]
async fn a_completed_job_serves_cached_logs_with_any_tail() {
    let f = fixture().await;
    let job = f.create("job", true).await;
    f.complete(job, true).await;
    let app = &f.app;
    let logs = |service: &str, tail: &str| {
        let path = format!("/api/playgrounds/{job}/logs/{service}{tail}");
        async move { app.get(&path, &app.admin).await }
    };

    let r = logs("run", "?tail=1000").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!((r.body["service"].as_str(), r.body["source"].as_str()), (Some("run"), Some("cached")));
    let lines = r.body["lines"].as_array().unwrap();
    assert_eq!((lines.len(), lines[0].as_str(), lines[999].as_str()), (1000, Some("line 501"), Some("line 1500")));
    let r = logs("run", "?tail=2").await;
    assert_eq!(r.body["lines"], json!(["line 1499", "line 1500"]));
    assert_eq!(logs("run", "").await.body["lines"].as_array().unwrap().len(), 100, "the default tail");
    // A service that ran silently, and one that never ran (a profile).
    for service in ["db", "debug"] {
        let r = logs(service, "").await;
        assert_eq!((r.status, r.body["source"].as_str()), (StatusCode::OK, Some("cached")), "{}", r.text);
        assert_eq!(r.body["lines"], json!([]));
    }
    logs("ghost", "").await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    // Above the contract's maximum reads the maximum (issue #52, item 8).
    for above in ["?tail=1001", "?tail=99999999999999999999999"] {
        let r = logs("run", above).await;
        assert_eq!((r.status, r.body["lines"].as_array().map(Vec::len)), (StatusCode::OK, Some(1000)), "{above}");
    }
    let bad = logs("run", "?tail=0").await;
    assert!(bad.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")["tail"].is_array());
}

#[tokio::test]
async fn a_released_job_frees_its_playspec_and_quota_and_delete_removes_it() {
    let f = fixture().await;
    quotas::set_account_limit(f.app.store(), f.app.account_id, Resource::Playgrounds, 1).await.unwrap();
    let job = f.create("job", true).await;
    assert_eq!(f.locked().await, true);
    let over = json!({"playground": {"name": "second", "playspec_id": f.playspec, "playroom_id": f.playroom}});
    f.app
        .post("/api/playgrounds", &f.app.admin, over.clone())
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "QUOTA_EXCEEDED");

    f.complete(job, true).await;
    assert_eq!(f.locked().await, false);
    assert_eq!(playspecs::holders(f.app.store(), f.playspec).await.unwrap(), 0);
    // Listed as complete, and no longer counted against the quota.
    let list = f.app.get("/api/playgrounds", &f.app.admin).await;
    assert_eq!(list.body[0]["status"], "complete", "{}", list.text);
    let second = f.app.post("/api/playgrounds", &f.app.admin, over).await;
    assert_eq!(second.status, StatusCode::CREATED, "{}", second.text);

    // DELETE of a complete job: 202, destroying; the result stays readable
    // until the reconciler deletes the row.
    let r = f.app.delete(&format!("/api/playgrounds/{job}"), &f.app.admin).await;
    assert_eq!((r.status, r.body["status"].as_str()), (StatusCode::ACCEPTED, Some("destroying")), "{}", r.text);
    let result = f.app.get(&format!("/api/playgrounds/{job}/job_result"), &f.app.admin).await;
    assert_eq!(result.body["exit_code"], 3, "{}", result.text);
}
