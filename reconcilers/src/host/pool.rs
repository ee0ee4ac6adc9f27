//! One pooled connection per Playroom, shared by every caller.
//!
//! # Guarantees
//!
//! - **One link per Playroom and parameters.** [`Pool::link`] returns the
//!   same [`HostLink`] to every caller while the target's connection
//!   parameters (host, port, user, key, pinned host key, socket path) stay the
//!   same. Changed parameters get a new link (and a new SSH connection); the
//!   old one is dropped when its last user lets go. A changed pin therefore
//!   reconnects once, which also re-verifies the key.
//! - **At most one SSH connection at a time per link.** Connecting happens
//!   under the link's lock, so concurrent callers of a link whose connection is
//!   down wait for a single attempt instead of racing several.
//! - **Reconnect on drop.** A connection found closed (server restarted,
//!   keepalives unanswered, network cut) is replaced on next use. When opening
//!   a channel fails for any reason other than the server refusing that
//!   channel, the link drops the connection and retries once on a fresh one:
//!   nothing had been sent yet, so the retry cannot duplicate a request.
//!   [`HostLink::connection`] also checks that a reused connection answers a
//!   keepalive, because a connection whose server just died looks open until
//!   it is next read. An idle HTTP connection of a dropped SSH connection can
//!   still fail one request: body-less reads are then repeated on a fresh
//!   one (`tunnel::EngineClient::request`); writes are not, and fail.
//! - **Bounded.** Connecting is bounded by `connect_timeout`, each Docker
//!   request by `call_timeout`; both are counted in the metrics
//!   (`ssh_connect`, `docker <METHOD> <path>`).
//! - **Host key checked on every connection**, including reconnects: a
//!   reconnect to a server whose key changed fails with `host_key_mismatch`.
//!   A Playroom with no pin yet is pinned on first contact: the link keeps
//!   the first key it saw and checks every reconnect against it, and the
//!   gateway records it on the Playroom (`DockerHostGateway::with_pins`),
//!   so no later connection, of any replica or code path, goes unchecked.
//!
//! # Caveats
//!
//! - A `bollard::Docker` taken from a link keeps working across reconnects
//!   (it dials through the link), but not across a parameter change: take a
//!   fresh one from the gateway on each reconcile pass.
//! - Links are never evicted; a Playroom costs one idle SSH connection.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bollard::Docker;
use futures::future::BoxFuture;
use play_core::metrics::Metrics;
use play_model::host::{HostError, HostKind, HostTarget, Transport};
use play_model::ssh_keys::HostKeyPin;
use tokio::sync::OnceCell;

use super::HostConfig;
use super::local::LocalDialer;
use super::ssh::{self, ConnectError, SshParams, SshSession};
use super::tunnel::{Dialer, EngineClient, HostStream, Recorder};
use crate::error::{Error, Result};

/// All links of a gateway.
#[derive(Debug)]
pub struct Pool {
    links: Mutex<HashMap<i64, Arc<HostLink>>>,
    cfg: Arc<HostConfig>,
    metrics: Arc<Metrics>,
}

impl Pool {
    pub fn new(cfg: HostConfig, metrics: Arc<Metrics>) -> Self {
        Pool { links: Mutex::new(HashMap::new()), cfg: Arc::new(cfg), metrics }
    }

    pub fn config(&self) -> &HostConfig {
        &self.cfg
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The shared link of `target` (see the module guarantees).
    pub fn link(&self, target: &HostTarget) -> Result<Arc<HostLink>> {
        let mut links = self.links.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(link) = links.get(&target.playroom_id)
            && link.kind == target.kind
        {
            return Ok(Arc::clone(link));
        }
        let link = Arc::new(HostLink::new(target, &self.cfg, &self.metrics)?);
        links.insert(target.playroom_id, Arc::clone(&link));
        Ok(link)
    }
}

/// A live handle on one Playroom's engine.
#[derive(Debug, Clone)]
pub struct HostConnection {
    /// A client that dials through the pooled connection (see the caveats).
    pub docker: Docker,
    pub transport: Transport,
    /// The server's host key (OpenSSH line) of the current SSH connection:
    /// what to pin when the Playroom has no pin yet. `None` for local.
    pub host_key: Option<String>,
    pub host_key_fingerprint: Option<String>,
}

/// One Playroom's connection: the dialer and the bollard client over it.
pub struct HostLink {
    /// The parameters this link was made for; compared on every lookup.
    kind: HostKind,
    dialer: LinkDialer,
    engine: EngineClient,
    docker: OnceCell<Docker>,
}

impl std::fmt::Debug for HostLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostLink").field("kind", &self.kind).finish_non_exhaustive()
    }
}

