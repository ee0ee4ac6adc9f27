//! `POST /api/scm_installations/github/webhook` over the real router and
//! store: deliveries signed as GitHub signs them change the installation's
//! state once; a bad signature, a repeated delivery id and a payload that
//! is not GitHub's change nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use play_api::testing::{Response, TestApp};
use play_model::model::event::Acting;
use play_model::model::quota::QuotaLimits;
use play_model::repository::Reach;
use play_model::scm::github_hook::WebhookSecret;
use play_model::webhook::delivery::spec_signature;
use play_store::{playzone_access, repositories};
use serde_json::json;

const SECRET: &str = "a webhook secret only GitHub and play know";
const PATH: &str = "/api/scm_installations/github/webhook";

async fn app() -> TestApp {
    let config = play_api::state::ApiConfig {
        github_webhook_secret: Some(WebhookSecret::new(SECRET)),
        ..TestApp::default_config()
    };
    TestApp::with_config(config).await
}

async fn deliver(app: &TestApp, event: &str, delivery: &str, body: &[u8], signature: Option<String>) -> Response {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(PATH)
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("user-agent", "GitHub-Hookshot/test");
    if let Some(signature) = signature {
        request = request.header("x-hub-signature-256", signature);
    }
    app.send(request.body(Body::from(body.to_vec())).unwrap()).await
}

async fn signed(app: &TestApp, event: &str, delivery: &str, body: serde_json::Value) -> Response {
    let bytes = body.to_string().into_bytes();
    deliver(app, event, delivery, &bytes, Some(spec_signature(SECRET, &bytes))).await
}

fn installation_event(action: &str) -> serde_json::Value {
    json!({
        "action": action,
        "installation": {"id": 42, "account": {"login": "acme", "type": "Organization"}},
        "sender": {"login": "octocat"},
    })
}

