//! Server-side apply (`POST /api/apply`) under concurrency, over the real
//! router and store: applies of one object never interleave, identical
//! ones make one revision, a stale version is a conflict, and a dry run
//! holds no write lock while it validates.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use crate::support::apply::{COMPOSE, apply, object};
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};
use serde_json::{Value, json};

fn two_objects(tag: &str) -> Value {
    json!({"objects": [
        object("Playspec", "web", json!({"description": tag, "base_compose_yaml": COMPOSE})),
        object("WebhookEndpoint", "ci", json!({"url": "https://hooks.example.com/play", "events": ["playground.created"], "description": tag})),
    ]})
}

/// Two applies of the same objects at once: each wins or gets 409, and
/// the objects end up wholly as one of them said, never half and half.
#[tokio::test]
async fn concurrent_applies_of_one_object_never_interleave() {
    let app = TestApp::new().await;
    for round in 0..5 {
        let (a, b) = (format!("a{round}"), format!("b{round}"));
        let (ra, rb) = tokio::join!(
            apply(&app, &app.admin, two_objects(&a), false),
            apply(&app, &app.admin, two_objects(&b), false)
        );
        for r in [&ra, &rb] {
            assert!(r.status == StatusCode::OK || r.status == StatusCode::CONFLICT, "{} {}", r.status, r.text);
            if r.status == StatusCode::CONFLICT {
                r.assert_error(StatusCode::CONFLICT, "CONFLICT");
            }
        }
        assert!(ra.status == StatusCode::OK || rb.status == StatusCode::OK, "one of them wins");
        let objects = app.get("/api/apply/objects", &app.admin).await;
        let id_of = |kind: &str| {
            objects.body.as_array().unwrap().iter().find(|o| o["kind"] == kind).unwrap()["id"].as_i64().unwrap()
        };
        let spec = app.get(&format!("/api/playspecs/{}", id_of("Playspec")), &app.admin).await;
        let hook = app.get(&format!("/api/webhook_endpoints/{}", id_of("WebhookEndpoint")), &app.admin).await;
        let (spec_tag, hook_tag) =
            (spec.body["description"].as_str().unwrap(), hook.body["description"].as_str().unwrap());
        assert_eq!(spec_tag, hook_tag, "both objects come from the same apply");
        assert!(spec_tag == a || spec_tag == b, "{spec_tag}");
    }
}

/// The same new content applied twice at once: one revision, and the
/// loser (if they overlapped) is a 409, not a name clash.
#[tokio::test]
async fn concurrent_identical_applies_make_one_revision() {
    let app = TestApp::new().await;
    let (ra, rb) = tokio::join!(
        apply(&app, &app.admin, two_objects("same"), false),
        apply(&app, &app.admin, two_objects("same"), false)
    );
    for r in [&ra, &rb] {
        assert!(r.status == StatusCode::OK || r.status == StatusCode::CONFLICT, "{} {}", r.status, r.text);
    }
    assert_eq!(app.count("playspecs").await, 1);
}

/// The version check itself: a write planned from an older row is refused.
#[tokio::test]
async fn a_write_from_a_stale_version_is_a_conflict() {
    use play_store::applied;
    let app = TestApp::new().await;
    assert_eq!(apply(&app, &app.admin, two_objects("one"), false).await.status, StatusCode::OK);
    let rows = applied::list(app.store(), app.account_id).await.unwrap();
    let stale = rows[0].clone();
    let fields = play_model::apply::model::AppliedFields {
        apply_set: None,
        object_id: stale.object_id,
        labels: stale.labels.clone(),
        spec: stale.spec.clone(),
        digest: stale.digest.clone(),
        live: stale.live.clone(),
        revision: stale.revision.clone(),
    };
    let mut tx = app.store().write().await.unwrap();
    applied::update_in(&mut tx, &stale, &fields).await.unwrap();
    let again = applied::update_in(&mut tx, &stale, &fields).await;
    assert!(matches!(again, Err(play_core::Error::Conflict(_))), "{again:?}");
    let insert = applied::insert_in(&mut tx, app.account_id, stale.kind, &stale.name, &fields).await;
    assert!(matches!(insert, Err(play_core::Error::Conflict(_))), "{insert:?}");
}

