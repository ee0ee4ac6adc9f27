//! A Playground's detail and status are rendered once for all the callers
//! waiting at the same time (`play_api::rendered`); each still sees every
//! write committed before it asked, and only callers of the same account
//! share a body. The writes here are made around the API (as a reconciler
//! or another replica makes them), so the reads ask for a read of their own
//! (`Cache-Control: no-cache`); `recent_reads.rs` covers reads that accept
//! a recent body.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::http::{StatusCode, header};
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};

/// Readers keep renders of the same Playground in flight while the test
/// writes and reads: a caller that was handed a render already in flight
/// (started before its write) would miss the write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_after_a_write_sees_it_while_other_renders_are_in_flight() {
    let app = Arc::new(TestApp::new().await);
    let id = app.new_playground().await;
    let detail = format!("/api/playgrounds/{id}");
    let status = format!("/api/playgrounds/{id}/status");
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..8)
        .map(|n| {
            let (app, stop) = (app.clone(), stop.clone());
            let path = if n % 2 == 0 { detail.clone() } else { status.clone() };
            tokio::spawn(async move {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    assert_eq!(app.get_fresh(&path, &app.admin).await.status, StatusCode::OK);
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for n in 0..200 {
        let message = format!("write {n}");
        let name = format!("pg-{n}");
        sqlx::query("UPDATE playgrounds SET error_message = $1, name = $2 WHERE id = $3")
            .bind(&message)
            .bind(&name)
            .bind(id)
            .execute(app.store().pool())
            .await
            .unwrap();
        let seen = app.get_fresh(&status, &app.admin).await;
        assert_eq!(seen.body["error_message"], message.as_str(), "a status read after write {n} missed it");
        let seen = app.get_fresh(&detail, &app.admin).await;
        assert_eq!(seen.body["name"], name.as_str(), "a detail read after write {n} missed it");
        assert_eq!(seen.headers[header::CONTENT_TYPE], "application/json");
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.await.unwrap() > 0);
    }
}

/// While the owner's renders are in flight, another account asking for the
/// same id is not handed one (404), nor is a key without the read scope
/// (403: scopes are checked before any render).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renders_are_shared_only_within_the_account_and_after_the_scope_check() {
    let app = Arc::new(TestApp::new().await);
    let id = app.new_playground().await;
    let other_account = app.new_account("other").await;
    let stranger = app.key_for(other_account, ScopeSet::all(), None).await;
    let no_scope = app.key_for(app.account_id, [Scope::PlayspecsRead].into_iter().collect::<ScopeSet>(), None).await;
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..6)
        .map(|n| {
            let (app, stop) = (app.clone(), stop.clone());
            let path =
                if n % 2 == 0 { format!("/api/playgrounds/{id}") } else { format!("/api/playgrounds/{id}/status") };
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    assert_eq!(app.get_fresh(&path, &app.admin).await.status, StatusCode::OK);
                }
            })
        })
        .collect();
    for _ in 0..100 {
        for path in [format!("/api/playgrounds/{id}"), format!("/api/playgrounds/{id}/status")] {
            let theirs = app.get(&path, &stranger).await;
            theirs.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
            let unscoped = app.get(&path, &no_scope).await;
            assert_eq!(unscoped.status, StatusCode::FORBIDDEN, "{}", unscoped.text);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.await.unwrap();
    }
}
