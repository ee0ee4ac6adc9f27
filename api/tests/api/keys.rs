//! API key lifecycle over the real router and store.

use axum::http::{Method, StatusCode};
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};
use serde_json::json;

#[tokio::test]
async fn create_use_list_and_delete_a_key() {
    let app = TestApp::new().await;
    let created = app
        .post("/api/keys", &app.admin, json!({"api_key": {"label": "ci", "scopes": ["keys:manage", "playrooms:read"]}}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let token = created.body["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("play_"));
    assert!(created.body["client_id"].as_str().unwrap().starts_with("pk_live_"));
    assert_eq!(created.body["scopes"], json!(["playrooms:read", "keys:manage"]));
    assert_eq!(created.body["expires_at"], json!(null));
    let id = created.body["id"].as_i64().unwrap();

    // The new token works, and the listing never shows a secret.
    let listed = app.get("/api/keys", &token).await;
    assert_eq!(listed.status, StatusCode::OK);
    assert!(!listed.text.contains(&token));
    assert!(listed.body.as_array().unwrap().iter().all(|k| k.get("token").is_none()));
    let mine = listed.body.as_array().unwrap().iter().find(|k| k["id"] == id).unwrap();
    assert_eq!(mine["label"], "ci");

    // Deleted: the token stops working at once.
    assert_eq!(app.delete(&format!("/api/keys/{id}"), &app.admin).await.status, StatusCode::NO_CONTENT);
    app.get("/api/keys", &token).await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    app.delete(&format!("/api/keys/{id}"), &app.admin).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn an_expired_key_is_refused_and_an_unexpired_one_accepted() {
    let app = TestApp::new().await;
    let scopes: ScopeSet = [Scope::KeysManage].into_iter().collect();
    let past = play_model::time::now() - chrono::Duration::seconds(1);
    let expired = app.key_for(app.account_id, scopes, Some(past)).await;
    app.get("/api/keys", &expired).await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    let future = play_model::time::now() + chrono::Duration::hours(1);
    let valid = app.key_for(app.account_id, scopes, Some(future)).await;
    assert_eq!(app.get("/api/keys", &valid).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_key_created_with_an_expiry_shows_it_and_refuses_past_times() {
    let app = TestApp::new().await;
    let at = "2099-01-02T03:04:05.678Z";
    let r = app
        .post("/api/keys", &app.admin, json!({"api_key": {"label": "t", "scopes": ["keys:manage"], "expires_at": at}}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.body["expires_at"], at);
    let before = app.count("api_keys").await;
    let r = app
        .post(
            "/api/keys",
            &app.admin,
            json!({"api_key": {"label": "t", "scopes": ["keys:manage"], "expires_at": "2001-01-01T00:00:00Z"}}),
        )
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(details, &json!({"api_key.expires_at": ["must be in the future"]}));
    assert_eq!(app.count("api_keys").await, before);
}

#[tokio::test]
async fn malformed_unknown_and_wrong_scheme_credentials_are_401() {
    let app = TestApp::new().await;
    app.request(Method::GET, "/api/keys", None, None).await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    app.get("/api/keys", "not-a-token").await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    // Well-formed (valid checksum) but never issued.
    let stranger = play_model::token::generate().token;
    app.get("/api/keys", &stranger).await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    let request = axum::http::Request::builder()
        .uri("/api/keys")
        .header("authorization", format!("Basic {}", app.admin))
        .body(axum::body::Body::empty())
        .unwrap();
    app.send(request).await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
}

/// A verified key is cached; a token that differs from it only in a
/// checksum character (or in a character of its random part) is another
/// token and is refused, before and after the real one is cached.
#[tokio::test]
async fn near_copies_of_a_cached_token_are_401() {
    let app = TestApp::new().await;
    let token = app.admin.clone();
    let swap = |at: usize| {
        let mut bytes = token.clone().into_bytes();
        bytes[at] = if bytes[at] == b'a' { b'b' } else { b'a' };
        String::from_utf8(bytes).unwrap()
    };
    let (bad_checksum, bad_random) = (swap(token.len() - 1), swap(play_model::token::TOKEN_PREFIX.len()));
    for _ in 0..2 {
        assert_eq!(app.get("/api/keys", &token).await.status, StatusCode::OK);
        for near in [&bad_checksum, &bad_random] {
            app.get("/api/keys", near).await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
        }
    }
}

#[tokio::test]
async fn a_key_cannot_grant_scopes_its_creator_lacks() {
    let app = TestApp::new().await;
    let limited =
        app.key_for(app.account_id, [Scope::KeysManage, Scope::PlayroomsManage].into_iter().collect(), None).await;
    let before = app.count("api_keys").await;
    let r = app
        .post("/api/keys", &limited, json!({"api_key": {"label": "x", "scopes": ["playgrounds:write", "keys:manage"]}}))
        .await;
    let details = r.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert!(details["api_key.scopes"][0].as_str().unwrap().contains("playgrounds:write"), "{details}");
    assert_eq!(app.count("api_keys").await, before);
    // Implied scopes may be granted: playrooms:manage covers playrooms:read.
    let r = app.post("/api/keys", &limited, json!({"api_key": {"label": "x", "scopes": ["playrooms:read"]}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

#[tokio::test]
async fn keys_of_another_account_are_invisible_and_undeletable() {
    let app = TestApp::new().await;
    let other = app.new_account("other").await;
    let other_admin = app.key_for(other, ScopeSet::all(), None).await;
    let mine =
        app.post("/api/keys", &app.admin, json!({"api_key": {"label": "mine", "scopes": ["keys:manage"]}})).await;
    let id = mine.body["id"].as_i64().unwrap();

    let theirs = app.get("/api/keys", &other_admin).await;
    assert!(theirs.body.as_array().unwrap().iter().all(|k| k["id"] != id));
    app.delete(&format!("/api/keys/{id}"), &other_admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    // Still there for its owner.
    let listed = app.get("/api/keys", &app.admin).await;
    assert!(listed.body.as_array().unwrap().iter().any(|k| k["id"] == id));
}

#[tokio::test]
async fn the_key_quota_gives_quota_exceeded_and_writes_nothing() {
    let app = TestApp::with_config(play_api::ApiConfig {
        quotas: play_model::model::quota::QuotaLimits::parse("api_keys=2").unwrap(),
        ..play_api::ApiConfig::default()
    })
    .await;
    // The fixture's admin key is the first of two.
    let body = json!({"api_key": {"label": "x", "scopes": ["keys:manage"]}});
    assert_eq!(app.post("/api/keys", &app.admin, body.clone()).await.status, StatusCode::CREATED);
    let (keys, events) = (app.count("api_keys").await, app.count("events").await);
    app.post("/api/keys", &app.admin, body).await.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "QUOTA_EXCEEDED");
    assert_eq!((app.count("api_keys").await, app.count("events").await), (keys, events));
}

#[tokio::test]
async fn use_is_recorded_on_the_key() {
    let app = TestApp::new().await;
    assert_eq!(app.get("/api/keys", &app.admin).await.status, StatusCode::OK);
    // The touch runs in the background; poll briefly for it (no timing assertion).
    for _ in 0..100 {
        let listed = app.get("/api/keys", &app.admin).await;
        if listed.body[0]["last_used_at"].is_string() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("last_used_at was never recorded");
}

/// Finding 7 of issue #10: a key that expires could mint a key that never
/// does (or one that outlives it), and so outlive its own expiry.
#[tokio::test]
async fn a_key_cannot_mint_a_key_that_outlives_it() {
    let app = TestApp::new().await;
    let scopes: ScopeSet = [Scope::KeysManage, Scope::PlayroomsRead].into_iter().collect();
    let limit = play_model::time::truncate(play_model::time::now() + chrono::Duration::hours(1));
    let short = app.key_for(app.account_id, scopes, Some(limit)).await;
    let keys_before = app.count("api_keys").await;
    let body = |expires: serde_json::Value| json!({"api_key": {"label": "escape", "scopes": ["playrooms:read"], "expires_at": expires}});
    for expires in [json!(null), json!((limit + chrono::Duration::hours(1)).to_rfc3339())] {
        let r = app.post("/api/keys", &short, body(expires.clone())).await;
        let details = r.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
        assert!(details["api_key.expires_at"].is_array(), "{expires}: {}", r.text);
    }
    // Scopes beyond its own are refused as before.
    let r = app
        .post(
            "/api/keys",
            &short,
            json!({"api_key": {"label": "x", "scopes": ["playgrounds:write"], "expires_at": limit}}),
        )
        .await;
    r.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert_eq!(app.count("api_keys").await, keys_before, "nothing recorded");
    // Up to its own expiry, with a subset of its scopes, is fine.
    let r = app.post("/api/keys", &short, body(json!(limit.to_rfc3339()))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

/// Issue #16: verified keys are cached per replica; a revocation reaches
/// every replica through the store's revocation generation.
#[tokio::test]
async fn a_key_revoked_on_one_replica_is_refused_by_another_within_a_second() {
    let a = TestApp::new().await;
    let b = a.replica();
    let created = a.post("/api/keys", &a.admin, json!({"api_key": {"label": "ci", "scopes": ["keys:manage"]}})).await;
    let (token, id) = (created.body["token"].as_str().unwrap().to_owned(), created.body["id"].as_i64().unwrap());
    assert_eq!(b.get("/api/keys", &token).await.status, StatusCode::OK);

    // B serves the key from memory: a row removed behind play's back (no
    // revocation recorded) is still accepted there.
    let row: (i64, i64, i64, String, String, String, String, String) = sqlx::query_as(
        "SELECT account_id, user_id, id, label, client_id, token_digest, scopes, created_at FROM api_keys WHERE id = $1",
    )
    .bind(id)
    .fetch_one(a.store().pool())
    .await
    .unwrap();
    sqlx::query("DELETE FROM api_keys WHERE id = $1").bind(id).execute(a.store().pool()).await.unwrap();
    assert_eq!(b.get("/api/keys", &token).await.status, StatusCode::OK, "not cached");
    sqlx::query(
        "INSERT INTO api_keys (account_id, user_id, id, label, client_id, token_digest, scopes, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(row.0)
    .bind(row.1)
    .bind(row.2)
    .bind(&row.3)
    .bind(&row.4)
    .bind(&row.5)
    .bind(&row.6)
    .bind(&row.7)
    .execute(a.store().pool())
    .await
    .unwrap();

    // Revoked through A: refused by A at once, and by B within a second
    // (it reads the generation at most every 250 ms).
    assert_eq!(a.delete(&format!("/api/keys/{id}"), &a.admin).await.status, StatusCode::NO_CONTENT);
    a.get("/api/keys", &token).await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    b.get("/api/keys", &token).await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    // Other keys keep working on B.
    assert_eq!(b.get("/api/keys", &b.admin).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_cached_key_still_expires_on_time() {
    let app = TestApp::new().await;
    let soon = play_model::time::now() + chrono::Duration::milliseconds(600);
    let token = app.key_for(app.account_id, [Scope::KeysManage].into_iter().collect(), Some(soon)).await;
    assert_eq!(app.get("/api/keys", &token).await.status, StatusCode::OK);
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    app.get("/api/keys", &token).await.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
}