#[derive(Debug)]
enum LinkDialer {
    Ssh(Arc<SshDialer>),
    Local(Arc<LocalDialer>),
}

impl HostLink {
    fn new(target: &HostTarget, cfg: &Arc<HostConfig>, metrics: &Arc<Metrics>) -> Result<Self> {
        let recorder = Recorder::new(Arc::clone(metrics), target.metrics_label());
        let dialer = match (&target.kind, SshParams::from_target(&target.kind)?) {
            (_, Some(params)) => LinkDialer::Ssh(Arc::new(SshDialer {
                params,
                cfg: Arc::clone(cfg),
                recorder: recorder.clone(),
                current: tokio::sync::Mutex::new(None),
                learned: Mutex::new(None),
            })),
            (HostKind::LocalSocket { path }, None) => LinkDialer::Local(Arc::new(LocalDialer::new(path))),
            (HostKind::Ssh { .. }, None) => {
                return Err(Error::InvalidTarget("SSH target without parameters".into()));
            }
        };
        let as_dialer: Arc<dyn Dialer> = match &dialer {
            LinkDialer::Ssh(d) => Arc::clone(d) as Arc<dyn Dialer>,
            LinkDialer::Local(d) => Arc::clone(d) as Arc<dyn Dialer>,
        };
        Ok(HostLink {
            kind: target.kind.clone(),
            engine: EngineClient::new(as_dialer, cfg, recorder),
            dialer,
            docker: OnceCell::new(),
        })
    }

    /// Makes sure the connection is up (reconnecting if needed) and returns
    /// the engine client with the facts of the current connection.
    pub async fn connection(&self) -> Result<HostConnection> {
        let (transport, host_key, host_key_fingerprint) = match &self.dialer {
            LinkDialer::Ssh(dialer) => {
                let session = dialer.session(true).await.map_err(|e| e.error)?;
                (session.transport, Some(session.host_key_line()), Some(session.host_key_fingerprint()))
            }
            LinkDialer::Local(_) => (Transport::LocalSocket, None, None),
        };
        let docker = self
            .docker
            .get_or_try_init(|| async {
                let engine = self.engine.engine_version().await?;
                self.engine.docker(&engine)
            })
            .await?
            .clone();
        Ok(HostConnection { docker, transport, host_key, host_key_fingerprint })
    }
}

impl HostLink {
    /// A byte stream to the unix socket at `path` on the host, over the
    /// link's connection (see `DockerHostGateway::dial_unix`).
    pub async fn dial_unix(&self, path: &str) -> Result<HostStream> {
        match &self.dialer {
            LinkDialer::Local(_) => Ok(LocalDialer::new(path).connect().await?),
            LinkDialer::Ssh(dialer) => Ok(dialer.open_unix(path).await?),
        }
    }

    /// A byte stream to `host:port` as the host reaches it (see
    /// `DockerHostGateway::dial_tcp`).
    pub async fn dial_tcp(&self, host: &str, port: u16) -> Result<HostStream> {
        match &self.dialer {
            LinkDialer::Local(_) => tokio::net::TcpStream::connect((host, port))
                .await
                .map(HostStream::new)
                .map_err(|e| HostError::Unreachable(format!("{host}:{port}: {e}")).into()),
            LinkDialer::Ssh(dialer) => {
                let session = dialer.session(false).await.map_err(|e| e.error)?;
                session.open_tcp(host, port).await.map_err(|e| match e {
                    russh::Error::ChannelOpenFailure(reason) => HostError::Unreachable(format!(
                        "{host}:{port} through SSH: {reason:?} (nothing listens, or the server forbids TCP forwarding)"
                    ))
                    .into(),
                    other => HostError::Unreachable(format!("{host}:{port} through SSH: {other}")).into(),
                })
            }
        }
    }
}

/// Dials SSH channels over the link's current connection, reconnecting when
/// it is gone.
struct SshDialer {
    params: SshParams,
    cfg: Arc<HostConfig>,
    recorder: Recorder,
    /// The current connection. Held across the connect `await` on purpose:
    /// that is what makes connecting single-flight.
    current: tokio::sync::Mutex<Option<Arc<SshSession>>>,
    /// The key of the first connection when the target pins none: every
    /// reconnect of this link must present it again.
    learned: Mutex<Option<HostKeyPin>>,
}

