//! The `HostGateway` seam: live, read-only queries against a Playroom's Docker
//! host (connection tests, logs). Defined here, implemented in
//! `play-reconcilers`, injected into the API by the binary, so the API crate
//! never depends on russh or bollard.
//!
//! Everything in this module is plain data: no russh or bollard type crosses
//! the seam, so the API can serialise a [`ConnectionReport`] as the response
//! body of `POST /api/playrooms/:id/test_connection` as it is.
//!
//! # Host key pinning
//!
//! [`HostKind::Ssh::pinned_host_key`] is trust on first use, made explicit:
//!
//! - `None`: the first successful connection accepts the server's key and
//!   reports it ([`SshReport::host_key`], [`SshReport::host_key_fingerprint`])
//!   with [`SshReport::host_key_pinned_now`] `true`. The gateway stores
//!   nothing; the *caller* persists [`SshReport::host_key`] on the Playroom so
//!   every later target carries it.
//! - `Some(pin)`: a server presenting any other key is refused during the key
//!   exchange, before authentication, with [`FailureKind::HostKeyMismatch`].
//!   The gateway never connects silently to a changed key.

use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Where a Playroom's Docker engine listens on the host, unless the Playroom
/// says otherwise (rootless Docker uses `/run/user/<uid>/docker.sock`).
pub const DEFAULT_DOCKER_SOCKET: &str = "/var/run/docker.sock";

/// One Playroom's host, as the gateway needs it to connect. Built by the
/// caller from the stored Playroom (with its private key decrypted) for each
/// call; the gateway keys its connection pool on these fields, so a changed
/// host, port, user, key or socket makes a new connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostTarget {
    pub playroom_id: i64,
    pub kind: HostKind,
}

/// How the Docker engine of a Playroom is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum HostKind {
    /// Over SSH: a `direct-streamlocal@openssh.com` channel to `docker_socket`
    /// per HTTP connection, or `docker system dial-stdio` when the server
    /// refuses stream-local forwarding.
    Ssh {
        host: String,
        port: u16,
        user: String,
        /// The decrypted private key in OpenSSH format (as
        /// [`crate::ssh_keys::parse_private_key`] normalises it). Never logged:
        /// `Debug` redacts it.
        private_key_openssh: String,
        /// The pinned host key: an OpenSSH public key line
        /// (`ssh-ed25519 AAAA...`, what [`SshReport::host_key`] reports and
        /// what the caller should store) or a `SHA256:...` fingerprint (what a
        /// user may paste from `ssh-keygen -lf`). A public key line also
        /// restricts the key exchange to that key's algorithm, so a server with
        /// several host keys presents the pinned one.
        pinned_host_key: Option<String>,
        /// Path of the Docker socket on the host, usually
        /// [`DEFAULT_DOCKER_SOCKET`].
        docker_socket: String,
    },
    /// The Docker engine of the machine play runs on, through its Unix
    /// socket: single-machine installs and the quickstart.
    LocalSocket { path: String },
}

impl fmt::Debug for HostKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostKind::Ssh { host, port, user, private_key_openssh: _, pinned_host_key, docker_socket } => f
                .debug_struct("Ssh")
                .field("host", host)
                .field("port", port)
                .field("user", user)
                .field("private_key_openssh", &"<redacted>")
                .field("pinned_host_key", pinned_host_key)
                .field("docker_socket", docker_socket)
                .finish(),
            HostKind::LocalSocket { path } => f.debug_struct("LocalSocket").field("path", path).finish(),
        }
    }
}

impl HostTarget {
    /// An SSH target using the default Docker socket path.
    pub fn ssh(
        playroom_id: i64,
        host: impl Into<String>,
        port: u16,
        user: impl Into<String>,
        private_key_openssh: impl Into<String>,
        pinned_host_key: Option<String>,
    ) -> Self {
        HostTarget {
            playroom_id,
            kind: HostKind::Ssh {
                host: host.into(),
                port,
                user: user.into(),
                private_key_openssh: private_key_openssh.into(),
                pinned_host_key,
                docker_socket: DEFAULT_DOCKER_SOCKET.to_owned(),
            },
        }
    }

    /// A target on the local Docker socket.
    pub fn local(playroom_id: i64, path: impl Into<String>) -> Self {
        HostTarget { playroom_id, kind: HostKind::LocalSocket { path: path.into() } }
    }

    /// The `host` label of this target's metrics: `playroom:<id>`, bounded by
    /// the number of Playrooms and free of user-supplied text.
    pub fn metrics_label(&self) -> String {
        format!("playroom:{}", self.playroom_id)
    }
}

