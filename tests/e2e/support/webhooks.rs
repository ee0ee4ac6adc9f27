//! Webhook receivers on loopback, and the checks a careful receiver makes.
#![allow(clippy::unwrap_used, reason = "test harness: a panic is the failure report")]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What a receiver answers.
#[derive(Clone, Debug)]
pub enum Mode {
    Status(u16),
    /// Never answers.
    Hang,
    /// 307 to this URL.
    Redirect(String),
}

/// One request a receiver got.
#[derive(Clone, Debug)]
pub struct Hit {
    pub headers: HeaderMap,
    pub body: Bytes,
    pub at: Instant,
}

impl Hit {
    pub fn header(&self, name: &str) -> String {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Clone)]
struct Shared {
    hits: Arc<Mutex<Vec<Hit>>>,
    mode: Arc<Mutex<Mode>>,
}

/// An HTTP server on `ip`:0 that records every request.
pub struct Receiver {
    pub addr: SocketAddr,
    shared: Shared,
}

impl Receiver {
    pub async fn start(ip: &str, mode: Mode) -> Receiver {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Shared { hits: Arc::default(), mode: Arc::new(Mutex::new(mode)) };
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { addr, shared }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.shared.hits.lock().unwrap().clone()
    }

    /// Waits up to `limit` until at least `n` requests arrived.
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Hit> {
        let started = Instant::now();
        loop {
            let hits = self.hits();
            if hits.len() >= n {
                return hits;
            }
            assert!(started.elapsed() < limit, "{} of {n} requests within {limit:?}", hits.len());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn handle(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    shared.hits.lock().unwrap().push(Hit { headers, body, at: Instant::now() });
    let mode = shared.mode.lock().unwrap().clone();
    match mode {
        Mode::Status(code) => StatusCode::from_u16(code).unwrap().into_response(),
        Mode::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::OK.into_response()
        }
        Mode::Redirect(to) => (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]).into_response(),
    }
}

/// What a receiver must do: both signatures checked over the raw body, in
/// constant time (`verify_slice`), with the shared secret.
pub fn verify(secret: &str, hit: &Hit) {
    let spec = hit.header("x-webhook-signature");
    let hex_digest = spec.strip_prefix("sha256=").expect("sha256= prefix");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(&hit.body);
    mac.verify_slice(&hex::decode(hex_digest).unwrap()).expect("X-Webhook-Signature verifies");

    // Standard Webhooks: the key is the secret's bytes (whsec_ + base64(secret)).
    let id = hit.header("webhook-id");
    let timestamp = hit.header("webhook-timestamp");
    let now = chrono::Utc::now().timestamp();
    assert!((now - timestamp.parse::<i64>().unwrap()).abs() < 300, "fresh timestamp");
    let standard = hit.header("webhook-signature");
    let b64 = standard.strip_prefix("v1,").expect("v1, prefix");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(&hit.body);
    mac.verify_slice(&base64::engine::general_purpose::STANDARD.decode(b64).unwrap())
        .expect("webhook-signature verifies");
    assert_eq!(hit.header("x-webhook-delivery"), id);
    assert_eq!(hit.header("user-agent"), "Service-Webhook/1.0");
    assert_eq!(hit.header("content-type"), "application/json");
}
