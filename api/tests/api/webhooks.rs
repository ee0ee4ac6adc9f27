//! Webhook endpoints over the real router and store: every route, scopes,
//! isolation between accounts, validation field by field, secrecy at rest,
//! and the delivery history the dispatcher writes.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::{Method, StatusCode};
use play_api::ApiConfig;
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};
use play_model::webhook::model::Attempt;
use play_model::webhook::{AllowEntry, DeliveryStatus, UrlPolicy};
use play_store::events;
use play_store::webhook_deliveries;
use serde_json::{Value, json};

const URL: &str = "https://hooks.example.com/play";

async fn create(app: &TestApp, body: Value) -> Value {
    let r = app.post("/api/webhook_endpoints", &app.admin, json!({"webhook_endpoint": body})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body
}

async fn patch(app: &TestApp, id: i64, token: &str, body: Value) -> play_api::testing::Response {
    app.request(
        Method::PATCH,
        &format!("/api/webhook_endpoints/{id}"),
        Some(token),
        Some(json!({"webhook_endpoint": body})),
    )
    .await
}

fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<_> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

async fn refused(app: &TestApp, body: Value) -> Vec<String> {
    let before = app.count("webhook_endpoints").await;
    let r = app.post("/api/webhook_endpoints", &app.admin, json!({"webhook_endpoint": body})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").clone();
    assert_eq!(app.count("webhook_endpoints").await, before, "a refused create wrote a row");
    keys(&details)
}

#[tokio::test]
async fn create_show_list_update_delete() {
    let app = TestApp::new().await;
    let r = create(
        &app,
        json!({"url": URL, "events": ["playground.created", "playground.destroyed"],
               "description": "CI", "event_filters": {"playground.created": [3, 1, 3]}}),
    )
    .await;
    let id = r["id"].as_i64().unwrap();
    assert_eq!((r["enabled"].as_bool(), r["failure_count"].as_i64()), (Some(true), Some(0)));
    assert_eq!(r["url"], URL);
    assert_eq!(r["description"], "CI");
    assert_eq!(r["event_filters"], json!({"playground.created": [1, 3]}));
    let secret = r["secret"].as_str().unwrap().to_owned();
    assert_eq!(secret.len(), 64);
    assert!(secret.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')), "{secret}");

    let shown = app.get(&format!("/api/webhook_endpoints/{id}"), &app.admin).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert_eq!(shown.body["secret"], secret.as_str());

    let list = app.get("/api/webhook_endpoints", &app.admin).await;
    assert_eq!(list.body.as_array().unwrap().len(), 1);
    assert!(!list.text.contains(&secret), "the list must not carry secrets");
    assert_eq!(
        keys(&list.body[0]),
        [
            "created_at",
            "description",
            "disabled_reason",
            "enabled",
            "event_filters",
            "events",
            "failure_count",
            "id",
            "updated_at",
            "url"
        ]
    );

    let r = patch(&app, id, &app.admin, json!({"enabled": false, "description": "paused"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!((r.body["enabled"].as_bool(), r.body["description"].as_str()), (Some(false), Some("paused")));
    assert_eq!(r.body["events"], json!(["playground.created", "playground.destroyed"]));
    assert!(!r.text.contains(&secret));
    // Narrowing events drops the filters of the types removed.
    let r = patch(&app, id, &app.admin, json!({"events": ["playground.destroyed"]})).await;
    assert_eq!(
        (r.body["events"].clone(), r.body["event_filters"].clone()),
        (json!(["playground.destroyed"]), json!({}))
    );
    // A new secret is used from then on.
    let new_secret = "n".repeat(40);
    assert_eq!(patch(&app, id, &app.admin, json!({"secret": new_secret})).await.status, StatusCode::OK);
    let shown = app.get(&format!("/api/webhook_endpoints/{id}"), &app.admin).await;
    assert_eq!(shown.body["secret"], new_secret.as_str());

    assert_eq!(app.delete(&format!("/api/webhook_endpoints/{id}"), &app.admin).await.status, StatusCode::NO_CONTENT);
    app.get(&format!("/api/webhook_endpoints/{id}"), &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.delete(&format!("/api/webhook_endpoints/{id}"), &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn a_given_secret_is_kept_and_sealed_at_rest() {
    use sqlx::Row;
    let app = TestApp::new().await;
    let secret = "s3cr3t-".repeat(6);
    let r = create(&app, json!({"url": URL, "events": ["webhook.test"], "secret": secret})).await;
    assert_eq!(r["secret"], secret.as_str());
    let stored: String = sqlx::query("SELECT secret FROM webhook_endpoints WHERE id = $1")
        .bind(r["id"].as_i64().unwrap())
        .fetch_one(app.store().pool())
        .await
        .unwrap()
        .try_get("secret")
        .unwrap();
    assert!(stored.starts_with("v1:") && !stored.contains(&secret) && !stored.contains("s3cr3t"), "{stored}");
}

#[tokio::test]
async fn event_types_are_listed() {
    let app = TestApp::new().await;
    let r = app.get("/api/webhook_endpoints/event_types", &app.admin).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let types: Vec<&str> = r.body.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for t in
        ["playground.created", "playground.drift.detected", "playroom.destroyed", "api_key.created", "webhook.test"]
    {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    assert!(types.contains(&"agent.created"), "the contract's types play never fires are listed too");
}

/// Every event type of the contract's table (`Events`, "Event types by
/// entity"), as written there: an endpoint subscribed to all of them is
/// created (issue #52, item 5), also those of entities play does not have.
const CONTRACT_EVENT_TYPES: &[&str] = &[
    "playground.created",
    "playground.updated",
    "playground.destroyed",
    "playground.status.changed",
    "playground.error",
    "playground.expired",
    "playground.drift.detected",
    "playroom.created",
    "playroom.updated",
    "playroom.destroyed",
    "playzone.created",
    "playzone.updated",
    "playzone.destroyed",
    "playspec.created",
    "playspec.updated",
    "playspec.destroyed",
    "agent.created",
    "agent.updated",
    "agent.destroyed",
    "agent.authenticated",
    "agent.revoked",
    "template.created",
    "template.updated",
    "template.destroyed",
    "artefact.created",
    "artefact.destroyed",
    "feedback.created",
    "feedback.updated",
    "feedback.destroyed",
    "mutter.created",
    "mutter.updated",
    "api_key.created",
    "api_key.destroyed",
    "webhook.test",
];

#[tokio::test]
async fn an_endpoint_may_subscribe_to_every_type_the_contract_lists() {
    let app = TestApp::new().await;
    let endpoint = create(&app, json!({"url": URL, "events": CONTRACT_EVENT_TYPES})).await;
    let events: Vec<&str> = endpoint["events"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(events, CONTRACT_EVENT_TYPES);
    let listed = app.get("/api/webhook_endpoints/event_types", &app.admin).await.body;
    for t in CONTRACT_EVENT_TYPES {
        assert!(listed.as_array().unwrap().iter().any(|v| v == t), "{t} is not in event_types");
    }
}

#[tokio::test]
async fn every_bad_field_is_refused_and_named() {
    let app = TestApp::new().await;
    let ok = |url: &str| json!({"url": url, "events": ["webhook.test"]});
    for url in [
        "not a url",
        "hooks.example.com/play",
        "javascript:alert(1)",
        "http://hooks.example.com/play",
        "https://127.0.0.1/",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/",
        "https://10.0.0.1/",
        "https://localhost/",
        "https://user:pass@hooks.example.com/",
    ] {
        assert_eq!(refused(&app, ok(url)).await, ["webhook_endpoint.url"], "{url}");
    }
    let long = format!("https://hooks.example.com/{}", "a".repeat(3000));
    assert_eq!(refused(&app, ok(&long)).await, ["webhook_endpoint.url"]);
    assert_eq!(refused(&app, json!({"url": URL, "events": []})).await, ["webhook_endpoint.events"]);
    assert_eq!(refused(&app, json!({"url": URL, "events": ["agent.born"]})).await, ["webhook_endpoint.events[0]"]);
    assert_eq!(
        refused(&app, json!({"url": URL, "events": ["webhook.test"], "event_filters": {"playground.created": [1]}}))
            .await,
        ["webhook_endpoint.event_filters.playground.created"]
    );
    assert_eq!(
        refused(&app, json!({"url": URL, "events": ["playground.created"], "event_filters": {"nope": [1]}})).await,
        ["webhook_endpoint.event_filters.nope"]
    );
    assert_eq!(
        refused(
            &app,
            json!({"url": URL, "events": ["playground.created"], "event_filters": {"playground.created": [-4]}})
        )
        .await,
        ["webhook_endpoint.event_filters.playground.created[0]"]
    );
    // A string id is a type error, reported under the field's path.
    let fields = refused(
        &app,
        json!({"url": URL, "events": ["playground.created"], "event_filters": {"playground.created": ["7"]}}),
    )
    .await;
    assert!(fields.iter().all(|f| f.starts_with("webhook_endpoint.event_filters")), "{fields:?}");
    assert_eq!(
        refused(&app, json!({"url": URL, "events": ["webhook.test"], "secret": "too-short"})).await,
        ["webhook_endpoint.secret"]
    );
    assert_eq!(
        refused(&app, json!({"url": URL, "events": ["webhook.test"], "description": "d".repeat(10_000)})).await,
        ["webhook_endpoint.description"]
    );
    // Missing required fields and unknown ones.
    let r =
        app.post("/api/webhook_endpoints", &app.admin, json!({"webhook_endpoint": {"events": ["webhook.test"]}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details.to_string().contains("url"), "{details}");
    let fields = refused(&app, json!({"url": URL, "events": ["webhook.test"], "enabled": false})).await;
    assert!(!fields.is_empty());

    // The same rules on update, and nothing changes.
    let id = create(&app, ok(URL)).await["id"].as_i64().unwrap();
    let r = patch(&app, id, &app.admin, json!({"url": "https://10.1.2.3/", "secret": "x"})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(keys(details), ["webhook_endpoint.secret", "webhook_endpoint.url"]);
    let r = patch(&app, id, &app.admin, json!({"event_filters": {"playground.created": [1]}})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(app.get(&format!("/api/webhook_endpoints/{id}"), &app.admin).await.body["url"], URL);
}

#[tokio::test]
async fn the_operator_opens_http_and_private_hosts() {
    let config = ApiConfig {
        webhook_urls: UrlPolicy::default().allow(AllowEntry::parse("127.0.0.1").unwrap()),
        ..TestApp::default_config()
    };
    let app = TestApp::with_config(config).await;
    create(&app, json!({"url": "https://127.0.0.1:9000/hook", "events": ["webhook.test"]})).await;
    assert_eq!(
        refused(&app, json!({"url": "https://127.0.0.2/", "events": ["webhook.test"]})).await,
        ["webhook_endpoint.url"]
    );
    assert_eq!(
        refused(&app, json!({"url": "http://127.0.0.1:9000/", "events": ["webhook.test"]})).await,
        ["webhook_endpoint.url"]
    );
    let config = ApiConfig {
        webhook_urls: UrlPolicy { allow_http: true, ..UrlPolicy::default() }
            .allow(AllowEntry::parse("127.0.0.1").unwrap()),
        ..TestApp::default_config()
    };
    let app = TestApp::with_config(config).await;
    create(&app, json!({"url": "http://127.0.0.1:9000/hook", "events": ["webhook.test"]})).await;
}

#[tokio::test]
async fn scopes_are_enforced() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"url": URL, "events": ["webhook.test"]})).await["id"].as_i64().unwrap();
    let key = |scope| app.key_for(app.account_id, [scope].into_iter().collect::<ScopeSet>(), None);
    let (reader, writer, deleter) =
        (key(Scope::WebhooksRead).await, key(Scope::WebhooksWrite).await, key(Scope::WebhooksDelete).await);
    let other = key(Scope::PlayroomsManage).await;
    let body = json!({"webhook_endpoint": {"url": URL, "events": ["webhook.test"]}});
    let calls: Vec<(Method, String, Option<Value>, &str)> = vec![
        (Method::GET, "/api/webhook_endpoints".into(), None, "read"),
        (Method::GET, format!("/api/webhook_endpoints/{id}"), None, "read"),
        (Method::GET, "/api/webhook_endpoints/event_types".into(), None, "read"),
        (Method::GET, format!("/api/webhook_endpoints/{id}/deliveries"), None, "read"),
        (Method::POST, "/api/webhook_endpoints".into(), Some(body), "write"),
        (Method::PATCH, format!("/api/webhook_endpoints/{id}"), Some(json!({"webhook_endpoint": {}})), "write"),
        (Method::POST, format!("/api/webhook_endpoints/{id}/test"), None, "write"),
        (Method::DELETE, format!("/api/webhook_endpoints/{id}"), None, "delete"),
    ];
    for (method, path, body, needs) in calls {
        for (token, has) in [(&reader, "read"), (&writer, "write"), (&deleter, "delete"), (&other, "none")] {
            let r = app.request(method.clone(), &path, Some(token), body.clone()).await;
            if has == needs {
                assert!(r.status.is_success(), "{method} {path} with {has}: {}", r.text);
            } else {
                r.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
            }
        }
    }
    let r = app
        .request(Method::POST, &format!("/api/webhook_endpoints/{id}/deliveries/1/redeliver"), Some(&reader), None)
        .await;
    r.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
}

#[tokio::test]
async fn another_accounts_endpoints_are_not_found() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"url": URL, "events": ["webhook.test"]})).await["id"].as_i64().unwrap();
    let other_account = app.new_account("other").await;
    let other = app.key_for(other_account, ScopeSet::all(), None).await;
    assert_eq!(app.get("/api/webhook_endpoints", &other).await.body, json!([]));
    for (method, path, body) in [
        (Method::GET, format!("/api/webhook_endpoints/{id}"), None),
        (Method::PATCH, format!("/api/webhook_endpoints/{id}"), Some(json!({"webhook_endpoint": {"enabled": false}}))),
        (Method::POST, format!("/api/webhook_endpoints/{id}/test"), None),
        (Method::GET, format!("/api/webhook_endpoints/{id}/deliveries"), None),
        (Method::POST, format!("/api/webhook_endpoints/{id}/deliveries/1/redeliver"), None),
        (Method::DELETE, format!("/api/webhook_endpoints/{id}"), None),
    ] {
        app.request(method, &path, Some(&other), body).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    }
    assert_eq!(app.get(&format!("/api/webhook_endpoints/{id}"), &app.admin).await.body["enabled"], true);
}

#[tokio::test]
async fn the_quota_bounds_endpoints_per_account() {
    let mut config = TestApp::default_config();
    config.quotas.set(play_model::model::quota::Resource::WebhookEndpoints, 1);
    let app = TestApp::with_config(config).await;
    create(&app, json!({"url": URL, "events": ["webhook.test"]})).await;
    let r = app
        .post(
            "/api/webhook_endpoints",
            &app.admin,
            json!({"webhook_endpoint": {"url": URL, "events": ["webhook.test"]}}),
        )
        .await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "QUOTA_EXCEEDED");
}

#[tokio::test]
async fn re_enabling_resets_the_failure_count() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"url": URL, "events": ["webhook.test"]})).await["id"].as_i64().unwrap();
    // What the dispatcher does after ten failures.
    sqlx::query("UPDATE webhook_endpoints SET enabled = 0, failure_count = 10, disabled_reason = $1 WHERE id = $2")
        .bind("10 consecutive failed deliveries")
        .bind(id)
        .execute(app.store().pool())
        .await
        .unwrap();
    let shown = app.get(&format!("/api/webhook_endpoints/{id}"), &app.admin).await;
    assert_eq!((shown.body["failure_count"].as_i64(), shown.body["enabled"].as_bool()), (Some(10), Some(false)));
    assert_eq!(shown.body["disabled_reason"], "10 consecutive failed deliveries");
    // Another change leaves the count alone.
    let r = patch(&app, id, &app.admin, json!({"description": "x"})).await;
    assert_eq!(r.body["failure_count"], 10);
    let r = patch(&app, id, &app.admin, json!({"enabled": true})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        (r.body["enabled"].as_bool(), r.body["failure_count"].as_i64(), r.body["disabled_reason"].clone()),
        (Some(true), Some(0), Value::Null)
    );
}

#[tokio::test]
async fn test_records_a_webhook_test_event_for_that_endpoint() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"url": URL, "events": ["playground.created"]})).await["id"].as_i64().unwrap();
    let r = app.post(&format!("/api/webhook_endpoints/{id}/test"), &app.admin, json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["event_type"], "webhook.test");
    let event_id = r.body["event_id"].as_i64().unwrap();
    let all = events::list_for_account(app.store(), app.account_id).await.unwrap();
    let event = all.iter().find(|e| e.id == event_id).unwrap();
    assert_eq!((event.event_type.as_str(), event.entity_id), ("webhook.test", id));
    let metadata: String = sqlx::query_scalar("SELECT metadata FROM events WHERE id = $1")
        .bind(event_id)
        .fetch_one(app.store().pool())
        .await
        .unwrap();
    assert_eq!(serde_json::from_str::<Value>(&metadata).unwrap(), json!({"webhook_endpoint_id": id}));
}

