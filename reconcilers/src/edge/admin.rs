//! Caddy's admin API on the edge container's unix socket, reached from the
//! host through the Playroom's connection (`DockerHostGateway::dial_unix`).
//!
//! One HTTP/1.1 connection (one SSH channel) per call, bounded by the
//! gateway's call timeout; answers are read up to [`MAX_ANSWER`] bytes.
//! Owns talking to the admin API: what config to load is `edge::pass`'s.

use bytes::Bytes;
use http::{Method, StatusCode};
use play_model::edge::config::ADMIN_ORIGIN;
use play_model::host::{HostError, HostTarget};
use serde_json::Value;

use crate::host::{DockerHostGateway, exchange};
use crate::{Error, Result};

/// The most of an answer read: a config of many thousand routes fits.
const MAX_ANSWER: usize = 64 << 20;

/// The admin API of one edge.
#[derive(Debug)]
pub struct Admin<'a> {
    pub gateway: &'a DockerHostGateway,
    pub target: &'a HostTarget,
    /// The admin socket's path on the host.
    pub socket: &'a str,
}

impl Admin<'_> {
    async fn call(&self, method: Method, path: &str, body: Option<Vec<u8>>) -> Result<(StatusCode, Bytes)> {
        let bound = self.gateway.config().call_timeout;
        let work = async {
            let stream = self.gateway.dial_unix(self.target, self.socket).await?;
            exchange::exchange(stream, method, ADMIN_ORIGIN, path, body, MAX_ANSWER)
                .await
                .map_err(|e| Error::Edge(format!("admin API: {e}")))
        };
        tokio::time::timeout(bound, work)
            .await
            .map_err(|_| Error::Host(HostError::Timeout(format!("the edge's admin API ({})", self.socket))))?
    }

    /// The config the edge runs (`Value::Null` when it has none).
    pub async fn config(&self) -> Result<Value> {
        let (status, body) = self.call(Method::GET, "/config/", None).await?;
        if !status.is_success() {
            return Err(Error::Edge(format!("reading the config: {status}: {}", message(&body))));
        }
        serde_json::from_slice(&body).map_err(|e| Error::Edge(format!("the config read back is not JSON: {e}")))
    }

    /// Loads `config` whole. `Ok(Err(message))` is Caddy refusing it (it
    /// keeps running the config it had); `Err` is not reaching it.
    pub async fn load(&self, config: &Value) -> Result<std::result::Result<(), String>> {
        let body = serde_json::to_vec(config).map_err(|e| Error::Edge(format!("config to JSON: {e}")))?;
        let (status, answer) = self.call(Method::POST, "/load", Some(body)).await?;
        Ok(if status.is_success() { Ok(()) } else { Err(message(&answer)) })
    }
}

impl Admin<'_> {
    /// The upstreams Caddy proxies to and how many requests each has open
    /// (`GET /reverse_proxy/upstreams`): `(address, open requests)`.
    pub async fn upstreams(&self) -> Result<Vec<(String, u64)>> {
        let (status, body) = self.call(Method::GET, "/reverse_proxy/upstreams", None).await?;
        if !status.is_success() {
            return Err(Error::Edge(format!("reading the upstreams: {status}: {}", message(&body))));
        }
        let list: Vec<Value> =
            serde_json::from_slice(&body).map_err(|e| Error::Edge(format!("the upstreams are not JSON: {e}")))?;
        Ok(list
            .iter()
            .filter_map(|u| {
                let address = u.get("address")?.as_str()?.to_owned();
                Some((address, u.get("num_requests").and_then(Value::as_u64).unwrap_or(0)))
            })
            .collect())
    }
}

/// Caddy's error message from an answer (`{"error": "..."}`), else the text.
fn message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(2000).collect())
}