/// The path used to talk to the Docker engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// One `direct-streamlocal@openssh.com` channel per HTTP connection: the
    /// preferred path, no process started on the host.
    DirectStreamlocal,
    /// `docker system dial-stdio` run over an SSH exec channel per HTTP
    /// connection: used when sshd refuses stream-local forwarding.
    DialStdio,
    /// The local Unix socket, no SSH.
    LocalSocket,
}

/// The step of a connection that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureStage {
    /// Reaching the SSH server: TCP connect and the SSH handshake.
    Connect,
    /// Verifying the server's host key against the pin.
    HostKey,
    /// Public key authentication.
    Auth,
    /// Reaching the Docker engine through the tunnel, or the engine's answer.
    Docker,
}

/// Why a connection or a call failed. Each kind names something the user can
/// act on; `protocol` is the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Nothing listens (connection refused), or the name or route is missing.
    Unreachable,
    /// No answer within the time bound.
    Timeout,
    /// The server refused the key for this user.
    AuthRefused,
    /// The server's host key differs from the pinned one.
    HostKeyMismatch,
    /// The Docker socket does not exist on the host.
    SocketMissing,
    /// The SSH user may not open the Docker socket.
    PermissionDenied,
    /// sshd refused stream-local forwarding and the `dial-stdio` fallback
    /// could not run (no shell for the user, or no `docker` CLI).
    ForwardingRefused,
    /// The engine has no such object (container, image).
    NotFound,
    /// Anything else: a malformed answer, an engine error, a closed channel.
    Protocol,
}

impl FailureKind {
    /// The snake_case name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Unreachable => "unreachable",
            FailureKind::Timeout => "timeout",
            FailureKind::AuthRefused => "auth_refused",
            FailureKind::HostKeyMismatch => "host_key_mismatch",
            FailureKind::SocketMissing => "socket_missing",
            FailureKind::PermissionDenied => "permission_denied",
            FailureKind::ForwardingRefused => "forwarding_refused",
            FailureKind::NotFound => "not_found",
            FailureKind::Protocol => "protocol",
        }
    }
}

/// The failure of a host call: what kind, and a message for humans. Messages
/// never contain key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum HostError {
    #[error("host unreachable: {0}")]
    Unreachable(String),
    #[error("timed out: {0}")]
    Timeout(String),
    #[error("authentication refused: {0}")]
    AuthRefused(String),
    #[error("host key mismatch: {0}")]
    HostKeyMismatch(String),
    #[error("Docker socket missing: {0}")]
    SocketMissing(String),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    #[error("stream-local forwarding refused and no fallback: {0}")]
    ForwardingRefused(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("protocol error: {0}")]
    Protocol(String),
}

impl HostError {
    pub fn kind(&self) -> FailureKind {
        match self {
            HostError::Unreachable(_) => FailureKind::Unreachable,
            HostError::Timeout(_) => FailureKind::Timeout,
            HostError::AuthRefused(_) => FailureKind::AuthRefused,
            HostError::HostKeyMismatch(_) => FailureKind::HostKeyMismatch,
            HostError::SocketMissing(_) => FailureKind::SocketMissing,
            HostError::PermissionDenied(_) => FailureKind::PermissionDenied,
            HostError::ForwardingRefused(_) => FailureKind::ForwardingRefused,
            HostError::NotFound(_) => FailureKind::NotFound,
            HostError::Protocol(_) => FailureKind::Protocol,
        }
    }

    /// The message without the kind's prefix.
    pub fn message(&self) -> &str {
        match self {
            HostError::Unreachable(m)
            | HostError::Timeout(m)
            | HostError::AuthRefused(m)
            | HostError::HostKeyMismatch(m)
            | HostError::SocketMissing(m)
            | HostError::PermissionDenied(m)
            | HostError::ForwardingRefused(m)
            | HostError::NotFound(m)
            | HostError::Protocol(m) => m,
        }
    }
}

/// The response body of `test_connection`: each stage of reaching the
/// Docker engine, how far it got, and the first failure.
///
/// Invariant: `ok` is true exactly when `failure` is `None`; a stage after the
/// failed one reports `reachable: false` and no error of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionReport {
    /// Every stage succeeded: the Docker engine answered a ping.
    pub ok: bool,
    /// The SSH stages; `None` for a local-socket Playroom.
    pub ssh: Option<SshReport>,
    pub docker: DockerReport,
    /// The path chosen to the engine, once known.
    pub transport: Option<Transport>,
    /// Round trip of one Docker `/_ping` over the established path, in
    /// milliseconds (connection set-up excluded).
    pub latency_ms: Option<f64>,
    /// The first stage that failed, and why.
    pub failure: Option<Failure>,
}

