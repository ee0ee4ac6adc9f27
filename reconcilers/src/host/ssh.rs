//! The russh client: one SSH connection to a Playroom, verified and
//! authenticated, with the path to the Docker socket chosen.
//!
//! Order of checks, each with its own failure kind: TCP connect
//! (`unreachable`), key exchange with the host key checked against the pin
//! *before* authentication (`host_key_mismatch`), public key auth
//! (`auth_refused`), then the transport probe: a `direct-streamlocal` channel
//! to the socket, or, when sshd refuses it, a shell probe that tells a missing
//! socket (`socket_missing`) from a forbidden one (`permission_denied`) from
//! disabled forwarding (then `docker system dial-stdio` is used). sshd answers
//! every refused stream-local open with the same "open failed", so the probe is
//! the only way to say which. The whole sequence is bounded by
//! `HostConfig::connect_timeout` (`timeout`).

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use play_model::host::{FailureStage, HostError, HostKind, Transport};
use play_model::ssh_keys::{self, HostKeyPin};
use russh::client::{self, AuthResult, Handle};
use russh::keys::ssh_key::{Algorithm, HashAlg, PublicKey};
use russh::keys::{PrivateKey, PrivateKeyWithHashAlg};
use russh::{ChannelMsg, Disconnect};

use super::HostConfig;
use super::tunnel::HostStream;
use crate::error::Error;

/// What an SSH target needs to connect; built from [`HostKind::Ssh`].
#[derive(Clone, PartialEq, Eq)]
pub struct SshParams {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub key: Arc<PrivateKey>,
    pub pin: Option<HostKeyPin>,
    pub socket: String,
}

impl fmt::Debug for SshParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshParams")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("key", &"<redacted>")
            .field("pin", &self.pin.as_ref().map(HostKeyPin::fingerprint))
            .field("socket", &self.socket)
            .finish()
    }
}

impl SshParams {
    /// `None` for a local-socket target.
    pub fn from_target(kind: &HostKind) -> Result<Option<Self>, Error> {
        let HostKind::Ssh { host, port, user, private_key_openssh, pinned_host_key, docker_socket } = kind else {
            return Ok(None);
        };
        let key = PrivateKey::from_openssh(private_key_openssh.trim())
            .map_err(|e| Error::InvalidTarget(format!("the stored private key: {e}")))?;
        let pin = pinned_host_key
            .as_deref()
            .map(HostKeyPin::parse)
            .transpose()
            .map_err(|e| Error::InvalidTarget(format!("the pinned host key: {e}")))?;
        Ok(Some(SshParams {
            host: host.clone(),
            port: *port,
            user: user.clone(),
            key: Arc::new(key),
            pin,
            socket: docker_socket.clone(),
        }))
    }

    fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// How far a connection attempt got; kept when it fails, for the report.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub reachable: bool,
    pub host_key: Option<PublicKey>,
    pub authenticated: bool,
}

/// A failed connection attempt: the stage, why, and how far it got.
#[derive(Debug, Clone)]
pub struct ConnectError {
    pub stage: FailureStage,
    pub error: HostError,
    pub observed: Observed,
}

/// One authenticated SSH connection and the chosen path to the socket.
pub struct SshSession {
    handle: Handle<Client>,
    pub host_key: PublicKey,
    pub transport: Transport,
    socket: String,
}

