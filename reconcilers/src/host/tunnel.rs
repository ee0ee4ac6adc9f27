//! From byte streams to a `bollard::Docker`: the part of host access that is
//! the same for SSH and local Playrooms.
//!
//! A [`Dialer`] opens one byte stream to the engine per HTTP connection (an
//! SSH channel or a Unix socket). hyper-util's *legacy* client drives HTTP/1.1
//! over those streams: it keeps idle connections for reuse and, unlike a bare
//! `hyper::client::conn`, sends the `Host` header the engine requires. bollard
//! sees it all as a custom transport ([`bollard::Docker::connect_with_custom_transport`]).
//!
//! Every request goes through [`EngineClient::request`], which bounds it by
//! `HostConfig::call_timeout` (until the response head: streamed bodies such
//! as logs and pull progress are not cut) and records it in the metrics.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bollard::models::SystemVersion;
use bollard::{API_DEFAULT_VERSION, BollardRequest, ClientVersion, Docker};
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Method, Request, Response, Uri};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo};
use play_core::metrics::Metrics;
use play_model::host::HostError;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::HostConfig;
use crate::error::Error;

/// The authority bollard puts in every URI; the legacy client turns it into
/// the `Host` header. The engine ignores its value but requires the header.
const ENGINE_BASE: &str = "http://docker";

trait Io: AsyncRead + AsyncWrite + Send {}
impl<T: AsyncRead + AsyncWrite + Send> Io for T {}

/// One byte stream to the Docker engine, whatever carries it.
pub struct HostStream {
    inner: Pin<Box<dyn Io>>,
}

impl std::fmt::Debug for HostStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostStream").finish_non_exhaustive()
    }
}

impl HostStream {
    pub fn new(io: impl AsyncRead + AsyncWrite + Send + 'static) -> Self {
        HostStream { inner: Box::pin(io) }
    }
}

impl AsyncRead for HostStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.inner.as_mut().poll_read(cx, buf)
    }
}

impl AsyncWrite for HostStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.inner.as_mut().poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.inner.as_mut().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.inner.as_mut().poll_shutdown(cx)
    }
}

impl Connection for HostStream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

/// Opens byte streams to one Playroom's engine. An error that is about the
/// host carries a [`HostError`] inside the `io::Error` (`io::Error::other`), so
/// the kind survives hyper and bollard (see `crate::error::host_error_in`).
pub trait Dialer: Send + Sync + 'static {
    fn dial(self: Arc<Self>) -> BoxFuture<'static, io::Result<HostStream>>;
}

/// hyper's view of a [`Dialer`].
#[derive(Clone)]
struct Connector(Arc<dyn Dialer>);

impl tower_service::Service<Uri> for Connector {
    type Response = TokioIo<HostStream>;
    type Error = io::Error;
    type Future = BoxFuture<'static, io::Result<Self::Response>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let dial = Arc::clone(&self.0).dial();
        Box::pin(async move { dial.await.map(TokioIo::new) })
    }
}

/// The body type bollard's requests carry (private in bollard, named here
/// through its public request alias).
trait HasBody {
    type Body;
}
impl<B> HasBody for Request<B> {
    type Body = B;
}
type DockerBody = <BollardRequest as HasBody>::Body;

/// Records remote calls of one host under its `host` label.
#[derive(Debug, Clone)]
pub struct Recorder {
    metrics: Arc<Metrics>,
    host: String,
}

impl Recorder {
    pub fn new(metrics: Arc<Metrics>, host: String) -> Self {
        Recorder { metrics, host }
    }

    pub fn record(&self, operation: &str, outcome: &str, elapsed: Duration) {
        self.metrics.record_remote_call(&self.host, operation, outcome, elapsed);
    }

    pub fn host(&self) -> &str {
        &self.host
    }
}

/// An HTTP client to one engine over a [`Dialer`]. Cheap to clone; clones
/// share idle connections.
#[derive(Clone)]
pub struct EngineClient {
    client: Client<Connector, DockerBody>,
    recorder: Recorder,
    call_timeout: Duration,
}