#[tokio::test]
async fn deliveries_are_listed_newest_first_and_can_be_redelivered() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"url": URL, "events": ["webhook.test"]})).await["id"].as_i64().unwrap();
    let other = create(&app, json!({"url": URL, "events": ["webhook.test"]})).await["id"].as_i64().unwrap();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let event =
            app.post(&format!("/api/webhook_endpoints/{id}/test"), &app.admin, json!({})).await.body["event_id"]
                .as_i64()
                .unwrap();
        ids.push(webhook_deliveries::ensure(app.store(), id, event).await.unwrap());
        // Idempotent: the dispatcher may write the same pair twice after a crash.
        assert_eq!(webhook_deliveries::ensure(app.store(), id, event).await.unwrap(), *ids.last().unwrap());
    }
    let event = app.post(&format!("/api/webhook_endpoints/{other}/test"), &app.admin, json!({})).await.body["event_id"]
        .as_i64()
        .unwrap();
    let foreign = webhook_deliveries::ensure(app.store(), other, event).await.unwrap();
    let attempt = Attempt {
        status: DeliveryStatus::Abandoned,
        next_attempt_at: None,
        status_code: Some(500),
        error: Some("HTTP 500".into()),
        duration_ms: 12,
        response_snippet: Some("oops".into()),
    };
    webhook_deliveries::record_attempt(app.store(), ids[0], attempt).await.unwrap();

    let r = app.get(&format!("/api/webhook_endpoints/{id}/deliveries"), &app.admin).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let listed: Vec<i64> = r.body.as_array().unwrap().iter().map(|d| d["id"].as_i64().unwrap()).collect();
    assert_eq!(listed, [ids[2], ids[1], ids[0]]);
    assert_eq!(
        keys(&r.body[0]),
        [
            "attempts",
            "created_at",
            "event_id",
            "event_type",
            "id",
            "last_duration_ms",
            "last_error",
            "last_status_code",
            "next_attempt_at",
            "response_snippet",
            "status"
        ]
    );
    let oldest = &r.body[2];
    assert_eq!(
        (oldest["status"].as_str(), oldest["attempts"].as_i64(), oldest["last_status_code"].as_i64()),
        (Some("abandoned"), Some(1), Some(500))
    );
    assert_eq!(
        (oldest["event_type"].as_str(), oldest["response_snippet"].as_str()),
        (Some("webhook.test"), Some("oops"))
    );
    let page = app.get(&format!("/api/webhook_endpoints/{id}/deliveries?limit=1&before={}", ids[2]), &app.admin).await;
    assert_eq!(page.body.as_array().unwrap().len(), 1);
    assert_eq!(page.body[0]["id"].as_i64(), Some(ids[1]));
    let r = app.get(&format!("/api/webhook_endpoints/{id}/deliveries?limit=0"), &app.admin).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");

    let r = app
        .request(
            Method::POST,
            &format!("/api/webhook_endpoints/{id}/deliveries/{}/redeliver", ids[0]),
            Some(&app.admin),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!((r.body["status"].as_str(), r.body["attempts"].as_i64()), (Some("pending"), Some(1)));
    assert!(r.body["next_attempt_at"].is_string());
    // Another endpoint's delivery, and one that does not exist.
    for delivery in [foreign, 999_999] {
        app.request(
            Method::POST,
            &format!("/api/webhook_endpoints/{id}/deliveries/{delivery}/redeliver"),
            Some(&app.admin),
            None,
        )
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    }
    // Deleting the endpoint removes its history.
    app.delete(&format!("/api/webhook_endpoints/{id}"), &app.admin).await;
    assert_eq!(app.count("webhook_deliveries").await, 1);
}