/// The SSH side of a [`ConnectionReport`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SshReport {
    /// The TCP connection and SSH handshake completed.
    pub reachable: bool,
    /// The server accepted the private key.
    pub authenticated: bool,
    /// The key the server presented, as an OpenSSH public key line: the
    /// value to store as the Playroom's pin. Reported on every connection that
    /// got as far as the key exchange, even a mismatching one.
    pub host_key: Option<String>,
    /// `SHA256:...` fingerprint of `host_key`, as `ssh-keygen -lf` prints it.
    pub host_key_fingerprint: Option<String>,
    /// No key was pinned and this call accepted the server's: the caller
    /// must now store `host_key`.
    pub host_key_pinned_now: bool,
    /// What went wrong at this stage, for humans.
    pub error: Option<String>,
}

/// The Docker side of a [`ConnectionReport`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DockerReport {
    /// The engine answered through the tunnel.
    pub reachable: bool,
    /// Engine version, e.g. `20.10.24`.
    pub version: Option<String>,
    /// Highest Engine API version the engine speaks, e.g. `1.41`.
    pub api_version: Option<String>,
    /// Engine OS/architecture, e.g. `linux/amd64`.
    pub os: Option<String>,
    pub error: Option<String>,
}

/// The first failed stage of a [`ConnectionReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub stage: FailureStage,
    pub kind: FailureKind,
    pub message: String,
}

/// Live, read-only access to Playroom hosts.
///
/// Implementations bound every call in time (default 10 s) and never panic
/// on a host's answer; a failure is data ([`ConnectionReport::failure`] or a
/// [`HostError`]).
#[async_trait]
pub trait HostGateway: Send + Sync + fmt::Debug {
    /// Reaches the host afresh (no pooled connection is trusted) and reports
    /// every stage. Never returns an error: a failure is in the report.
    async fn test_connection(&self, target: &HostTarget) -> ConnectionReport;

    /// The last `tail` lines (stdout and stderr interleaved, without
    /// timestamps) of a container's log.
    async fn service_logs(&self, target: &HostTarget, container: &str, tail: usize) -> Result<Vec<String>, HostError>;

    /// Follows a container's log: its last `tail` lines, then every line as
    /// the container writes it. The receiver ends when `bound` has passed,
    /// [`FOLLOW_MAX_BYTES`] were sent, the container's log ends, or the
    /// caller drops it (which stops the read on the host). A missing
    /// container is `HostError::NotFound`, before anything is sent.
    async fn follow_logs(
        &self,
        target: &HostTarget,
        container: &str,
        tail: usize,
        bound: std::time::Duration,
    ) -> Result<LogLines, HostError>;
}

/// Lines of a followed log ([`HostGateway::follow_logs`]), each clipped
/// like [`HostGateway::service_logs`]'s; an error ends the stream.
pub type LogLines = tokio::sync::mpsc::Receiver<Result<String, HostError>>;

/// The most log bytes one follow sends: a client that follows a chatty
/// service for long reconnects for more.
pub const FOLLOW_MAX_BYTES: usize = 16 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_private_key() {
        let target = HostTarget::ssh(
            7,
            "example.org",
            22,
            "deploy",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret-material\n",
            None,
        );
        let shown = format!("{target:?} {target:#?}");
        assert!(!shown.contains("secret-material"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert!(shown.contains("example.org"), "{shown}");
    }

    #[test]
    fn report_serialises_kinds_and_transport_as_the_api_documents() {
        let report = ConnectionReport {
            ok: false,
            ssh: Some(SshReport::default()),
            docker: DockerReport::default(),
            transport: Some(Transport::DirectStreamlocal),
            latency_ms: None,
            failure: Some(Failure {
                stage: FailureStage::HostKey,
                kind: FailureKind::HostKeyMismatch,
                message: "changed".into(),
            }),
        };
        let json = serde_json::to_value(&report).unwrap_or_default();
        assert_eq!(json["transport"], "direct-streamlocal");
        assert_eq!(json["failure"]["stage"], "host_key");
        assert_eq!(json["failure"]["kind"], "host_key_mismatch");
        let back: ConnectionReport = serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, report);
    }

    #[test]
    fn error_kind_names_match_serde() {
        for err in [
            HostError::Unreachable(String::new()),
            HostError::SocketMissing(String::new()),
            HostError::ForwardingRefused(String::new()),
        ] {
            let json = serde_json::to_value(&err).unwrap_or_default();
            assert_eq!(json["kind"], err.kind().as_str());
            let kind = serde_json::to_value(err.kind()).unwrap_or_default();
            assert_eq!(kind, err.kind().as_str());
        }
    }
}
