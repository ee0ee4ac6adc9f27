//! A Playground's detail and status may be served again for a moment
//! (`play_api::recent`): a client's writes through this replica, over HTTP
//! or MCP, are seen at once; other writes (a reconciler's, another
//! replica's) within the staleness bound, or at once with
//! `Cache-Control: no-cache`; a zero bound reads the store every time.
//! The bound is set long here (an hour) wherever a test shows that a body is
//! served again, so that nothing depends on how fast the machine is.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::time::Duration;

use axum::http::StatusCode;
use play_api::ApiConfig;
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};
use serde_json::{Value, json};

const LONG: Duration = Duration::from_secs(3600);

async fn app(read_staleness: Duration) -> TestApp {
    TestApp::with_config(ApiConfig { read_staleness, ..TestApp::default_config() }).await
}

/// A write made around the API, as a reconciler makes it: `message` as the
/// status's `error_message`, and in the detail's `name`.
async fn write_around_the_api(app: &TestApp, id: i64, message: &str) {
    sqlx::query("UPDATE playgrounds SET error_message = $1, name = $1 WHERE id = $2")
        .bind(message)
        .bind(id)
        .execute(app.store().pool())
        .await
        .unwrap();
}

/// What the detail and the status say of the last [`write_around_the_api`]
/// (null before the first), which must be the same.
async fn error_message(app: &TestApp, id: i64) -> Value {
    let detail = app.get(&format!("/api/playgrounds/{id}"), &app.admin).await;
    let status = app.get(&format!("/api/playgrounds/{id}/status"), &app.admin).await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.text);
    assert_eq!(status.status, StatusCode::OK, "{}", status.text);
    let name = if detail.body["name"] == "pg" { Value::Null } else { detail.body["name"].clone() };
    assert_eq!(name, status.body["error_message"], "the detail and the status disagree");
    name
}

#[tokio::test]
async fn another_writer_is_seen_within_the_bound_or_at_once_with_no_cache() {
    let app = app(LONG).await;
    let id = app.new_playground().await;
    assert_eq!(error_message(&app, id).await, Value::Null);
    write_around_the_api(&app, id, "image pull failed").await;
    // Within the bound: the body rendered before the write.
    assert_eq!(error_message(&app, id).await, Value::Null);
    // A read of its own sees the write, and keeps its body for the others.
    let fresh = app.get_fresh(&format!("/api/playgrounds/{id}"), &app.admin).await;
    assert_eq!(fresh.body["name"], "image pull failed", "{}", fresh.text);
    let fresh = app.get_fresh(&format!("/api/playgrounds/{id}/status"), &app.admin).await;
    assert_eq!(fresh.body["error_message"], "image pull failed", "{}", fresh.text);
    assert_eq!(error_message(&app, id).await, "image pull failed");
}

#[tokio::test]
async fn a_body_older_than_the_bound_is_not_served() {
    let app = app(Duration::from_millis(100)).await;
    let id = app.new_playground().await;
    assert_eq!(error_message(&app, id).await, Value::Null);
    write_around_the_api(&app, id, "image pull failed").await;
    // The kept bodies were read before the write, so now more than the
    // bound ago.
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(error_message(&app, id).await, "image pull failed");
}

#[tokio::test]
async fn a_zero_bound_reads_the_store_every_time() {
    let app = app(Duration::ZERO).await;
    let id = app.new_playground().await;
    for n in 0..20 {
        assert_eq!(error_message(&app, id).await, if n == 0 { Value::Null } else { json!(format!("write {}", n - 1)) });
        write_around_the_api(&app, id, &format!("write {n}")).await;
    }
}

