//! `TestApp`: the real router over a fresh store (SQLite or PostgreSQL per
//! `PLAY_TEST_BACKEND`), driven in-process. Enabled by the `testing`
//! feature; used by this crate's tests and the end-to-end tests, which pass
//! the real `DockerHostGateway`.

#![allow(dead_code, reason = "each test binary uses a different part of the fixture")]
#![allow(clippy::unwrap_used, reason = "test fixture: a panic is the failure report")]

use crate::{ApiConfig, AppState};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use play_core::metrics::Metrics;
use play_model::host::{
    ConnectionReport, DockerReport, Failure, FailureKind, FailureStage, HostError, HostGateway, HostTarget,
};
use play_model::model::event::Actor;
use play_model::model::quota::QuotaLimits;
use play_model::scopes::ScopeSet;
use play_model::secrets::MasterKey;
use play_model::{time, token};
use play_store::testing;
use play_store::testing::TestStore;
use play_store::{Store, accounts, keys};
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

#[derive(Debug)]
pub struct TestApp {
    pub router: Router,
    pub state: AppState,
    /// Shared with [`TestApp::replica`]s; dropped with the last.
    db: Arc<TestStore>,
    /// A key of the default account holding every scope.
    pub admin: String,
    pub account_id: i64,
}

#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl TestApp {
    /// A test app whose gateway reaches no host (for tests that never
    /// touch one).
    pub async fn new() -> TestApp {
        Self::with(Self::default_config(), Arc::new(NoHosts)).await
    }

    pub async fn with_config(config: ApiConfig) -> TestApp {
        Self::with(config, Arc::new(NoHosts)).await
    }

    /// Generous rate limits, so tests are never throttled by accident.
    pub fn default_config() -> ApiConfig {
        // No dispatcher runs beside the router in API tests: `test` answers
        // at once (202, pending).
        ApiConfig {
            rate_limit_per_second: 10_000,
            rate_limit_burst: 10_000,
            webhook_test_wait: std::time::Duration::ZERO,
            // Schedules of the tests fire every 2 seconds.
            schedule_min_interval: std::time::Duration::from_secs(1),
            ..ApiConfig::default()
        }
    }

    /// An app whose store has no waker yet: a harness that runs
    /// reconcilers gives it theirs (`Store::set_waker`).
    pub async fn with(config: ApiConfig, gateway: Arc<dyn HostGateway>) -> TestApp {
        Self::with_optional_waker(config, gateway, None).await
    }

    /// An app whose store's commits deliver their wakes to `waker`
    /// (`play_store::wakes`), as `play serve` wires it.
    pub async fn with_waker(
        config: ApiConfig,
        gateway: Arc<dyn HostGateway>,
        waker: Arc<dyn play_core::wake::Waker>,
    ) -> TestApp {
        Self::with_optional_waker(config, gateway, Some(waker)).await
    }

    async fn with_optional_waker(
        config: ApiConfig,
        gateway: Arc<dyn HostGateway>,
        waker: Option<Arc<dyn play_core::wake::Waker>>,
    ) -> TestApp {
        let db = testing::store().await;
        let master = MasterKey::generate();
        let state = AppState::new(
            db.store.clone(),
            config,
            master.token_pepper(),
            master.secret_box(),
            Arc::new(Metrics::new()),
            gateway,
        );
        if let Some(waker) = waker {
            db.store.set_waker(waker);
        }
        let (account, _) = accounts::create_account(&db.store, "default").await.unwrap();
        let mut app = TestApp {
            router: crate::router(state.clone()),
            state,
            db: Arc::new(db),
            admin: String::new(),
            account_id: account.id,
        };
        app.admin = app.key_for(account.id, ScopeSet::all(), None).await;
        app
    }

    /// This app with `host` as its source host (the repositories
    /// facility), as `play serve` wires play's own Git host.
    pub fn with_source_host(mut self, host: Arc<dyn play_model::scm::host::SourceHost>) -> TestApp {
        self.state = self.state.clone().with_source_host(host);
        self.router = crate::router(self.state.clone());
        self
    }

    pub fn store(&self) -> &Store {
        &self.db.store
    }

    /// A second API replica, as a second `play serve` on the same store and
    /// master key: its own in-memory state (the key cache), the same keys.
    pub fn replica(&self) -> TestApp {
        let mut state = self.state.clone();
        state.shared_mut().keys = Arc::default();
        // Its own count of writes: another process's are not seen.
        state.shared_mut().renders =
            Arc::new(crate::rendered::Renders::new(self.state.config.read_staleness, Arc::default()));
        TestApp {
            router: crate::router(state.clone()),
            state,
            db: Arc::clone(&self.db),
            admin: self.admin.clone(),
            account_id: self.account_id,
        }
    }

    /// Mints a key straight in the store (bypassing the API's checks, so
    /// tests can make expired keys too).
    pub async fn key_for(&self, account_id: i64, scopes: ScopeSet, expires_at: Option<time::Timestamp>) -> String {
        let user = accounts::admin_user(self.store(), account_id).await.unwrap();
        let minted = token::generate();
        keys::create(
            self.store(),
            play_model::model::account::NewApiKey {
                account_id,
                user_id: user.id,
                label: "test".into(),
                client_id: minted.client_id,
                token_digest: self.state.pepper.digest(&minted.token),
                scopes,
                expires_at,
            },
            &QuotaLimits::parse("api_keys=100000").unwrap(),
            Actor::System,
        )
        .await
        .unwrap();
        minted.token
    }

    /// A Playground of one busybox service (a Playspec "shop" on a Playroom
    /// "box" at 127.0.0.1, both made here), created by the admin: its id.
    pub async fn new_playground(&self) -> i64 {
        let compose = "services:\n  web:\n    image: play-test/busybox:1\n";
        let body = serde_json::json!({"playspec": {"name": "shop", "base_compose_yaml": compose}});
        let spec = self.post("/api/playspecs", &self.admin, body).await;
        assert_eq!(spec.status, StatusCode::CREATED, "{}", spec.text);
        let body = serde_json::json!({"playroom": {"name": "box", "host": "127.0.0.1"}});
        let room = self.post("/api/playrooms", &self.admin, body).await;
        assert_eq!(room.status, StatusCode::CREATED, "{}", room.text);
        let body = serde_json::json!({"playground": {"name": "pg", "playspec_id": spec.body["id"], "playroom_id": room.body["id"]}});
        let created = self.post("/api/playgrounds", &self.admin, body).await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
        created.body["id"].as_i64().unwrap()
    }

    pub async fn new_account(&self, name: &str) -> i64 {
        accounts::create_account(self.store(), name).await.unwrap().0.id
    }

    pub async fn request(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> Response {
        let mut builder = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let body = match body {
            Some(json) => {
                builder = builder.header(header::CONTENT_TYPE, "application/json");
                Body::from(json.to_string())
            }
            None => Body::empty(),
        };
        self.send(builder.body(body).unwrap()).await
    }

    pub async fn send(&self, request: Request<Body>) -> Response {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Response { status, headers, body, text }
    }

    /// Sends `request` and answers the response with its body's bytes as
    /// sent (not decoded: a compressed body stays compressed).
    pub async fn send_raw(&self, request: Request<Body>) -> http::Response<axum::body::Bytes> {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        http::Response::from_parts(parts, body.collect().await.unwrap().to_bytes())
    }

    /// POSTs a `multipart/form-data` body of `parts` (name, optional file
    /// name, content) to `path` as the admin.
    pub async fn post_multipart(&self, path: &str, parts: &[(&str, Option<&str>, &[u8])]) -> Response {
        let boundary = "play-test-boundary-7d1c";
        let mut body = Vec::new();
        for (name, filename, content) in parts {
            body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
            let disposition = match filename {
                Some(f) => format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\n\
                     Content-Type: application/octet-stream\r\n\r\n"
                ),
                None => format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n"),
            };
            body.extend_from_slice(disposition.as_bytes());
            body.extend_from_slice(content);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.admin))
            .header(header::CONTENT_TYPE, format!("multipart/form-data; boundary={boundary}"))
            .body(Body::from(body))
            .unwrap();
        self.send(request).await
    }

    pub async fn get(&self, path: &str, token: &str) -> Response {
        self.request(Method::GET, path, Some(token), None).await
    }

    /// GETs `path` with `Cache-Control: no-cache`: a read that starts after
    /// the request (`crate::recent`).
    pub async fn get_fresh(&self, path: &str, token: &str) -> Response {
        let request = Request::builder()
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CACHE_CONTROL, "no-cache")
            .body(Body::empty())
            .unwrap();
        self.send(request).await
    }

    /// One JSON-RPC call to `/mcp` (`method`, `params`), as an MCP client
    /// makes it.
    pub async fn mcp(&self, token: Option<&str>, method: &str, params: Value) -> Response {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri("/mcp")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::HOST, "play.example.com")
            .header("mcp-protocol-version", "2025-06-18");
        if let Some(token) = token {
            builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.send(builder.body(Body::from(body.to_string())).unwrap()).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> Response {
        self.request(Method::POST, path, Some(token), Some(body)).await
    }

    pub async fn delete(&self, path: &str, token: &str) -> Response {
        self.request(Method::DELETE, path, Some(token), None).await
    }

    /// How many rows a table holds, to prove a refused request wrote nothing.
    pub async fn count(&self, table: &str) -> i64 {
        use sqlx::Row;
        sqlx::query(&format!("SELECT COUNT(*) AS n FROM {table}"))
            .fetch_one(self.store().pool())
            .await
            .unwrap()
            .try_get("n")
            .unwrap()
    }
}