impl std::fmt::Debug for EngineClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineClient").field("host", &self.recorder.host).finish_non_exhaustive()
    }
}

impl EngineClient {
    pub fn new(dialer: Arc<dyn Dialer>, cfg: &HostConfig, recorder: Recorder) -> Self {
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(cfg.max_idle_http_connections)
            .pool_idle_timeout(Duration::from_secs(30))
            .build(Connector(dialer));
        EngineClient { client, recorder, call_timeout: cfg.call_timeout }
    }

    /// Sends one request, bounded and recorded.
    ///
    /// A body-less `GET`/`HEAD` that fails because its HTTP connection was
    /// found dead (an idle channel of an SSH connection that just dropped) is
    /// retried on a fresh connection, up to [`STALE_RETRIES`] times: such a
    /// request reads and changes nothing, so repeating it is safe. Other
    /// methods are never repeated; their caller sees the error.
    pub async fn request(&self, req: BollardRequest) -> Result<Response<Incoming>, bollard::errors::Error> {
        let replay = (req.method() == Method::GET || req.method() == Method::HEAD).then(|| {
            let mut copy = Request::new(bollard::body_full(Bytes::new()));
            *copy.method_mut() = req.method().clone();
            *copy.uri_mut() = req.uri().clone();
            *copy.headers_mut() = req.headers().clone();
            copy
        });
        let mut result = self.send(req).await;
        if let Some(template) = replay {
            for _ in 0..STALE_RETRIES {
                match &result {
                    Err(bollard::errors::Error::HyperLegacyError { err }) if is_stale(err) => {}
                    _ => break,
                }
                let mut again = Request::new(bollard::body_full(Bytes::new()));
                *again.method_mut() = template.method().clone();
                *again.uri_mut() = template.uri().clone();
                *again.headers_mut() = template.headers().clone();
                result = self.send(again).await;
            }
        }
        result
    }

    async fn send(&self, req: BollardRequest) -> Result<Response<Incoming>, bollard::errors::Error> {
        let operation = operation_label(req.method(), req.uri().path());
        let started = Instant::now();
        let result = tokio::time::timeout(self.call_timeout, self.client.request(req)).await;
        let elapsed = started.elapsed();
        match result {
            Ok(Ok(response)) => {
                let outcome = if response.status().is_server_error() { "error" } else { "ok" };
                self.recorder.record(&operation, outcome, elapsed);
                Ok(response)
            }
            Ok(Err(e)) => {
                self.recorder.record(&operation, "error", elapsed);
                Err(e.into())
            }
            Err(_) => {
                self.recorder.record(&operation, "timeout", elapsed);
                Err(bollard::errors::Error::RequestTimeoutError)
            }
        }
    }

    /// The engine's version, from the unversioned `/version` endpoint: it
    /// answers whatever API version we speak, which bollard's own
    /// `negotiate_version` (a versioned request) does not on older engines.
    pub async fn engine_version(&self) -> Result<SystemVersion, Error> {
        let req = Request::builder()
            .method(Method::GET)
            .uri(format!("{ENGINE_BASE}/version"))
            .body(bollard::body_full(Bytes::new()))
            .map_err(|e| HostError::Protocol(e.to_string()))?;
        let response = self.request(req).await.map_err(|e| Error::docker("version", e))?;
        let status = response.status();
        let body = tokio::time::timeout(self.call_timeout, response.into_body().collect())
            .await
            .map_err(|_| HostError::Timeout("reading the engine's /version".into()))?
            .map_err(|e| HostError::Protocol(format!("reading /version: {e}")))?
            .to_bytes();
        if !status.is_success() {
            return Err(HostError::Protocol(format!(
                "the engine answered /version with {status}: {}",
                String::from_utf8_lossy(&body)
            ))
            .into());
        }
        serde_json::from_slice(&body).map_err(|e| HostError::Protocol(format!("the engine's /version: {e}")).into())
    }