impl std::fmt::Debug for SshDialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshDialer").field("params", &self.params).finish_non_exhaustive()
    }
}

impl SshDialer {
    /// The live connection, made now if there is none or it has closed.
    /// With `verify`, an existing connection must also answer a keepalive
    /// (one round trip) to be reused.
    async fn session(&self, verify: bool) -> std::result::Result<Arc<SshSession>, ConnectError> {
        let mut current = self.current.lock().await;
        if let Some(session) = current.as_ref()
            && !session.is_closed()
            && (!verify || session.answers(self.cfg.call_timeout).await)
        {
            return Ok(Arc::clone(session));
        }
        *current = None;
        let started = Instant::now();
        let learned = self.learned.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        let result = match learned {
            Some(pin) if self.params.pin.is_none() => {
                ssh::connect(&SshParams { pin: Some(pin), ..self.params.clone() }, &self.cfg).await
            }
            _ => ssh::connect(&self.params, &self.cfg).await,
        };
        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) if matches!(e.error, HostError::Timeout(_)) => "timeout",
            Err(_) => "error",
        };
        self.recorder.record("ssh_connect", outcome, started.elapsed());
        let session = Arc::new(result?);
        if self.params.pin.is_none() {
            let mut learned = self.learned.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            learned.get_or_insert_with(|| HostKeyPin::Key(session.host_key.clone()));
        }
        *current = Some(Arc::clone(&session));
        Ok(session)
    }

    /// Forgets `stale` if it is still the current connection.
    async fn invalidate(&self, stale: &Arc<SshSession>) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|s| Arc::ptr_eq(s, stale)) {
            *current = None;
        }
    }

    async fn open(&self) -> std::result::Result<HostStream, HostError> {
        let mut retried = false;
        loop {
            let session = self.session(false).await.map_err(|e| e.error)?;
            match session.open_stream().await {
                Ok(stream) => return Ok(stream),
                // The server refused this one channel: the connection is
                // fine, and retrying would be refused the same way.
                Err(russh::Error::ChannelOpenFailure(reason)) => {
                    return Err(HostError::Protocol(format!(
                        "the server refused a channel to {}: {reason:?}",
                        self.params.socket
                    )));
                }
                Err(e) if retried => {
                    return Err(HostError::Unreachable(format!("the SSH connection failed twice in a row: {e}")));
                }
                Err(_) => {
                    retried = true;
                    self.invalidate(&session).await;
                }
            }
        }
    }
}

impl SshDialer {
    /// A channel to the unix socket `path`, retried once on a fresh
    /// connection like [`Self::open`].
    async fn open_unix(&self, path: &str) -> std::result::Result<HostStream, HostError> {
        let mut retried = false;
        loop {
            let session = self.session(false).await.map_err(|e| e.error)?;
            let Some(opened) = session.open_unix(path).await else {
                return Err(HostError::Protocol(format!(
                    "the SSH server of {} does not forward to unix sockets, so {path} cannot be reached: \
                     set `AllowStreamLocalForwarding yes` in its sshd_config",
                    self.params.host
                )));
            };
            match opened {
                Ok(stream) => return Ok(stream),
                Err(russh::Error::ChannelOpenFailure(reason)) => {
                    return Err(HostError::Protocol(format!(
                        "the server refused a channel to {path}: {reason:?} (missing, or not writable by the SSH user)"
                    )));
                }
                Err(e) if retried => {
                    return Err(HostError::Unreachable(format!("the SSH connection failed twice in a row: {e}")));
                }
                Err(_) => {
                    retried = true;
                    self.invalidate(&session).await;
                }
            }
        }
    }
}

impl Dialer for SshDialer {
    fn dial(self: Arc<Self>) -> BoxFuture<'static, io::Result<HostStream>> {
        Box::pin(async move { self.open().await.map_err(io::Error::other) })
    }
}

/// Dials over one fixed connection, never reconnecting: `test_connection`
/// tests exactly the connection it made.
#[derive(Debug)]
pub struct SessionDialer(pub Arc<SshSession>);

impl Dialer for SessionDialer {
    fn dial(self: Arc<Self>) -> BoxFuture<'static, io::Result<HostStream>> {
        Box::pin(
            async move { self.0.open_stream().await.map_err(|e| io::Error::other(HostError::Protocol(e.to_string()))) },
        )
    }
}