/// A GitHub installation (external id 42) of the app's account with one
/// repository `acme/web` and a Playzone attached to it; the Playzone's id.
async fn attached_playzone(app: &TestApp) -> i64 {
    let store = app.store();
    let mut tx = store.write().await.unwrap();
    sqlx::query(
        "INSERT INTO scm_installations (account_id, provider, external_id, created_at) \
         VALUES ($1, 'github', '42', '2026-11-27T00:00:00Z')",
    )
    .bind(app.account_id)
    .execute(&mut *tx)
    .await
    .unwrap();
    let row = sqlx::query("SELECT id FROM scm_installations WHERE provider = 'github'").fetch_one(&mut *tx).await;
    let installation_id: i64 = sqlx::Row::get(&row.unwrap(), "id");
    let row = sqlx::query(
        "INSERT INTO repositories (account_id, installation_id, owner, name, private, default_branch, created_at, \
         updated_at) VALUES ($1, $2, 'acme', 'web', 1, 'main', '2026-11-27T00:00:00Z', '2026-11-27T00:00:00Z') \
         RETURNING id",
    )
    .bind(app.account_id)
    .bind(installation_id)
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    let repository = repositories::get_in(&mut tx, app.account_id, sqlx::Row::get(&row, "id")).await.unwrap();
    let by = Acting::system(app.account_id);
    let url = "https://github.com/acme/web.git";
    let zone = playzone_access::attach_in(
        &mut tx,
        by,
        &repository,
        play_model::playzone::Attach { name: "web", scm_url: url, default_branch: None },
        &QuotaLimits::default(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    zone.id
}

async fn reach(app: &TestApp, playzone: i64) -> Reach {
    playzone_access::access(app.store(), &app.state.secrets, playzone).await.unwrap().reach
}

async fn status(app: &TestApp) -> String {
    let listed = app.get("/api/scm_installations", &app.admin).await;
    let github = listed.body.as_array().unwrap().iter().find(|i| i["provider"] == "github").cloned().unwrap();
    assert_eq!(github["external_id"], "42");
    github["status"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn without_a_configured_app_the_route_is_not_found() {
    let app = TestApp::new().await;
    let body = installation_event("deleted").to_string().into_bytes();
    let sent = deliver(&app, "installation", "d-1", &body, Some(spec_signature(SECRET, &body))).await;
    assert_eq!(sent.status, StatusCode::NOT_FOUND, "{}", sent.text);
    assert_eq!(app.count("scm_deliveries").await, 0);
}

#[tokio::test]
async fn a_delivery_that_is_not_signed_with_the_secret_changes_nothing() {
    let app = app().await;
    let zone = attached_playzone(&app).await;
    let body = installation_event("deleted").to_string().into_bytes();
    let forged = [
        None,
        Some(spec_signature("a guessed secret", &body)),
        Some(spec_signature(SECRET, b"another body")),
        Some(spec_signature(SECRET, &body).replace("sha256=", "sha1=")),
        Some("sha256=".to_owned()),
    ];
    for signature in forged {
        let sent = deliver(&app, "installation", "d-forged", &body, signature.clone()).await;
        assert_eq!(sent.status, StatusCode::UNAUTHORIZED, "{signature:?}: {}", sent.text);
        assert_eq!(sent.body["error"]["code"], "UNAUTHORIZED");
    }
    assert_eq!(app.count("scm_deliveries").await, 0);
    assert_eq!(status(&app).await, "active");
    assert!(matches!(reach(&app, zone).await, Reach::App { .. }), "still reached through the installation");
}

#[tokio::test]
async fn an_uninstall_stops_attached_playzones_and_a_redelivery_is_processed_once() {
    let app = app().await;
    let zone = attached_playzone(&app).await;
    let sent =
        signed(&app, "installation", "72d3162e-cc78-11e3-81ab-4c9367dc0958", installation_event("deleted")).await;
    assert_eq!(sent.status, StatusCode::ACCEPTED, "{}", sent.text);
    assert_eq!(sent.body, json!({"delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "duplicate": false}));
    assert_eq!(status(&app).await, "removed");
    match reach(&app, zone).await {
        Reach::Lost(message) => assert!(message.contains("removed") && message.contains("acme/web"), "{message}"),
        other => panic!("{other:?}"),
    }

    // The same delivery id again, even with another (validly signed)
    // action, is recorded already: nothing changes.
    let again =
        signed(&app, "installation", "72d3162e-cc78-11e3-81ab-4c9367dc0958", installation_event("created")).await;
    assert_eq!((again.status, &again.body["duplicate"]), (StatusCode::ACCEPTED, &json!(true)), "{}", again.text);
    assert_eq!(status(&app).await, "removed");
    assert_eq!(app.count("scm_deliveries").await, 1);

    let suspended = signed(&app, "installation", "d-2", installation_event("suspend")).await;
    assert_eq!(suspended.status, StatusCode::ACCEPTED);
    assert_eq!(status(&app).await, "suspended");
    signed(&app, "installation", "d-3", installation_event("unsuspend")).await;
    assert_eq!(status(&app).await, "active");
}

#[tokio::test]
async fn a_repository_removed_from_the_installation_is_lost_to_its_playzone() {
    let app = app().await;
    let zone = attached_playzone(&app).await;
    let removed = json!({
        "action": "removed",
        "installation": {"id": 42, "account": {"login": "acme"}},
        "repository_selection": "selected",
        "repositories_added": [],
        "repositories_removed": [{"id": 7, "name": "web", "full_name": "acme/web", "private": true}],
    });
    let sent = signed(&app, "installation_repositories", "d-repos", removed).await;
    assert_eq!(sent.status, StatusCode::ACCEPTED, "{}", sent.text);
    assert_eq!(app.count("repositories").await, 0);
    match reach(&app, zone).await {
        Reach::Lost(message) => assert!(message.contains("attach the repository again"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn missing_headers_and_foreign_payloads_are_bad_requests() {
    let app = app().await;
    let body = installation_event("deleted").to_string().into_bytes();
    let signature = Some(spec_signature(SECRET, &body));
    let no_delivery = deliver(&app, "installation", "", &body, signature.clone()).await;
    assert_eq!(no_delivery.status, StatusCode::BAD_REQUEST, "{}", no_delivery.text);
    let odd_delivery = deliver(&app, "installation", "../../etc", &body, signature).await;
    assert_eq!(odd_delivery.status, StatusCode::BAD_REQUEST);
    let not_github = br#"{"action":"deleted"}"#;
    let sent = deliver(&app, "installation", "d-x", not_github, Some(spec_signature(SECRET, not_github))).await;
    assert_eq!(sent.status, StatusCode::BAD_REQUEST, "{}", sent.text);
    assert_eq!(app.count("scm_deliveries").await, 0);

    // Events play does not act on yet are recorded and acknowledged.
    let ping = signed(&app, "ping", "d-ping", json!({"zen": "Keep it logically awesome.", "hook_id": 1})).await;
    assert_eq!(ping.status, StatusCode::ACCEPTED, "{}", ping.text);
    assert_eq!(app.count("scm_deliveries").await, 1);
}

#[tokio::test]
async fn delivery_ids_and_bodies_are_forgotten_after_the_retention() {
    use sha2::Digest as _;
    let app = app().await;
    let body = json!({"zen": "Half measures are as bad as nothing at all."});
    // The old row holds the very body sent below: forgotten with its id.
    let digest = format!("{:x}", sha2::Sha256::digest(body.to_string().as_bytes()));
    for (id, received, sha) in [("old", "2026-01-01T00:00:00Z", Some(digest)), ("recent", "2999-01-01T00:00:00Z", None)]
    {
        sqlx::query(
            "INSERT INTO scm_deliveries (provider, delivery_id, event, received_at, body_sha256) \
             VALUES ('github', $1, 'ping', $2, $3)",
        )
        .bind(id)
        .bind(received)
        .bind(sha)
        .execute(app.store().pool())
        .await
        .unwrap();
    }
    let ping = signed(&app, "ping", "new", body).await;
    assert_eq!((ping.status, &ping.body["duplicate"]), (StatusCode::ACCEPTED, &json!(false)), "{}", ping.text);
    let left = sqlx::query("SELECT delivery_id FROM scm_deliveries ORDER BY delivery_id")
        .fetch_all(app.store().pool())
        .await
        .unwrap();
    let left: Vec<String> = left.iter().map(|r| sqlx::Row::get(r, "delivery_id")).collect();
    assert_eq!(left, ["new", "recent"]);
}

#[tokio::test]
async fn a_push_on_github_is_recorded_once_and_asks_the_attached_playzone_to_sync() {
    let app = app().await;
    let zone = attached_playzone(&app).await;
    let generation = || async {
        let row = sqlx::query("SELECT generation FROM playzones WHERE id = $1").bind(zone);
        sqlx::Row::get::<i64, _>(&row.fetch_one(app.store().pool()).await.unwrap(), "generation")
    };
    let before = generation().await;
    let (old, new) = ("1".repeat(40), "2".repeat(40));
    let push = json!({
        "ref": "refs/heads/main", "before": old, "after": new, "created": false, "deleted": false, "forced": false,
        "repository": {"id": 7, "name": "Web", "full_name": "Acme/Web", "private": true},
        "pusher": {"name": "octocat"}, "installation": {"id": 42}, "commits": [],
    });
    let sent = signed(&app, "push", "d-push", push.clone()).await;
    assert_eq!(sent.status, StatusCode::ACCEPTED, "{}", sent.text);
    assert_eq!(generation().await, before + 1, "the attached Playzone is asked to sync");
    let query = sqlx::query("SELECT metadata FROM events WHERE event_type = 'repo.push'");
    let rows = query.fetch_all(app.store().pool()).await.unwrap();
    assert_eq!(rows.len(), 1, "one repo.push event");
    let metadata: serde_json::Value = serde_json::from_str(&sqlx::Row::get::<String, _>(&rows[0], "metadata")).unwrap();
    assert_eq!(
        (&metadata["branch"], &metadata["before"], &metadata["after"]),
        (&json!("main"), &json!(old), &json!(new))
    );
    assert_eq!(metadata["repository"], "acme/web");

    // GitHub's retry of the same delivery changes nothing.
    let again = signed(&app, "push", "d-push", push).await;
    assert_eq!(again.body["duplicate"], true);
    assert_eq!(generation().await, before + 1);
    assert_eq!(app.count("repository_pushes").await, 1);

    // A deleted branch, or another installation's repository, moves nothing.
    let deleted = json!({"ref": "refs/heads/main", "before": new, "after": "0".repeat(40), "deleted": true,
        "repository": {"full_name": "acme/web"}, "installation": {"id": 42}});
    signed(&app, "push", "d-deleted", deleted).await;
    let elsewhere = json!({"ref": "refs/heads/main", "before": old, "after": new,
        "repository": {"full_name": "acme/web"}, "installation": {"id": 43}});
    signed(&app, "push", "d-elsewhere", elsewhere).await;
    assert_eq!(generation().await, before + 1);
    assert_eq!(app.count("repository_pushes").await, 1);
}

/// Issue #49, item 14: `X-GitHub-Delivery` is not signed. Whoever saw one
/// signed delivery (a proxy's log, a leaked "Recent Deliveries" page) can
/// send its body again under a fresh delivery id, and the signature still
/// verifies. The digest of the signed body is remembered like the id: the
/// replay answers 202 `duplicate: true` and changes nothing.
#[tokio::test]
async fn a_signed_body_replayed_under_a_new_delivery_id_changes_nothing() {
    let app = app().await;
    let zone = attached_playzone(&app).await;
    let generation = || async {
        let row = sqlx::query("SELECT generation FROM playzones WHERE id = $1").bind(zone);
        sqlx::Row::get::<i64, _>(&row.fetch_one(app.store().pool()).await.unwrap(), "generation")
    };
    let before = generation().await;
    let push = json!({
        "ref": "refs/heads/main", "before": "1".repeat(40), "after": "2".repeat(40),
        "repository": {"id": 7, "full_name": "acme/web", "pushed_at": 1_764_547_200},
        "installation": {"id": 42},
    });
    let sent = signed(&app, "push", "d-push", push.clone()).await;
    assert_eq!(sent.body["duplicate"], false, "{}", sent.text);
    assert_eq!(generation().await, before + 1);

    let replay = signed(&app, "push", "d-replayed-push", push.clone()).await;
    assert_eq!(replay.status, StatusCode::ACCEPTED, "{}", replay.text);
    assert_eq!(replay.body, json!({"delivery": "d-replayed-push", "duplicate": true}));
    assert_eq!(generation().await, before + 1, "the replay asks for no sync");
    assert_eq!(app.count("repository_pushes").await, 1);

    // The attack that matters: an old `suspend` brought back after the
    // owner unsuspended the installation would stop every Playzone.
    let suspend = installation_event("suspend");
    signed(&app, "installation", "d-suspend", suspend.clone()).await;
    assert_eq!(status(&app).await, "suspended");
    signed(&app, "installation", "d-unsuspend", installation_event("unsuspend")).await;
    assert_eq!(status(&app).await, "active");
    let replay = signed(&app, "installation", "d-replayed-suspend", suspend.clone()).await;
    assert_eq!((replay.status, &replay.body["duplicate"]), (StatusCode::ACCEPTED, &json!(true)), "{}", replay.text);
    assert_eq!(status(&app).await, "active");
    assert!(matches!(reach(&app, zone).await, Reach::App { .. }), "still reached through the installation");

    // GitHub's own "Redeliver" (same id, same body) is a duplicate too;
    // and only the deliveries themselves were recorded.
    let redelivered = signed(&app, "installation", "d-suspend", suspend).await;
    assert_eq!(redelivered.body, json!({"delivery": "d-suspend", "duplicate": true}));
    assert_eq!(app.count("scm_deliveries").await, 3);
}

#[tokio::test]
async fn a_renamed_repository_keeps_its_playzone_and_visibility_follows_github() {
    let app = app().await;
    let zone = attached_playzone(&app).await;
    let event = |action: &str, full_name: &str, changes: serde_json::Value| {
        json!({"action": action, "repository": {"id": 7, "name": "x", "full_name": full_name, "private": true},
            "installation": {"id": 42}, "changes": changes, "sender": {"login": "octocat"}})
    };
    let renamed = event("renamed", "acme/Shop", json!({"repository": {"name": {"from": "web"}}}));
    let sent = signed(&app, "repository", "d-rename", renamed).await;
    assert_eq!(sent.status, StatusCode::ACCEPTED, "{}", sent.text);
    let shown = app.get(&format!("/api/playzones/{zone}"), &app.admin).await;
    assert_eq!(shown.body["scm_url"], "https://github.com/acme/shop.git", "{}", shown.text);
    let listed = repositories::list(app.store(), app.account_id).await.unwrap();
    assert_eq!(listed[0].full_name.to_string(), "acme/shop");
    assert!(matches!(reach(&app, zone).await, Reach::App { .. }), "still reached through the installation");

    signed(&app, "repository", "d-public", event("publicized", "acme/shop", json!({}))).await;
    let shown = app.get(&format!("/api/playzones/{zone}"), &app.admin).await;
    assert_eq!(shown.body["private"], false, "{}", shown.text);

    // Deleted on GitHub: the record goes and the Playzone says why.
    signed(&app, "repository", "d-deleted", event("deleted", "acme/shop", json!({}))).await;
    assert_eq!(app.count("repositories").await, 0);
    assert!(matches!(reach(&app, zone).await, Reach::Lost(m) if m.contains("attach the repository again")));
}
