//! The MCP server at `/mcp` through the real router: authentication,
//! initialize, tools/list, tool calls that reach the REST routes, scope
//! refusals and validation errors as tool errors carrying the envelope.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::StatusCode;
use play_api::ApiConfig;
use play_api::testing::{Response, TestApp};
use play_model::scopes::{Scope, ScopeSet};
use play_model::webhook::{AllowEntry, UrlPolicy};
use serde_json::{Value, json};

async fn rpc(app: &TestApp, token: Option<&str>, method: &str, params: Value) -> Response {
    app.mcp(token, method, params).await
}

/// A tool call's result (the JSON-RPC `result`).
async fn call(app: &TestApp, token: &str, tool: &str, arguments: Value) -> Value {
    let r = rpc(app, Some(token), "tools/call", json!({"name": tool, "arguments": arguments})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(r.body["error"].is_null(), "protocol error: {}", r.text);
    r.body["result"].clone()
}

fn envelope(result: &Value) -> &Value {
    assert_eq!(result["isError"], true, "expected a tool error: {result}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, &result["structuredContent"], "text and structured content differ");
    &result["structuredContent"]["error"]
}

fn allow_loopback() -> ApiConfig {
    let webhook_urls = UrlPolicy { allow_http: true, allowlist: vec![AllowEntry::parse("127.0.0.1").unwrap()] };
    ApiConfig { webhook_urls, ..TestApp::default_config() }
}

#[tokio::test]
async fn mcp_needs_a_bearer_key() {
    let app = TestApp::new().await;
    let r = rpc(&app, None, "tools/list", json!({})).await;
    r.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    let r = rpc(&app, Some("play_not_a_key"), "tools/list", json!({})).await;
    r.assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
}

#[tokio::test]
async fn initialize_and_list_tools() {
    let app = TestApp::new().await;
    let params = json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}});
    let r = rpc(&app, Some(&app.admin), "initialize", params).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["result"]["serverInfo"]["name"], "play", "{}", r.text);
    assert!(r.body["result"]["capabilities"]["tools"].is_object(), "{}", r.text);

    let r = rpc(&app, Some(&app.admin), "tools/list", json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let tools = r.body["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for name in play_api::mcp::tools::TOOLS.iter().map(|t| t.name) {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let create = tools.iter().find(|t| t["name"] == "create_webhook_endpoint").unwrap();
    assert!(create["description"].as_str().unwrap().contains("webhooks:write"), "{create}");
    assert_eq!(create["inputSchema"]["type"], "object");
    assert!(create["inputSchema"]["properties"]["url"].is_object(), "{create}");
}

#[tokio::test]
async fn tools_run_the_rest_routes() {
    let app = TestApp::with_config(allow_loopback()).await;
    let created = call(
        &app,
        &app.admin,
        "create_webhook_endpoint",
        json!({"url": "http://127.0.0.1:9/hook", "events": ["webhook.test"], "description": "agent"}),
    )
    .await;
    assert_eq!(created["isError"], false, "{created}");
    let endpoint = &created["structuredContent"];
    let id = endpoint["id"].as_i64().unwrap();
    assert_eq!((endpoint["enabled"].as_bool(), endpoint["failure_count"].as_i64()), (Some(true), Some(0)));
    assert_eq!(endpoint["secret"].as_str().unwrap().len(), 64);

    // The REST route sees what the tool wrote.
    let r = app.get(&format!("/api/webhook_endpoints/{id}"), &app.admin).await;
    assert_eq!(r.body["description"], "agent");

    let listed = call(&app, &app.admin, "list_webhook_endpoints", json!({})).await;
    assert_eq!(listed["structuredContent"]["items"][0]["id"], id, "{listed}");

    let updated = call(&app, &app.admin, "update_webhook_endpoint", json!({"id": id, "enabled": false})).await;
    assert_eq!(updated["structuredContent"]["enabled"], false, "{updated}");

    let tested = call(&app, &app.admin, "test_webhook_endpoint", json!({"id": id})).await;
    assert_eq!(tested["structuredContent"]["event_type"], "webhook.test", "{tested}");

    let deliveries = call(&app, &app.admin, "list_webhook_deliveries", json!({"id": id, "limit": 5})).await;
    assert!(deliveries["structuredContent"]["items"].is_array(), "{deliveries}");

    let deleted = call(&app, &app.admin, "delete_webhook_endpoint", json!({"id": id})).await;
    assert_eq!(deleted["structuredContent"]["status"], 204, "{deleted}");
    let gone = call(&app, &app.admin, "get_webhook_endpoint", json!({"id": id})).await;
    assert_eq!(envelope(&gone)["code"], "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn a_missing_scope_is_a_tool_error_with_the_envelope() {
    let app = TestApp::with_config(allow_loopback()).await;
    let reader = app.key_for(app.account_id, ScopeSet::from_iter([Scope::WebhooksRead]), None).await;
    let args = json!({"url": "http://127.0.0.1:9/hook", "events": ["webhook.test"]});
    let refused = call(&app, &reader, "create_webhook_endpoint", args).await;
    let error = envelope(&refused);
    assert_eq!(error["code"], "FORBIDDEN");
    assert_eq!(error["message"], "the scope webhooks:write is required");
    assert_eq!(app.count("webhook_endpoints").await, 0);
    // The scope it has is enough for its route.
    let listed = call(&app, &reader, "list_webhook_endpoints", json!({})).await;
    assert_eq!(listed["isError"], false, "{listed}");
}

#[tokio::test]
async fn bad_input_is_a_tool_error_naming_the_argument() {
    let app = TestApp::with_config(allow_loopback()).await;
    let refused =
        call(&app, &app.admin, "create_webhook_endpoint", json!({"url": "not a url", "events": ["no.such"]})).await;
    let error = envelope(&refused);
    assert_eq!(error["code"], "VALIDATION_FAILED");
    let details = error["details"].as_object().unwrap();
    assert!(details.contains_key("url") && details.contains_key("events[0]"), "{error}");

    let missing = call(&app, &app.admin, "get_playground_status", json!({})).await;
    let error = envelope(&missing);
    assert_eq!(error["code"], "VALIDATION_FAILED");
    assert!(error["details"]["id"].is_array(), "{error}");

    let unknown = call(&app, &app.admin, "list_playgrounds", json!({"bogus": 1})).await;
    assert!(envelope(&unknown)["details"]["bogus"].is_array(), "{unknown}");

    let r = rpc(&app, Some(&app.admin), "tools/call", json!({"name": "no_such_tool", "arguments": {}})).await;
    assert!(r.body["error"]["code"].is_i64(), "an unknown tool is a protocol error: {}", r.text);
}

#[tokio::test]
async fn launch_and_read_the_status() {
    let app = TestApp::new().await;
    let playroom = app
        .post("/api/playrooms", &app.admin, json!({"playroom": {"name": "lab", "host": "127.0.0.1", "port": 9}}))
        .await;
    assert_eq!(playroom.status, StatusCode::CREATED, "{}", playroom.text);
    let launched = call(
        &app,
        &app.admin,
        "launch",
        json!({"name": "agent-env", "compose_yaml": "services:\n  web:\n    image: nginx:alpine\n",
               "create_playground": true, "playroom_id": playroom.body["id"]}),
    )
    .await;
    assert_eq!(launched["isError"], false, "{launched}");
    let id = launched["structuredContent"]["playground_id"].as_i64().unwrap();
    let status = call(&app, &app.admin, "get_playground_status", json!({"id": id})).await;
    assert_eq!(status["structuredContent"]["id"], id, "{status}");
    assert!(status["structuredContent"]["status"].is_string(), "{status}");
}

/// Server-side apply as a tool: the same flow as `POST /api/apply`, its
/// scopes per object kind, its errors keyed by object.
#[tokio::test]
async fn apply_is_a_tool_with_the_scopes_of_each_kind() {
    let app = TestApp::with_config(allow_loopback()).await;
    let hook = |url: &str| {
        json!({"apiVersion": "play/v1", "kind": "WebhookEndpoint", "metadata": {"name": "agent"},
               "spec": {"url": url, "events": ["webhook.test"]}})
    };
    let set = json!({"apply_set": "agent", "objects": [hook("http://127.0.0.1:9/hook")]});

    // A dry run writes nothing and needs only the read scope.
    let reader = app.key_for(app.account_id, ScopeSet::from_iter([Scope::WebhooksRead]), None).await;
    let dry =
        call(&app, &reader, "apply", json!({"dry_run": true, "apply_set": "agent", "objects": set["objects"]})).await;
    assert_eq!(dry["isError"], false, "{dry}");
    assert_eq!(dry["structuredContent"]["results"][0]["action"], "created", "{dry}");
    assert_eq!(app.count("webhook_endpoints").await, 0);
    // Writing needs the kind's write scope: the envelope names it.
    let refused = call(&app, &reader, "apply", set.clone()).await;
    let error = envelope(&refused);
    assert_eq!(
        (error["code"].as_str(), error["message"].as_str()),
        (Some("FORBIDDEN"), Some("the scope webhooks:write is required"))
    );
    assert_eq!(app.count("webhook_endpoints").await, 0);

    let applied = call(&app, &app.admin, "apply", set.clone()).await;
    assert_eq!(applied["structuredContent"]["results"][0]["action"], "created", "{applied}");
    let again = call(&app, &app.admin, "apply", set).await;
    assert_eq!(again["structuredContent"]["results"][0]["action"], "unchanged", "{again}");
    let listed = call(&app, &app.admin, "list_applied_objects", json!({"kind": "WebhookEndpoint"})).await;
    assert_eq!(listed["structuredContent"]["items"][0]["name"], "agent", "{listed}");

    // A bad object is an error keyed by its place in the set.
    let bad = call(&app, &app.admin, "apply", json!({"objects": [hook("ftp://x")]})).await;
    let error = envelope(&bad);
    assert_eq!(error["code"], "VALIDATION_FAILED");
    assert!(error["details"].as_object().unwrap().keys().any(|k| k.starts_with("objects[0].spec.url")), "{error}");

    let tools = rpc(&app, Some(&app.admin), "tools/list", json!({})).await;
    let apply =
        tools.body["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "apply").unwrap().clone();
    assert!(apply["description"].as_str().unwrap().contains("<kind>:write"), "{apply}");
    assert_eq!(apply["annotations"]["destructiveHint"], true, "{apply}");
}