#[tokio::test]
async fn writes_through_this_replica_are_seen_at_once() {
    let app = app(LONG).await;
    let id = app.new_playground().await;
    let detail = format!("/api/playgrounds/{id}");
    let before = app.get(&detail, &app.admin).await;
    let rollout = json!({"playground": {"env_overrides": {"MODE": "blue"}}});
    let rolled = app.post(&format!("{detail}/rollout"), &app.admin, rollout).await;
    assert_eq!(rolled.status, StatusCode::OK, "{}", rolled.text);
    let after = app.get(&detail, &app.admin).await;
    assert_eq!(after.body["env_overrides"], json!({"MODE": "blue"}), "{}", after.text);
    assert_ne!(after.body["generation"], before.body["generation"]);

    let extended = app.post(&format!("{detail}/extend_expiration"), &app.admin, json!({"duration_hours": 3})).await;
    assert_eq!(extended.status, StatusCode::OK, "{}", extended.text);
    assert_eq!(app.get(&detail, &app.admin).await.body["expires_at"], extended.body["expires_at"]);

    // Even a write that is refused counts: it cannot have left anything
    // newer, and it must not be able to hide one either.
    let refused = app.post(&format!("{detail}/extend_expiration"), &app.admin, json!({"duration_hours": -1})).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text);

    assert_eq!(app.get(&format!("{detail}/status"), &app.admin).await.body["status"], "in_progress");
    let deleted = app.delete(&detail, &app.admin).await;
    assert!(deleted.status.is_success(), "{}", deleted.text);
    assert_eq!(app.get(&detail, &app.admin).await.body["status"], "destroying");
    assert_eq!(app.get(&format!("{detail}/status"), &app.admin).await.body["status"], "destroying");
}

/// This replica's reconcilers write status through the same store: a
/// client polling a Playground sees it at once, not up to the bound late
/// (issue #33: a no-op rollout looked 250 ms slower than its pass), and a
/// kept body of another Playground is still served.
#[tokio::test]
async fn this_replicas_reconciler_writes_are_seen_at_once() {
    use play_model::playground::{CreationStep, ServiceState, ServiceStatus};
    use play_store::fence::Fence;
    use play_store::{leases, playground_status};
    let app = app(LONG).await;
    let id = app.new_playground().await;
    let first = app.get(&format!("/api/playgrounds/{id}"), &app.admin).await.body;
    let body = json!({"playground": {"name": "pg2", "playspec_id": first["playspec_id"], "playroom_id": first["playroom_id"]}});
    let other = app.post("/api/playgrounds", &app.admin, body).await.body["id"].as_i64().unwrap();
    let other_status = format!("/api/playgrounds/{other}/status");
    assert_eq!(error_message(&app, id).await, Value::Null);
    assert_eq!(app.get(&other_status, &app.admin).await.body["error_message"], Value::Null);
    let lease = leases::claim(app.store(), "playground", id, "this-replica", play_model::time::now(), LONG)
        .await
        .unwrap()
        .unwrap();
    let fence = Fence { reconciler: "playground", owner: "this-replica", token: lease.token };
    let written = playground_status::record_error(app.store(), fence, id, CreationStep::Network, "pull failed", false)
        .await
        .unwrap();
    assert!(written.is_held());
    let status = app.get(&format!("/api/playgrounds/{id}/status"), &app.admin).await;
    assert_eq!(status.body["error_message"], "pull failed", "{}", status.text);
    // The pass that follows converges: `running`, in the detail at once.
    let web = ServiceStatus {
        name: "web".into(),
        status: ServiceState::Running,
        health: None,
        running: true,
        container: Some("c1".into()),
    };
    let converged = playground_status::record_observed(app.store(), fence, id, &[web], Some(1)).await.unwrap();
    assert!(converged.is_held());
    let detail = app.get(&format!("/api/playgrounds/{id}"), &app.admin).await;
    assert_eq!(detail.body["status"], "running", "{}", detail.text);
    // The other Playground's body is still the one kept: shown by a write
    // around the API that it does not see within the bound.
    write_around_the_api(&app, other, "unseen").await;
    assert_eq!(app.get(&other_status, &app.admin).await.body["error_message"], Value::Null);
}