impl Response {
    /// Asserts the exact error envelope.
    #[track_caller]
    pub fn assert_error(&self, status: StatusCode, code: &str) -> &Value {
        assert_eq!(self.status, status, "body: {}", self.text);
        assert_eq!(self.body["error"]["code"], code, "body: {}", self.text);
        assert!(self.body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", self.text);
        assert!(self.body["error"]["details"].is_object(), "{}", self.text);
        assert_eq!(self.body.as_object().unwrap().len(), 1, "only `error` at the top: {}", self.text);
        assert_eq!(self.body["error"].as_object().unwrap().len(), 3, "{}", self.text);
        &self.body["error"]["details"]
    }
}

/// A gateway for in-process tests that reach no host: every call fails as
/// unreachable. Tests of host access use the real gateway instead.
#[derive(Debug)]
pub struct NoHosts;

#[async_trait::async_trait]
impl HostGateway for NoHosts {
    async fn test_connection(&self, _target: &HostTarget) -> ConnectionReport {
        ConnectionReport {
            ok: false,
            ssh: None,
            docker: DockerReport::default(),
            transport: None,
            latency_ms: None,
            failure: Some(Failure {
                stage: FailureStage::Connect,
                kind: FailureKind::Unreachable,
                message: "this test app reaches no hosts".into(),
            }),
        }
    }

    async fn service_logs(
        &self,
        _target: &HostTarget,
        _container: &str,
        _tail: usize,
    ) -> Result<Vec<String>, HostError> {
        Err(HostError::Unreachable("this test app reaches no hosts".into()))
    }

    async fn follow_logs(
        &self,
        _target: &HostTarget,
        _container: &str,
        _tail: usize,
        _bound: std::time::Duration,
    ) -> Result<play_model::host::LogLines, HostError> {
        Err(HostError::Unreachable("this test app reaches no hosts".into()))
    }
}
