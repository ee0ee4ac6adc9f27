//! play's ssh subtransport for libgit2 (issue #52, item 2): repositories on
//! `ssh://` and `user@host:path` URLs, reached with russh, as play reaches
//! Playrooms.
//!
//! # Design
//!
//! libgit2 builds the transport of every `ssh://` remote with [`factory`]
//! (registered beside the smart-HTTP one, `crate::transport`), a smart
//! transport in stateful mode, as git's own ssh transport is: one SSH
//! channel per connection, running `git-upload-pack '<path>'` (or
//! `git-receive-pack` for a push) on the remote, the advertisement and the
//! negotiation on the same stream. The gateway hands libgit2 a canonical
//! `ssh://` URL (the cache's key too); the transport dials what the
//! current call's [`SshCall`] says, never what libgit2 parsed.
//!
//! # Invariants
//!
//! - The host is resolved once; every address is checked against the
//!   operator's policy (`UrlPolicy::check_resolved`, the rule of every
//!   outbound client) and only checked addresses are dialled.
//! - The host key is checked during the key exchange, before the deploy
//!   key signs anything: a pinned key must match; without a pin the key
//!   seen is pinned for the Playzone through [`SshHostKeys`], and a key
//!   another first contact pinned concurrently must match too. Without a
//!   pin and nowhere to keep one, nothing is sent.
//! - The remote's stderr (bounded) explains a failure; the private key
//!   is never in a message.
//! - Reads and writes are bounded by the call's deadline and byte bound.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};
use play_model::repository::RepositoryError;
use play_model::repository::ssh::{SshAccess, SshHostKeys, SshUrl};
use play_model::ssh_keys::{HostKeyPin, public_key_line};
use play_model::webhook::UrlPolicy;
use russh::ChannelMsg;
use russh::client::{self, AuthResult, Handle};
use russh::keys::ssh_key::{HashAlg, PublicKey};
use russh::keys::{PrivateKey, PrivateKeyWithHashAlg};

use crate::call::{Call, SshCall, current};
use crate::error::Error;

/// The most of the remote's stderr kept for a message, in bytes.
const MAX_STDERR: usize = 4096;

/// What a call on an ssh repository needs, checked before anything is
/// dialled: the URL's form ([`SshUrl`]), its host against the operator's
/// `policy` as an https URL's host is, the deploy key and the pin;
/// `pins` keeps the host key of a first contact.
pub(crate) fn call_for(
    policy: &UrlPolicy,
    pins: Option<Arc<dyn SshHostKeys>>,
    url: &str,
    access: &SshAccess,
) -> Result<SshCall, RepositoryError> {
    let parsed = SshUrl::parse(url).map_err(|e| RepositoryError::Refused(format!("repository URL {url}: {e}")))?;
    policy
        .check(&parsed.policy_probe())
        .map_err(|e| RepositoryError::Refused(format!("repository host {}: {e}", parsed.host)))?;
    let key = PrivateKey::from_openssh(access.private_key_openssh.trim())
        .map_err(|e| RepositoryError::Failed(format!("the Playzone's deploy key does not read: {e}")))?;
    let pin = access
        .pinned_host_key
        .as_deref()
        .map(HostKeyPin::parse)
        .transpose()
        .map_err(|e| RepositoryError::Failed(format!("the Playzone's pinned host key: {e}")))?;
    Ok(SshCall { url: parsed, key: Arc::new(key), pin, playzone_id: access.playzone_id, pins })
}

/// The canonical `ssh://` URL of `url`, what libgit2 and the cache get:
/// a path relative to the user's home (`host:owner/repo.git`) is written
/// `~/owner/repo.git`, which names the same repository.
pub(crate) fn canonical(url: &SshUrl) -> String {
    let path =
        if url.path.starts_with('/') { url.path.clone() } else { format!("/~/{}", url.path.trim_start_matches("~/")) };
    format!("ssh://{}@{}{path}", url.user, url.address())
}

/// libgit2's transport factory for `ssh://` remotes: a stateful smart
/// transport over [`Subtransport`], bound to this thread's current call.
pub(crate) fn factory(remote: &git2::Remote<'_>) -> Result<Transport, git2::Error> {
    let call = current()
        .ok_or_else(|| git2::Error::from_str("play-git: a git network call outside a GitGateway call is refused"))?;
    Transport::smart(remote, false, Subtransport { call, open: Mutex::new(None) })
}

struct Subtransport {
    call: Arc<Call>,
    /// The connection of the current session (stateful: the pack
    /// negotiation follows the advertisement on the same channel).
    open: Mutex<Option<Shared>>,
}

