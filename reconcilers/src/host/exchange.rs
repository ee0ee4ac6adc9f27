//! One HTTP/1.1 exchange over a byte stream the host layer opened (an SSH
//! channel to a unix socket or a container's port, or a local socket):
//! the edge's admin API and the zero-downtime health probe use it.
//!
//! The caller bounds the whole exchange in time; the answer's body is read
//! up to `limit` bytes.

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::rt::TokioIo;

use super::tunnel::HostStream;

/// Sends `method path` with `Host: host` (and `body` as JSON when given)
/// and reads the answer. `Err` is a message: the exchange failed.
pub async fn exchange(
    stream: HostStream,
    method: Method,
    host: &str,
    path: &str,
    body: Option<Vec<u8>>,
    limit: usize,
) -> Result<(StatusCode, Bytes), String> {
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| format!("handshake: {e}"))?;
    let driver = tokio::spawn(connection);
    let mut request = Request::builder().method(method).uri(path).header(http::header::HOST, host);
    if body.is_some() {
        request = request.header(http::header::CONTENT_TYPE, "application/json");
    }
    let request = request.body(Full::new(Bytes::from(body.unwrap_or_default()))).map_err(|e| e.to_string())?;
    let outcome = async {
        let answer = sender.send_request(request).await.map_err(|e| e.to_string())?;
        let status = answer.status();
        let body = Limited::new(answer.into_body(), limit).collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok((status, body))
    }
    .await;
    driver.abort();
    outcome
}
