//! [`DockerHostGateway`]: the `HostGateway` the binary injects into the API,
//! and the entry point reconcilers use to reach a Playroom's engine.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bollard::Docker;
use play_core::metrics::Metrics;
use play_model::host::{
    ConnectionReport, DockerReport, Failure, FailureStage, HostError, HostGateway, HostKind, HostTarget, SshReport,
    Transport,
};
use play_model::ssh_keys::{self, HostKeyPin};
use play_store::{Store, playroom_checks};

use super::HostConfig;
use super::local::LocalDialer;
pub use super::pool::HostConnection;
use super::pool::{Pool, SessionDialer};
use super::reachability::Reachability;
use super::ssh::{self, SshParams};
use super::tunnel::{Dialer, EngineClient, HostStream, Recorder};
use crate::error::{Error, Result};

/// Docker hosts over SSH (or the local socket), pooled per Playroom.
#[derive(Debug, Clone)]
pub struct DockerHostGateway {
    pool: Arc<Pool>,
    /// Where first-contact host keys are pinned (see [`Self::with_pins`]).
    pins: Option<Store>,
    reachability: Option<Arc<Reachability>>,
}

impl DockerHostGateway {
    pub fn new(cfg: HostConfig, metrics: Arc<Metrics>) -> Self {
        DockerHostGateway { pool: Arc::new(Pool::new(cfg, metrics)), pins: None, reachability: None }
    }

    /// Records the host key of a Playroom's first connection on the
    /// Playroom (trust on first use), from whichever path connects first,
    /// and refuses a connection whose key is not the one pinned meanwhile.
    /// `play serve` always sets it; without it a link still checks its
    /// reconnects against its first key, but nothing is persisted.
    pub fn with_pins(mut self, store: Store) -> Self {
        self.pins = Some(store);
        self
    }

    /// Reports every connection's outcome on its Playroom (`reachable`,
    /// `unreachable_since`, `unreachable_reason`) in `store`; see
    /// [`Reachability`]. `play serve` turns it on; a gateway without it (the
    /// API's `test_connection` records its own outcome) reports nothing.
    pub fn reporting_reachability(mut self, store: Store) -> Self {
        self.reachability = Some(Arc::new(Reachability::new(store)));
        self
    }

    pub fn config(&self) -> &HostConfig {
        self.pool.config()
    }

    /// The process's metrics, which this gateway's calls are counted in
    /// (the edge's activity monitors count their wake lines there too).
    pub fn metrics(&self) -> &Arc<Metrics> {
        self.pool.metrics()
    }

    /// The pooled connection to `target`'s engine, (re)connecting if needed.
    /// Its `host_key` is what a reconciler stores when the Playroom has no pin
    /// yet.
    pub async fn connection(&self, target: &HostTarget) -> Result<HostConnection> {
        let connected = match self.pool.link(target) {
            Ok(link) => link.connection().await,
            Err(e) => Err(e),
        };
        let connected = match connected {
            Ok(connection) => self.pin_first_contact(target, &connection).await.map(|()| connection),
            Err(e) => Err(e),
        };
        if let Some(reachability) = &self.reachability {
            reachability.observe(target.playroom_id, &connected).await;
        }
        connected
    }

    /// See [`Self::with_pins`].
    async fn pin_first_contact(&self, target: &HostTarget, connection: &HostConnection) -> Result<()> {
        let (Some(store), HostKind::Ssh { pinned_host_key: None, .. }, Some(key), Some(fingerprint)) =
            (&self.pins, &target.kind, &connection.host_key, &connection.host_key_fingerprint)
        else {
            return Ok(());
        };
        let pinned = playroom_checks::pin_first_contact(store, target.playroom_id, key).await?;
        match pinned.as_deref().map(HostKeyPin::parse) {
            Some(Ok(pin)) if pin.fingerprint() != *fingerprint => Err(HostError::HostKeyMismatch(format!(
                "the host presented {fingerprint}, but the Playroom was pinned to {} meanwhile",
                pin.fingerprint()
            ))
            .into()),
            _ => Ok(()),
        }
    }

    /// A bollard client for `target`, over the pooled connection.
    pub async fn docker(&self, target: &HostTarget) -> Result<Docker> {
        Ok(self.connection(target).await?.docker)
    }

    /// A byte stream to the unix socket at `path` on `target`'s host, over
    /// the pooled connection (SSH `direct-streamlocal`, or the socket itself
    /// for a local Playroom). Used for the edge's admin socket; the caller
    /// bounds its use.
    pub async fn dial_unix(&self, target: &HostTarget, path: &str) -> Result<HostStream> {
        self.connection(target).await?;
        self.pool.link(target)?.dial_unix(path).await
    }

    /// A byte stream to `host:port` as `target`'s host reaches it (SSH
    /// `direct-tcpip`, or a plain connection for a local Playroom): a
    /// container's port on a bridge network, for health probes.
    pub async fn dial_tcp(&self, target: &HostTarget, host: &str, port: u16) -> Result<HostStream> {
        self.connection(target).await?;
        self.pool.link(target)?.dial_tcp(host, port).await
    }

    async fn logs(&self, target: &HostTarget, container: &str, tail: usize) -> Result<Vec<String>> {
        let docker = self.docker(target).await?;
        crate::docker::logs::tail(&docker, container, tail, self.config().call_timeout).await
    }