    /// A bollard client speaking the highest API version both sides know.
    pub fn docker(&self, engine: &SystemVersion) -> Result<Docker, Error> {
        let version = negotiated_version(engine.api_version.as_deref());
        let client = self.clone();
        let transport = move |req: BollardRequest| {
            let client = client.clone();
            async move { client.request(req).await }
        };
        // bollard's own per-request timeout (whole seconds) is a backstop one
        // second behind ours, so ours fires first and is the one recorded.
        let backstop = self.call_timeout.as_secs() + 2;
        Docker::connect_with_custom_transport(transport, Some(ENGINE_BASE), backstop, &version)
            .map_err(|e| Error::docker("connect", e))
    }
}

fn negotiated_version(engine_api: Option<&str>) -> ClientVersion {
    let ours = ClientVersion {
        major_version: API_DEFAULT_VERSION.major_version,
        minor_version: API_DEFAULT_VERSION.minor_version,
    };
    let Some((major, minor)) = engine_api.and_then(|v| v.split_once('.')) else {
        return ours;
    };
    match (major.parse(), minor.parse()) {
        (Ok(major_version), Ok(minor_version)) => {
            let theirs = ClientVersion { major_version, minor_version };
            if theirs < ours { theirs } else { ours }
        }
        _ => ours,
    }
}

/// How many times a body-less read is repeated after a stale connection:
/// enough to get past every idle channel of a dropped SSH connection that
/// the HTTP pool may still hold.
const STALE_RETRIES: usize = 3;

/// The request failed because the HTTP connection under it was already dead,
/// before any response: a dropped SSH connection's leftover channel.
fn is_stale(error: &hyper_util::client::legacy::Error) -> bool {
    if error.is_connect() {
        // The dialer already retried on a fresh SSH connection.
        return false;
    }
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled() || h.is_closed())
        {
            return true;
        }
        if let Some(io) = e.downcast_ref::<io::Error>()
            && matches!(
                io.kind(),
                io::ErrorKind::BrokenPipe
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::NotConnected
            )
        {
            return true;
        }
        current = e.source();
    }
    false
}

/// A bounded metrics label for a Docker request: the method and the path
/// without its version and object names (`GET containers/logs`).
pub fn operation_label(method: &Method, path: &str) -> String {
    let segments: Vec<&str> =
        path.split('/').filter(|s| !s.is_empty()).skip_while(|s| s.starts_with('v') && s[1..].contains('.')).collect();
    const VERBS: &[&str] = &["json", "create", "prune", "load", "search", "events", "info"];
    let shape = match segments.as_slice() {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [first, second] if VERBS.contains(second) => format!("{first}/{second}"),
        [first, _] => format!("{first}/{{id}}"),
        [first, .., last] => format!("{first}/{last}"),
    };
    format!("docker {method} {shape}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_labels_are_bounded() {
        let get = Method::GET;
        assert_eq!(operation_label(&get, "/_ping"), "docker GET _ping");
        assert_eq!(operation_label(&get, "/v1.41/version"), "docker GET version");
        assert_eq!(operation_label(&get, "/v1.41/containers/abc123/logs"), "docker GET containers/logs");
        assert_eq!(operation_label(&Method::DELETE, "/v1.41/containers/abc123"), "docker DELETE containers/{id}");
        assert_eq!(operation_label(&Method::POST, "/v1.41/images/create"), "docker POST images/create");
        assert_eq!(operation_label(&get, "/v1.41/images/127.0.0.1:5000/x/y:1/json"), "docker GET images/json");
    }

    #[test]
    fn version_is_the_lower_of_ours_and_the_engines() {
        let v = negotiated_version(Some("1.41"));
        assert_eq!((v.major_version, v.minor_version), (1, 41));
        let v = negotiated_version(Some("1.99"));
        assert_eq!(v.minor_version, API_DEFAULT_VERSION.minor_version);
        let v = negotiated_version(None);
        assert_eq!(v.minor_version, API_DEFAULT_VERSION.minor_version);
    }
}