type Shared = Arc<Mutex<Connection>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // One libgit2 thread uses a call's connection; a poisoned lock only
    // means a panic elsewhere already failed the call.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl SmartSubtransport for Subtransport {
    fn action(&self, _url: &str, action: Service) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let service = match action {
            Service::UploadPackLs | Service::UploadPack => "git-upload-pack",
            Service::ReceivePackLs | Service::ReceivePack => "git-receive-pack",
        };
        let mut open = lock(&self.open);
        let reuse = matches!(action, Service::UploadPack | Service::ReceivePack);
        let connection = match open.as_ref() {
            Some(shared) if reuse => shared.clone(),
            _ => {
                let ssh = self.call.ssh.as_ref().ok_or_else(|| {
                    git2::Error::from_str(
                        &self.call.fail(Error::Failed("an ssh remote without ssh access".into())).to_string(),
                    )
                })?;
                let connection = connect(&self.call, ssh, service)
                    .map_err(|e| git2::Error::from_str(&self.call.fail(e).to_string()))?;
                let shared = Arc::new(Mutex::new(connection));
                *open = Some(shared.clone());
                shared
            }
        };
        Ok(Box::new(Stream { call: self.call.clone(), connection }))
    }

    fn close(&self) -> Result<(), git2::Error> {
        lock(&self.open).take();
        Ok(())
    }
}

/// One SSH session running one git command.
struct Connection {
    /// Kept so the session lives as long as the channel.
    _handle: Handle<Client>,
    channel: russh::Channel<client::Msg>,
    pending: Vec<u8>,
    offset: usize,
    stderr: Vec<u8>,
    eof: bool,
    /// The remote spoke the protocol: its stderr (a banner, a warning)
    /// is no longer a failure at the end of the stream.
    spoke: bool,
}

/// The handler: remembers the host key presented and checks it against
/// the pin during the key exchange.
struct Client {
    pin: Option<HostKeyPin>,
    seen: Arc<Mutex<Option<PublicKey>>>,
}

impl client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(&mut self, key: &PublicKey) -> Result<bool, Self::Error> {
        *lock(&self.seen) = Some(key.clone());
        Ok(self.pin.as_ref().is_none_or(|pin| pin.matches(key)))
    }
}

fn connect(call: &Call, ssh: &SshCall, service: &str) -> Result<Connection, Error> {
    let left = call.remaining()?;
    match call.handle.block_on(tokio::time::timeout(left, connect_inner(call, ssh, service))) {
        Ok(result) => result,
        Err(_) => Err(call.timed_out()),
    }
}

async fn connect_inner(call: &Call, ssh: &SshCall, service: &str) -> Result<Connection, Error> {
    let url = &ssh.url;
    let address = url.address();
    let resolved: Vec<std::net::SocketAddr> = tokio::net::lookup_host((url.host.as_str(), url.port))
        .await
        .map_err(|e| Error::Unreachable(format!("{address}: {e}")))?
        .collect();
    let checked =
        call.policy.check_resolved(&url.host, resolved).map_err(|e| Error::Refused(format!("repository host {e}")))?;
    let tcp = tokio::net::TcpStream::connect(&checked[..])
        .await
        .map_err(|e| Error::Unreachable(format!("{address}: {e}")))?;
    let _ = tcp.set_nodelay(true);

    let seen = Arc::new(Mutex::new(None));
    let handler = Client { pin: ssh.pin.clone(), seen: seen.clone() };
    let config = Arc::new(client::Config { nodelay: true, ..client::Config::default() });
    let mut handle = match client::connect_stream(config, tcp, handler).await {
        Ok(handle) => handle,
        Err(russh::Error::UnknownKey) => {
            return Err(mismatch(url, ssh.pin.as_ref().map(HostKeyPin::fingerprint), &seen));
        }
        Err(e) => return Err(Error::Unreachable(format!("{address}: the SSH handshake failed: {e}"))),
    };
    let presented = lock(&seen).clone().ok_or_else(|| Error::Failed(format!("{address} presented no host key")))?;
    if ssh.pin.is_none() {
        // First contact: pin what was seen, unless a concurrent first
        // contact pinned another key.
        let pins = ssh.pins.as_ref().ok_or_else(|| {
            Error::Refused(format!("{address}: no host key is pinned, and this gateway cannot pin one"))
        })?;
        let pinned =
            pins.pin_first(ssh.playzone_id, &public_key_line(&presented)).await.map_err(Error::from_repository)?;
        let pin = HostKeyPin::parse(&pinned).map_err(|e| Error::Failed(format!("the pinned host key: {e}")))?;
        if !pin.matches(&presented) {
            return Err(mismatch(url, Some(pin.fingerprint()), &seen));
        }
        tracing::info!(playzone = ssh.playzone_id, %address, fingerprint = %presented.fingerprint(HashAlg::Sha256), "pinned a repository host key on first contact");
    }

    let hash = handle.best_supported_rsa_hash().await.ok().flatten().flatten();
    let key = PrivateKeyWithHashAlg::new(ssh.key.clone(), hash);
    let auth = handle
        .authenticate_publickey(url.user.clone(), key)
        .await
        .map_err(|e| Error::Unreachable(format!("{address}: authentication failed: {e}")))?;
    if !matches!(auth, AuthResult::Success) {
        return Err(Error::Unauthorized(format!(
            "{address} refused the deploy key {} for user {}: add the Playzone's public key to the repository's \
             deploy keys (with write access to create branches)",
            ssh.key.public_key().fingerprint(HashAlg::Sha256),
            url.user
        )));
    }
    let channel = handle.channel_open_session().await.map_err(|e| Error::Failed(format!("{address}: {e}")))?;
    channel.exec(true, url.command(service)).await.map_err(|e| Error::Failed(format!("{address}: {e}")))?;
    Ok(Connection {
        _handle: handle,
        channel,
        pending: Vec::new(),
        offset: 0,
        stderr: Vec::new(),
        eof: false,
        spoke: false,
    })
}