/// Issue #27, item 8: a dry run needs read scopes only, yet it used to
/// validate every object inside the write transaction, holding SQLite's
/// only write lock through the whole set. Here the dry run's CPU work is
/// kept waiting (every permit of the CPU pool held) while another tenant
/// writes: the write must go through at once. Before the fix the dry run
/// waited inside its transaction, and the write failed after the store's
/// busy timeout.
#[tokio::test]
async fn a_dry_run_holds_no_write_lock_while_it_validates() {
    let app = TestApp::new().await;
    let reader = app.key_for(app.account_id, [Scope::PlayspecsRead].into_iter().collect(), None).await;
    let objects: Vec<Value> =
        (0..20).map(|n| object("Playspec", &format!("web-{n}"), json!({"base_compose_yaml": COMPOSE}))).collect();
    let other = app.new_account("other").await;
    let writer = app.key_for(other, ScopeSet::all(), None).await;

    let held = app.state.cpu.hold_all().await;
    let dry_run = apply(&app, &reader, json!({"objects": objects}), true);
    let other_tenant = async {
        let started = std::time::Instant::now();
        while app.state.cpu.waiting() == 0 {
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "the dry run never reached its CPU work");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        // A write with no CPU work of its own (the pool is held).
        let body = json!({"playroom": {"name": "mine", "host": "h"}});
        let r = app.request(axum::http::Method::POST, "/api/playrooms", Some(&writer), Some(body)).await;
        drop(held);
        r
    };
    let (dry, written) = tokio::join!(dry_run, other_tenant);
    assert_eq!(written.status, StatusCode::CREATED, "another tenant's write waited on a dry run: {}", written.text);
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.text);
    assert_eq!(dry.body["results"].as_array().unwrap().len(), 20);
}

/// Issue #49, item 13: a read-only key looping large dry runs kept other
/// tenants' writes waiting for seconds. SQLite's busy handler polls with
/// growing sleeps, so a write that had waited a while polled seldom, and
/// the next dry run, polling often as it had just begun, took the lock
/// before it. A dry run now starts only once no writer waits: here a
/// tenant's write has waited long for a held lock when a dry run arrives
/// just before the lock is released, and the write must go first, in
/// every round. (PostgreSQL has no single write lock: nothing to order.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_waits_for_the_writers_already_waiting() {
    let app = TestApp::new().await;
    if app.store().backend() != play_store::Backend::Sqlite {
        return;
    }
    let reader = app.key_for(app.account_id, [Scope::PlayspecsRead].into_iter().collect(), None).await;
    let objects: Vec<Value> =
        (0..20).map(|n| object("Playspec", &format!("web-{n}"), json!({"base_compose_yaml": COMPOSE}))).collect();
    let other = app.new_account("other").await;
    let writer = app.key_for(other, ScopeSet::all(), None).await;
    for round in 0..3 {
        let held = app.store().write().await.unwrap();
        let write = async {
            let body = json!({"playroom": {"name": format!("room-{round}"), "host": "h"}});
            let r = app.request(axum::http::Method::POST, "/api/playrooms", Some(&writer), Some(body)).await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
            std::time::Instant::now()
        };
        let dry_run = async {
            while app.store().writers_waiting() == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            // The write is deep in the busy handler's longer sleeps.
            tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
            let r = apply(&app, &reader, json!({"objects": objects}), true).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
            std::time::Instant::now()
        };
        let release = async {
            while app.store().writers_waiting() == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1560)).await;
            held.rollback().await.unwrap();
        };
        let (written_at, dry_at, ()) = tokio::join!(write, dry_run, release);
        assert!(written_at < dry_at, "round {round}: the dry run took the lock before the waiting write");
    }
}