impl fmt::Debug for SshSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshSession")
            .field("host_key", &self.host_key_fingerprint())
            .field("transport", &self.transport)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl SshSession {
    /// The connection has ended (server gone, keepalives unanswered,
    /// disconnected); it will never carry another channel.
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Whether the server still answers: one keepalive round trip, bounded.
    /// A connection whose peer just went away can look open until its next
    /// read; this forces that read.
    pub async fn answers(&self, bound: std::time::Duration) -> bool {
        let pong = tokio::time::timeout(bound, self.handle.send_ping()).await;
        matches!(pong, Ok(Ok(()))) && !self.is_closed()
    }

    pub fn host_key_line(&self) -> String {
        ssh_keys::public_key_line(&self.host_key)
    }

    pub fn host_key_fingerprint(&self) -> String {
        self.host_key.fingerprint(HashAlg::Sha256).to_string()
    }

    /// A new byte stream to the Docker engine over this connection: one
    /// channel, used for one HTTP connection.
    pub async fn open_stream(&self) -> Result<HostStream, russh::Error> {
        let channel = match self.transport {
            Transport::DialStdio => {
                let channel = self.handle.channel_open_session().await?;
                channel.exec(false, dial_stdio_command(&self.socket)).await?;
                channel
            }
            Transport::DirectStreamlocal | Transport::LocalSocket => {
                self.handle.channel_open_direct_streamlocal(self.socket.clone()).await?
            }
        };
        Ok(HostStream::new(channel.into_stream()))
    }

    /// A new byte stream to another unix socket on the host (the edge's
    /// admin socket): a `direct-streamlocal` channel. `None` when the
    /// server does not forward to unix sockets (the connection reaches
    /// Docker through `docker system dial-stdio`), which only reaches the
    /// Docker socket.
    pub async fn open_unix(&self, path: &str) -> Option<Result<HostStream, russh::Error>> {
        match self.transport {
            Transport::DialStdio => None,
            Transport::DirectStreamlocal | Transport::LocalSocket => Some(
                self.handle
                    .channel_open_direct_streamlocal(path.to_owned())
                    .await
                    .map(|c| HostStream::new(c.into_stream())),
            ),
        }
    }

    /// A new byte stream to `host:port` as the SSH server reaches it (a
    /// container's address on a bridge network): a `direct-tcpip` channel.
    pub async fn open_tcp(&self, host: &str, port: u16) -> Result<HostStream, russh::Error> {
        let channel = self.handle.channel_open_direct_tcpip(host.to_owned(), u32::from(port), "127.0.0.1", 0).await?;
        Ok(HostStream::new(channel.into_stream()))
    }

    /// Ends the connection politely (test_connection's one-off sessions).
    pub async fn close(&self) {
        let _ = self.handle.disconnect(Disconnect::ByApplication, "", "en").await;
    }
}

/// The russh handler: checks the host key against the pin and remembers
/// what the server presented.
struct Client {
    pin: Option<HostKeyPin>,
    observed: Arc<Mutex<Observed>>,
}

fn lock(observed: &Mutex<Observed>) -> MutexGuard<'_, Observed> {
    // Only plain assignments happen under this lock: a poisoned value is
    // still consistent.
    observed.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(&mut self, key: &PublicKey) -> Result<bool, Self::Error> {
        lock(&self.observed).host_key = Some(key.clone());
        Ok(self.pin.as_ref().is_none_or(|pin| pin.matches(key)))
    }
}

/// Connects, verifies, authenticates and probes, within
/// `cfg.connect_timeout`.
pub async fn connect(params: &SshParams, cfg: &HostConfig) -> Result<SshSession, ConnectError> {
    let observed = Arc::new(Mutex::new(Observed::default()));
    let attempt = connect_inner(params, cfg, Arc::clone(&observed));
    match tokio::time::timeout(cfg.connect_timeout, attempt).await {
        Ok(result) => result,
        Err(_) => {
            let observed = lock(&observed).clone();
            let stage = if observed.authenticated {
                FailureStage::Docker
            } else if observed.host_key.is_some() {
                FailureStage::Auth
            } else {
                FailureStage::Connect
            };
            Err(ConnectError {
                stage,
                error: HostError::Timeout(format!(
                    "{} did not complete the SSH connection within {:?}",
                    params.address(),
                    cfg.connect_timeout
                )),
                observed,
            })
        }
    }
}