    async fn test_ssh(&self, target: &HostTarget, params: &SshParams) -> ConnectionReport {
        let mut report = blank_report(true);
        let recorder = self.recorder(target);
        let started = Instant::now();
        let connected = ssh::connect(params, self.config()).await;
        let outcome = match &connected {
            Ok(_) => "ok",
            Err(e) if matches!(e.error, HostError::Timeout(_)) => "timeout",
            Err(_) => "error",
        };
        recorder.record("ssh_connect", outcome, started.elapsed());
        let ssh = report.ssh.get_or_insert_with(SshReport::default);
        let session = match connected {
            Ok(session) => Arc::new(session),
            Err(e) => {
                ssh.reachable = e.observed.reachable;
                ssh.authenticated = e.observed.authenticated;
                if let Some(key) = &e.observed.host_key {
                    ssh.host_key = Some(ssh_keys::public_key_line(key));
                    ssh.host_key_fingerprint = Some(key.fingerprint(ssh_keys::ssh_key::HashAlg::Sha256).to_string());
                }
                if e.stage == FailureStage::Docker {
                    report.docker.error = Some(e.error.message().to_owned());
                } else {
                    ssh.error = Some(e.error.message().to_owned());
                }
                return fail(report, e.stage, &e.error);
            }
        };
        ssh.reachable = true;
        ssh.authenticated = true;
        ssh.host_key = Some(session.host_key_line());
        ssh.host_key_fingerprint = Some(session.host_key_fingerprint());
        ssh.host_key_pinned_now = params.pin.is_none();
        report.transport = Some(session.transport);
        let dialer: Arc<dyn Dialer> = Arc::new(SessionDialer(Arc::clone(&session)));
        let report = self.test_engine(report, dialer, recorder).await;
        session.close().await;
        report
    }

    async fn test_local(&self, target: &HostTarget, path: &str) -> ConnectionReport {
        let mut report = blank_report(false);
        report.transport = Some(Transport::LocalSocket);
        let dialer: Arc<dyn Dialer> = Arc::new(LocalDialer::new(path));
        self.test_engine(report, dialer, self.recorder(target)).await
    }

    /// The Docker stage: version, then one timed ping.
    async fn test_engine(
        &self,
        mut report: ConnectionReport,
        dialer: Arc<dyn Dialer>,
        recorder: Recorder,
    ) -> ConnectionReport {
        let engine = EngineClient::new(dialer, self.config(), recorder);
        let version = match engine.engine_version().await {
            Ok(version) => version,
            Err(e) => return docker_failure(report, e),
        };
        report.docker.version = version.version.clone();
        report.docker.api_version = version.api_version.clone();
        report.docker.os = match (&version.os, &version.arch) {
            (Some(os), Some(arch)) => Some(format!("{os}/{arch}")),
            (os, _) => os.clone(),
        };
        let docker = match engine.docker(&version) {
            Ok(docker) => docker,
            Err(e) => return docker_failure(report, e),
        };
        let started = Instant::now();
        if let Err(e) = docker.ping().await {
            return docker_failure(report, Error::docker("ping", e));
        }
        report.latency_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
        report.docker.reachable = true;
        report.ok = true;
        report
    }

    fn recorder(&self, target: &HostTarget) -> Recorder {
        Recorder::new(Arc::clone(self.pool.metrics()), target.metrics_label())
    }
}

fn blank_report(ssh: bool) -> ConnectionReport {
    ConnectionReport {
        ok: false,
        ssh: ssh.then(SshReport::default),
        docker: DockerReport::default(),
        transport: None,
        latency_ms: None,
        failure: None,
    }
}

fn fail(mut report: ConnectionReport, stage: FailureStage, error: &HostError) -> ConnectionReport {
    report.ok = false;
    report.failure = Some(Failure { stage, kind: error.kind(), message: error.message().to_owned() });
    report
}

fn docker_failure(mut report: ConnectionReport, error: Error) -> ConnectionReport {
    let error = error.into_host_error();
    report.docker.error = Some(error.message().to_owned());
    fail(report, FailureStage::Docker, &error)
}

#[async_trait]
impl HostGateway for DockerHostGateway {
    async fn test_connection(&self, target: &HostTarget) -> ConnectionReport {
        match (&target.kind, SshParams::from_target(&target.kind)) {
            (HostKind::LocalSocket { path }, _) => self.test_local(target, path).await,
            (HostKind::Ssh { .. }, Ok(Some(params))) => self.test_ssh(target, &params).await,
            (HostKind::Ssh { .. }, Ok(None)) => fail(
                blank_report(true),
                FailureStage::Connect,
                &HostError::Protocol("SSH target without parameters".into()),
            ),
            (HostKind::Ssh { .. }, Err(e)) => {
                fail(blank_report(true), FailureStage::Auth, &HostError::Protocol(e.to_string()))
            }
        }
    }

    async fn service_logs(
        &self,
        target: &HostTarget,
        container: &str,
        tail: usize,
    ) -> std::result::Result<Vec<String>, HostError> {
        self.logs(target, container, tail).await.map_err(Error::into_host_error)
    }

    async fn follow_logs(
        &self,
        target: &HostTarget,
        container: &str,
        tail: usize,
        bound: std::time::Duration,
    ) -> std::result::Result<play_model::host::LogLines, HostError> {
        let docker = self.docker(target).await.map_err(Error::into_host_error)?;
        crate::docker::logs::follow(docker, container, tail, bound, self.config().call_timeout)
            .await
            .map_err(Error::into_host_error)
    }
}