#[tokio::test]
async fn writes_through_mcp_tools_are_seen_at_once() {
    let app = app(LONG).await;
    let id = app.new_playground().await;
    let detail = format!("/api/playgrounds/{id}");
    assert_eq!(app.get(&detail, &app.admin).await.body["env_overrides"], json!({}));
    let arguments = json!({"id": id, "env_overrides": {"MODE": "green"}});
    let called =
        app.mcp(Some(&app.admin), "tools/call", json!({"name": "rollout_playground", "arguments": arguments})).await;
    assert_eq!(called.status, StatusCode::OK, "{}", called.text);
    assert_ne!(called.body["result"]["isError"], true, "{}", called.text);
    assert_eq!(app.get(&detail, &app.admin).await.body["env_overrides"], json!({"MODE": "green"}));
}

#[tokio::test]
async fn another_replicas_write_is_seen_with_no_cache_and_its_own_at_once() {
    let app = app(LONG).await;
    let other = app.replica();
    let id = app.new_playground().await;
    let detail = format!("/api/playgrounds/{id}");
    assert_eq!(app.get(&detail, &app.admin).await.body["env_overrides"], json!({}));
    let rollout = json!({"playground": {"env_overrides": {"MODE": "blue"}}});
    let rolled = other.post(&format!("{detail}/rollout"), &other.admin, rollout).await;
    assert_eq!(rolled.status, StatusCode::OK, "{}", rolled.text);
    // The replica that made the write sees it; this one within the bound.
    assert_eq!(other.get(&detail, &other.admin).await.body["env_overrides"], json!({"MODE": "blue"}));
    assert_eq!(app.get(&detail, &app.admin).await.body["env_overrides"], json!({}));
    assert_eq!(app.get_fresh(&detail, &app.admin).await.body["env_overrides"], json!({"MODE": "blue"}));
}

/// A kept body goes only to its account, and only past the scope check.
#[tokio::test]
async fn kept_bodies_go_only_to_their_account_and_past_the_scope_check() {
    let app = app(LONG).await;
    let id = app.new_playground().await;
    let stranger = app.key_for(app.new_account("other").await, ScopeSet::all(), None).await;
    let no_scope = app.key_for(app.account_id, [Scope::PlayspecsRead].into_iter().collect::<ScopeSet>(), None).await;
    for path in [format!("/api/playgrounds/{id}"), format!("/api/playgrounds/{id}/status")] {
        assert_eq!(app.get(&path, &app.admin).await.status, StatusCode::OK);
        app.get(&path, &stranger).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
        app.get(&path, &no_scope).await.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
        app.get(&path, "play_not_a_key").await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    }
}

/// `Cache-Control` is read as RFC 9111 reads it: directives in any case,
/// among others, over several header lines; anything else (a value that is
/// not text, `max-age` above zero) accepts a recent body.
#[tokio::test]
async fn only_no_cache_and_max_age_zero_ask_for_a_read_of_its_own() {
    use axum::body::Body;
    use axum::http::{Request, header};
    let app = app(LONG).await;
    let id = app.new_playground().await;
    let path = format!("/api/playgrounds/{id}/status");
    assert_eq!(error_message(&app, id).await, Value::Null);
    let mut n = 0;
    let mut read = async |values: &[&[u8]]| {
        n += 1;
        write_around_the_api(&app, id, &format!("write {n}")).await;
        let mut request = Request::builder().uri(&path).header(header::AUTHORIZATION, format!("Bearer {}", app.admin));
        for value in values {
            request = request.header(header::CACHE_CONTROL, header::HeaderValue::from_bytes(value).unwrap());
        }
        let seen = app.send(request.body(Body::empty()).unwrap()).await;
        assert_eq!(seen.status, StatusCode::OK, "{}", seen.text);
        seen.body["error_message"] == json!(format!("write {n}"))
    };
    assert!(read(&[b"No-Cache"]).await);
    assert!(read(&[b"no-transform, max-age=0"]).await);
    assert!(read(&[b"no-store", b"no-cache"]).await);
    assert!(!read(&[b"max-age=60"]).await);
    assert!(!read(&[b"no-cache-please"]).await);
    assert!(!read(&[b"\xffno-cache"]).await);
    assert!(!read(&[]).await);
}