async fn connect_inner(
    params: &SshParams,
    cfg: &HostConfig,
    observed: Arc<Mutex<Observed>>,
) -> Result<SshSession, ConnectError> {
    let fail = |stage, error| ConnectError { stage, error, observed: lock(&observed).clone() };
    let tcp = tokio::net::TcpStream::connect((params.host.as_str(), params.port))
        .await
        .map_err(|e| fail(FailureStage::Connect, classify_tcp(params, &e)))?;
    let _ = tcp.set_nodelay(true);
    let tcp = super::quickack::QuickAck::new(tcp);

    let handler = Client { pin: params.pin.clone(), observed: Arc::clone(&observed) };
    let mut handle = client::connect_stream(Arc::new(russh_config(params, cfg)), tcp, handler)
        .await
        .map_err(|e| handshake_failure(params, &e, &lock(&observed)))?;
    lock(&observed).reachable = true;
    let host_key = lock(&observed)
        .host_key
        .clone()
        .ok_or_else(|| fail(FailureStage::HostKey, HostError::Protocol("no host key".into())))?;

    let hash = match handle.best_supported_rsa_hash().await {
        Ok(hash) => hash.flatten(),
        Err(_) => None,
    };
    let key = PrivateKeyWithHashAlg::new(Arc::clone(&params.key), hash);
    let auth = handle
        .authenticate_publickey(params.user.clone(), key)
        .await
        .map_err(|e| fail(FailureStage::Auth, HostError::Protocol(e.to_string())))?;
    if !matches!(auth, AuthResult::Success) {
        return Err(fail(
            FailureStage::Auth,
            HostError::AuthRefused(format!(
                "{} refused the key {} for user {}; add the Playroom's public key to that \
                 user's ~/.ssh/authorized_keys",
                params.address(),
                params.key.fingerprint(HashAlg::Sha256),
                params.user
            )),
        ));
    }
    lock(&observed).authenticated = true;

    let transport = probe_transport(&handle, params).await.map_err(|e| fail(FailureStage::Docker, e))?;
    Ok(SshSession { handle, host_key, transport, socket: params.socket.clone() })
}

fn russh_config(params: &SshParams, cfg: &HostConfig) -> client::Config {
    let mut preferred = russh::Preferred::default();
    // A pinned public key names its algorithm: ask for exactly that one, so a
    // server with several host keys presents the pinned key.
    if let Some(algorithm) = params.pin.as_ref().and_then(HostKeyPin::algorithm) {
        preferred.key = Cow::Owned(match algorithm {
            Algorithm::Rsa { .. } => {
                vec![Algorithm::Rsa { hash: Some(HashAlg::Sha512) }, Algorithm::Rsa { hash: Some(HashAlg::Sha256) }]
            }
            other => vec![other],
        });
    }
    client::Config {
        inactivity_timeout: Some(cfg.inactivity_timeout),
        keepalive_interval: Some(cfg.keepalive_interval),
        keepalive_max: cfg.keepalive_max,
        nodelay: true,
        preferred,
        ..client::Config::default()
    }
}

fn classify_tcp(params: &SshParams, e: &std::io::Error) -> HostError {
    use std::io::ErrorKind as K;
    let what = format!("{}: {e}", params.address());
    match e.kind() {
        K::TimedOut => HostError::Timeout(what),
        K::ConnectionRefused => HostError::Unreachable(format!(
            "{} refused the connection (is sshd running on that port?)",
            params.address()
        )),
        _ => HostError::Unreachable(what),
    }
}

fn handshake_failure(params: &SshParams, e: &russh::Error, observed: &Observed) -> ConnectError {
    let (stage, error) = match e {
        russh::Error::UnknownKey => {
            let presented = observed
                .host_key
                .as_ref()
                .map(|k| k.fingerprint(HashAlg::Sha256).to_string())
                .unwrap_or_else(|| "an unknown key".into());
            let pinned = params.pin.as_ref().map(HostKeyPin::fingerprint).unwrap_or_default();
            (
                FailureStage::HostKey,
                HostError::HostKeyMismatch(format!(
                    "{} presented host key {presented}, but the Playroom pins {pinned}; refusing \
                     to connect. If the host was really reinstalled, verify the new key and \
                     update the pin",
                    params.address()
                )),
            )
        }
        russh::Error::Version => {
            (FailureStage::Connect, HostError::Protocol(format!("{} is not an SSH server", params.address())))
        }
        other => {
            (FailureStage::Connect, HostError::Protocol(format!("SSH handshake with {}: {other}", params.address())))
        }
    };
    ConnectError { stage, error, observed: observed.clone() }
}

