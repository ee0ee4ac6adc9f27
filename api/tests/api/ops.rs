//! Health, readiness, metrics, and the API documentation.

use axum::http::{Method, StatusCode};
use play_api::testing::TestApp;

#[tokio::test]
async fn health_and_readiness_need_no_credential() {
    let app = TestApp::new().await;
    let r = app.request(Method::GET, "/healthz", None, None).await;
    assert_eq!((r.status, r.body["status"].as_str()), (StatusCode::OK, Some("ok")));
    let r = app.request(Method::GET, "/readyz", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["store"], play_store::testing::backend().as_str());
}

#[tokio::test]
async fn readiness_fails_with_503_when_the_store_is_gone() {
    let app = TestApp::new().await;
    app.store().close().await;
    app.request(Method::GET, "/readyz", None, None)
        .await
        .assert_error(StatusCode::SERVICE_UNAVAILABLE, "SERVICE_UNAVAILABLE");
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_status() {
    let app = TestApp::new().await;
    app.get("/api/keys", &app.admin).await;
    app.delete("/api/keys/424242", &app.admin).await;
    let r = app.request(Method::GET, "/metrics", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.text.contains(r#"play_http_requests_total{method="GET",route="/api/keys",status="200"} 1"#),
        "{}",
        r.text
    );
    assert!(
        r.text.contains(r#"play_http_requests_total{method="DELETE",route="/api/keys/{id}",status="404"} 1"#),
        "{}",
        r.text
    );
    assert!(r.text.contains("play_http_request_duration_seconds_bucket"), "{}", r.text);
}

#[tokio::test]
async fn metrics_declare_the_loops_controller_runtime_families() {
    let app = TestApp::new().await;
    let r = app.request(Method::GET, "/metrics", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    for (family, kind) in [
        ("play_reconcile", "counter"),
        ("play_reconcile_errors", "counter"),
        ("play_reconcile_time_seconds", "histogram"),
        ("play_workqueue_depth", "gauge"),
        ("play_workqueue_adds", "counter"),
        ("play_workqueue_queue_duration_seconds", "histogram"),
        ("play_workqueue_work_duration_seconds", "histogram"),
        ("play_workqueue_retries", "counter"),
        ("play_workqueue_unfinished_work_seconds", "gauge"),
        ("play_workqueue_longest_running_processor_seconds", "gauge"),
        ("play_leases_held", "gauge"),
        ("play_leases_lost", "counter"),
    ] {
        assert!(r.text.contains(&format!("# TYPE {family} {kind}\n")), "{family}: {}", r.text);
    }
}

#[tokio::test]
async fn openapi_document_is_served_and_lists_the_routes() {
    let app = TestApp::new().await;
    let r = app.request(Method::GET, "/api/openapi.json", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["openapi"], "3.1.0");
    assert!(r.body["paths"]["/api/keys"]["post"].is_object());
    assert!(r.body["components"]["securitySchemes"]["bearer"].is_object());
    assert_eq!(r.headers["content-type"], "application/json");
    // The routes outside the authenticated ones are in the same document.
    assert!(r.body["paths"]["/api/scm_installations/github/webhook"]["post"].is_object());
}

#[tokio::test]
async fn documentation_page_and_its_assets_are_served_locally() {
    let app = TestApp::new().await;
    let page = app.request(Method::GET, "/api/docs", None, None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text.contains("/api/openapi.json"), "{}", page.text);
    assert!(!page.text.contains("https://"), "no CDN: {}", page.text);
    let bundle = app.request(Method::GET, "/api/docs/swagger-ui-bundle.js", None, None).await;
    assert_eq!(bundle.status, StatusCode::OK);
    assert!(bundle.text.len() > 100_000);
}