fn mismatch(url: &SshUrl, pinned: Option<String>, seen: &Mutex<Option<PublicKey>>) -> Error {
    let presented =
        lock(seen).as_ref().map_or_else(|| "an unknown key".to_owned(), |k| k.fingerprint(HashAlg::Sha256).to_string());
    Error::Refused(format!(
        "{} presented the host key {presented}, not the pinned {}: the host changed or someone is in between; if \
         the host's key really changed, set the Playzone's pinned host key again",
        url.address(),
        pinned.unwrap_or_default()
    ))
}

/// The remote's stderr as a failure: what git's server said.
fn remote_failure(url: &SshUrl, stderr: &[u8]) -> Error {
    let text = String::from_utf8_lossy(stderr).trim().to_owned();
    let lower = text.to_ascii_lowercase();
    let what = format!("{} said: {text}", url.address());
    if lower.contains("does not appear to be a git repository") || lower.contains("not found") {
        Error::NotFound(what)
    } else if lower.contains("denied") || lower.contains("not allowed") {
        Error::Unauthorized(what)
    } else {
        Error::Failed(what)
    }
}

/// libgit2's handle on the connection.
struct Stream {
    call: Arc<Call>,
    connection: Shared,
}

impl Stream {
    fn io_error(&self, error: Error) -> io::Error {
        io::Error::other(self.call.fail(error).to_string())
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut c = lock(&self.connection);
        while c.offset == c.pending.len() && !c.eof {
            let left = self.call.remaining().map_err(|e| self.io_error(e))?;
            let message = match self.call.handle.block_on(tokio::time::timeout(left, c.channel.wait())) {
                Ok(message) => message,
                Err(_) => return Err(self.io_error(self.call.timed_out())),
            };
            match message {
                Some(ChannelMsg::Data { data }) => {
                    self.call.receive(data.len()).map_err(|e| self.io_error(e))?;
                    c.pending = data.to_vec();
                    c.offset = 0;
                    c.spoke = true;
                }
                Some(ChannelMsg::ExtendedData { data, .. }) => {
                    let room = MAX_STDERR.saturating_sub(c.stderr.len());
                    c.stderr.extend_from_slice(&data[..data.len().min(room)]);
                }
                Some(ChannelMsg::Eof | ChannelMsg::Close) | None => c.eof = true,
                Some(_) => {}
            }
        }
        if c.offset == c.pending.len() {
            // A command that ends having said nothing on stdout failed
            // before the protocol began: its stderr says why.
            if !c.spoke && !c.stderr.is_empty() {
                let Some(ssh) = self.call.ssh.as_ref() else { return Ok(0) };
                return Err(self.io_error(remote_failure(&ssh.url, &c.stderr)));
            }
            return Ok(0);
        }
        let n = buf.len().min(c.pending.len() - c.offset);
        buf[..n].copy_from_slice(&c.pending[c.offset..c.offset + n]);
        c.offset += n;
        Ok(n)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let c = lock(&self.connection);
        let left = self.call.remaining().map_err(|e| self.io_error(e))?;
        match self.call.handle.block_on(tokio::time::timeout(left, c.channel.data(buf))) {
            Ok(Ok(())) => Ok(buf.len()),
            Ok(Err(e)) => Err(self.io_error(Error::Failed(format!("sending to the repository: {e}")))),
            Err(_) => Err(self.io_error(self.call.timed_out())),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_url_keeps_both_spellings_apart_from_other_paths() {
        let url = |text: &str| canonical(&SshUrl::parse(text).unwrap());
        assert_eq!(url("git@github.com:owner/repo.git"), "ssh://git@github.com:22/~/owner/repo.git");
        assert_eq!(url("ssh://git@github.com/~/owner/repo.git"), "ssh://git@github.com:22/~/owner/repo.git");
        assert_eq!(url("ssh://git@github.com/owner/repo.git"), "ssh://git@github.com:22/owner/repo.git");
        assert_eq!(url("ssh://deploy@[::1]:2222/srv/r.git"), "ssh://deploy@[::1]:2222/srv/r.git");
    }

    #[test]
    fn the_remotes_words_say_what_failed() {
        let url = SshUrl::parse("ssh://git@example.org/r.git").unwrap();
        let failure = |text: &str| remote_failure(&url, text.as_bytes());
        assert!(matches!(failure("fatal: '/r.git' does not appear to be a git repository"), Error::NotFound(_)));
        assert!(matches!(failure("ERROR: Permission to o/r.git denied to deploy key"), Error::Unauthorized(_)));
        assert!(matches!(failure("fatal: something else"), Error::Failed(m) if m.contains("example.org:22 said")));
    }
}