/// Chooses the path to the socket (see the module docs).
async fn probe_transport(handle: &Handle<Client>, params: &SshParams) -> Result<Transport, HostError> {
    match handle.channel_open_direct_streamlocal(params.socket.clone()).await {
        Ok(channel) => {
            let _ = channel.close().await;
            return Ok(Transport::DirectStreamlocal);
        }
        Err(russh::Error::ChannelOpenFailure(_)) => {}
        Err(other) => return Err(HostError::Protocol(other.to_string())),
    }
    let socket = &params.socket;
    let quoted = shell_quote(socket);
    let script = format!(
        "s={quoted}; [ -e \"$s\" ] || exit 10; [ -S \"$s\" ] || exit 13; \
         [ -r \"$s\" ] && [ -w \"$s\" ] || exit 11; \
         command -v docker >/dev/null 2>&1 || exit 12; exit 0"
    );
    let output = run(handle, &script).await.map_err(|e| HostError::Protocol(e.to_string()))?;
    let user = &params.user;
    match output.status {
        Some(0) => Ok(Transport::DialStdio),
        Some(10) => Err(HostError::SocketMissing(format!(
            "{socket} does not exist on the host; is Docker installed and running?"
        ))),
        Some(13) => Err(HostError::SocketMissing(format!("{socket} exists on the host but is not a socket"))),
        Some(11) => Err(HostError::PermissionDenied(format!(
            "user {user} may not open {socket}; add {user} to the docker group"
        ))),
        Some(12) => Err(HostError::ForwardingRefused(format!(
            "sshd refused stream-local forwarding to {socket} (AllowStreamLocalForwarding) and \
             the docker CLI needed for the dial-stdio fallback is not installed"
        ))),
        status => Err(HostError::ForwardingRefused(format!(
            "sshd refused a stream-local channel to {socket}, and running a shell command as \
             {user} failed too (exit {status:?}: {}); allow AllowStreamLocalForwarding, or \
             give {user} a POSIX shell and the docker CLI",
            output.stderr.trim()
        ))),
    }
}

/// The output of one command run over an exec channel.
#[derive(Debug, Default)]
pub struct ExecOutput {
    /// `None` when the server refused the command or sent no exit status.
    pub status: Option<u32>,
    pub stdout: String,
    pub stderr: String,
}

async fn run(handle: &Handle<Client>, command: &str) -> Result<ExecOutput, russh::Error> {
    let mut channel = handle.channel_open_session().await?;
    channel.exec(true, command).await?;
    let mut output = ExecOutput::default();
    while let Some(message) = channel.wait().await {
        match message {
            ChannelMsg::Data { data } => output.stdout.push_str(&String::from_utf8_lossy(&data)),
            ChannelMsg::ExtendedData { data, .. } => {
                output.stderr.push_str(&String::from_utf8_lossy(&data));
            }
            ChannelMsg::ExitStatus { exit_status } => output.status = Some(exit_status),
            ChannelMsg::Failure | ChannelMsg::Close => break,
            _ => {}
        }
    }
    Ok(output)
}

fn dial_stdio_command(socket: &str) -> String {
    format!("docker -H unix://{} system dial-stdio", shell_quote(socket))
}

/// Single-quotes `s` for a POSIX shell.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting_survives_quotes_and_spaces() {
        assert_eq!(shell_quote("/var/run/docker.sock"), "'/var/run/docker.sock'");
        assert_eq!(shell_quote("/tmp/a b'c"), r"'/tmp/a b'\''c'");
        assert_eq!(
            dial_stdio_command("/run/user/1000/docker.sock"),
            "docker -H unix://'/run/user/1000/docker.sock' system dial-stdio"
        );
    }

    #[test]
    fn params_debug_redacts_the_key() {
        let pair = ssh_keys::generate_ed25519("t").unwrap();
        let kind = HostKind::Ssh {
            host: "h".into(),
            port: 22,
            user: "u".into(),
            private_key_openssh: pair.private_openssh.clone(),
            pinned_host_key: None,
            docker_socket: "/s".into(),
        };
        let params = SshParams::from_target(&kind).unwrap().unwrap();
        let shown = format!("{params:?}");
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn a_bad_stored_pin_is_an_invalid_target() {
        let pair = ssh_keys::generate_ed25519("t").unwrap();
        let kind = HostKind::Ssh {
            host: "h".into(),
            port: 22,
            user: "u".into(),
            private_key_openssh: pair.private_openssh,
            pinned_host_key: Some("not a key".into()),
            docker_socket: "/s".into(),
        };
        assert!(matches!(SshParams::from_target(&kind), Err(Error::InvalidTarget(_))));
    }
}
