//! Every generic error path answers with the exact envelope and changes
//! nothing.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use play_api::ApiConfig;
use play_api::testing::TestApp;
use serde_json::json;

#[tokio::test]
async fn unknown_route_is_404_with_the_envelope() {
    let app = TestApp::new().await;
    for path in ["/api/nope", "/nope", "/api/keys/1/extra"] {
        app.get(path, &app.admin).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    }
}

#[tokio::test]
async fn a_non_numeric_id_is_404() {
    let app = TestApp::new().await;
    app.delete("/api/keys/abc", &app.admin).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    app.delete("/api/keys/-1", &app.admin).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn wrong_method_is_405_with_the_envelope() {
    let app = TestApp::new().await;
    app.request(Method::PUT, "/api/keys", Some(&app.admin), None)
        .await
        .assert_error(StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED");
}

#[tokio::test]
async fn malformed_json_is_400_and_writes_nothing() {
    let app = TestApp::new().await;
    let before = app.count("api_keys").await;
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/keys")
        .header(header::AUTHORIZATION, format!("Bearer {}", app.admin))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{\"api_key\": {"))
        .unwrap();
    app.send(request).await.assert_error(StatusCode::BAD_REQUEST, "BAD_REQUEST");
    assert_eq!(app.count("api_keys").await, before);
}

#[tokio::test]
async fn a_body_without_json_content_type_is_400() {
    let app = TestApp::new().await;
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/keys")
        .header(header::AUTHORIZATION, format!("Bearer {}", app.admin))
        .body(Body::from(json!({"api_key": {"label": "x", "scopes": ["keys:manage"]}}).to_string()))
        .unwrap();
    app.send(request).await.assert_error(StatusCode::BAD_REQUEST, "BAD_REQUEST");
}

#[tokio::test]
async fn wrong_field_types_are_422_with_field_details() {
    let app = TestApp::new().await;
    let before = (app.count("api_keys").await, app.count("events").await);
    let r = app.post("/api/keys", &app.admin, json!({"api_key": {"label": 7, "scopes": ["keys:manage"]}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["api_key.label"][0].as_str().unwrap().contains("invalid type"), "{details}");
    let r = app.post("/api/keys", &app.admin, json!({"api_key": {"label": "x", "scopes": "keys:manage"}})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details.get("api_key.scopes").is_some(), "{details}");
    let r = app.post("/api/keys", &app.admin, json!({"label": "x"})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!((app.count("api_keys").await, app.count("events").await), before);
}

#[tokio::test]
async fn several_bad_fields_are_reported_together() {
    let app = TestApp::new().await;
    let r = app
        .post("/api/keys", &app.admin, json!({"api_key": {"label": " ", "scopes": ["nope", "keys:manage", "x:y"]}}))
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert_eq!(
        details,
        &json!({
            "api_key.label": ["must be 1-100 characters"],
            "api_key.scopes[0]": ["unknown scope \"nope\""],
            "api_key.scopes[2]": ["unknown scope \"x:y\""],
        })
    );
}

#[tokio::test]
async fn an_oversized_body_is_413() {
    let app = TestApp::with_config(ApiConfig { body_limit: 256, ..ApiConfig::default() }).await;
    let before = app.count("api_keys").await;
    let label = "x".repeat(1000);
    let r = app.post("/api/keys", &app.admin, json!({"api_key": {"label": label, "scopes": ["keys:manage"]}})).await;
    r.assert_error(StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE");
    assert!(r.body["error"]["message"].as_str().unwrap().contains("256"));
    assert_eq!(app.count("api_keys").await, before);
}

#[tokio::test]
async fn exceeding_the_rate_limit_is_429_with_retry_after() {
    let app =
        TestApp::with_config(ApiConfig { rate_limit_per_second: 1, rate_limit_burst: 3, ..ApiConfig::default() }).await;
    for _ in 0..3 {
        assert_eq!(app.get("/api/keys", &app.admin).await.status, StatusCode::OK);
    }
    let r = app.get("/api/keys", &app.admin).await;
    r.assert_error(StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED");
    let retry: u64 = r.headers[header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "Retry-After {retry}");
    // The limit is per key: another key of the same account is unaffected.
    let other = app.key_for(app.account_id, play_model::scopes::ScopeSet::all(), None).await;
    assert_eq!(app.get("/api/keys", &other).await.status, StatusCode::OK);
}

#[tokio::test]
async fn responses_carry_a_request_id() {
    let app = TestApp::new().await;
    let id = async || {
        let r = app.get("/api/keys", &app.admin).await;
        let text = r.headers["x-request-id"].to_str().unwrap().to_owned();
        let id = uuid::Uuid::parse_str(&text).unwrap();
        assert_eq!(id.get_version_num(), 4, "{text}");
        assert_eq!(text, id.hyphenated().to_string(), "lowercase, hyphenated");
        id
    };
    assert_ne!(id().await, id().await);
    // A caller's own id is kept.
    let request = axum::http::Request::builder()
        .uri("/healthz")
        .header("x-request-id", "trace-7")
        .body(axum::body::Body::empty())
        .unwrap();
    assert_eq!(app.send(request).await.headers["x-request-id"], "trace-7");
}

/// HEAD is answered like GET without the body: 401 without a credential,
/// 200 with one, 404 for an unknown id, 405 where GET is not routed. (It
/// used to be a 500: the scope table has no HEAD entries.)
#[tokio::test]
async fn head_is_answered_like_get() {
    let app = TestApp::new().await;
    let r = app.request(Method::HEAD, "/api/keys", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text);
    let r = app.request(Method::HEAD, "/api/playrooms/1", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text);
    let r = app.request(Method::HEAD, "/api/keys", Some(&app.admin), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(r.text.is_empty(), "HEAD has no body: {}", r.text);
    let r = app.request(Method::HEAD, "/api/playrooms/999999", Some(&app.admin), None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    for token in [None, Some(app.admin.as_str())] {
        let r = app.request(Method::HEAD, "/api/launch", token, None).await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{}", r.text);
    }
}
