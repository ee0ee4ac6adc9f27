//! play's smart-HTTP subtransport for libgit2: the only way libgit2
//! reaches the network from this process.
//!
//! # Design
//!
//! libgit2 is told (once per process, [`ensure_registered`]) to build the
//! transport of every `http://` and `https://` remote with [`factory`],
//! which wraps a [`Subtransport`] in libgit2's own smart protocol
//! (`Transport::smart`, stateless RPC as HTTP is). libgit2 then only asks
//! it for byte streams: `GET <url>/info/refs?service=git-upload-pack`
//! (or `receive-pack`) for the advertisement, and `POST
//! <url>/git-upload-pack` (`git-receive-pack`) for each negotiation round.
//! Every request is sent by play's reqwest client (see [`crate::client`]):
//! policy-checked addresses, no proxy, no redirects, https unless the
//! operator allows http, a timeout. libgit2 never opens a socket itself.
//!
//! # The current call
//!
//! The factory is global, but the token, policy, deadline and byte bound
//! belong to one gateway call: they reach it through the thread-local
//! current call ([`crate::call`]). A transport created outside a gateway
//! call fails: a stray `git2` user in this process gets no network at all
//! rather than one without play's checks.
//!
//! # Errors
//!
//! libgit2 keeps only the text of an error returned by a subtransport,
//! so each failure is also recorded, typed, on the [`Call`]; the gateway
//! prefers it over libgit2's code ([`Call::explain`]). Messages carry the
//! URL (never with userinfo: refused earlier) and never a header.
//!
//! # Blocking
//!
//! libgit2 is blocking, so the gateway runs it in `spawn_blocking`; the
//! subtransport drives the async reqwest client with the captured
//! runtime [`Handle`](tokio::runtime::Handle)'s `block_on`. Chosen over `reqwest::blocking`,
//! which runs a runtime thread of its own per client and panics when
//! created or dropped inside an async context: this way all calls share
//! one client, one connection pool and the caller's runtime.

use std::io::{self, Read, Write};
use std::sync::{Arc, OnceLock};

use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE};

use crate::call::{Call, current};
use crate::error::Error;

/// The HTTP basic-auth user sent with a token (see
/// [`play_model::repository::RepositoryAccess::token`]).
const TOKEN_USER: &str = "x-access-token";

/// Registers [`factory`] for `http` and `https` with libgit2, once per
/// process. Every gateway call runs this before it creates a remote.
pub(crate) fn ensure_registered() -> Result<(), Error> {
    // A OnceLock is a std::sync::Once that keeps the result.
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| register_transports().map_err(|e| e.message().to_owned()))
        .clone()
        .map_err(|e| Error::Failed(format!("cannot register play's git transport: {e}")))
}

#[expect(unsafe_code, reason = "git2::transport::register is unsafe; this is the crate's only unsafe call")]
fn register_transports() -> Result<(), git2::Error> {
    // SAFETY (every call below): `register` must not race with libgit2
    // creating a transport. It runs inside `ensure_registered`'s
    // OnceLock, which every gateway operation passes before it creates a
    // remote, and play uses libgit2 only through this crate; so no
    // transport is being created while it runs. The factories are
    // 'static and Send + Sync, as libgit2 keeps them for the life of the
    // process.
    for scheme in ["http", "https"] {
        unsafe { git2::transport::register(scheme, factory)? };
    }
    unsafe { git2::transport::register("ssh", crate::ssh::factory) }
}

/// libgit2's transport factory for `http(s)://` remotes: a smart
/// transport over [`Subtransport`], bound to this thread's current call.
fn factory(remote: &git2::Remote<'_>) -> Result<Transport, git2::Error> {
    let call = current()
        .ok_or_else(|| git2::Error::from_str("play-git: a git network call outside a GitGateway call is refused"))?;
    Transport::smart(remote, true, Subtransport { call })
}

/// See the [module documentation](self).
struct Subtransport {
    call: Arc<Call>,
}

impl SmartSubtransport for Subtransport {
    fn action(&self, url: &str, action: Service) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let base = url.trim_end_matches('/');
        let (method, path, content_type, accept) = match action {
            Service::UploadPackLs => {
                ("GET", "/info/refs?service=git-upload-pack", None, "application/x-git-upload-pack-advertisement")
            }
            Service::ReceivePackLs => {
                ("GET", "/info/refs?service=git-receive-pack", None, "application/x-git-receive-pack-advertisement")
            }
            Service::UploadPack => (
                "POST",
                "/git-upload-pack",
                Some("application/x-git-upload-pack-request"),
                "application/x-git-upload-pack-result",
            ),
            Service::ReceivePack => (
                "POST",
                "/git-receive-pack",
                Some("application/x-git-receive-pack-request"),
                "application/x-git-receive-pack-result",
            ),
        };
        let url = format!("{base}{path}");
        // Checked again here, whatever the gateway checked: libgit2 may
        // have rewritten the URL (`url.*.insteadOf`).
        self.call
            .policy
            .check(&url)
            .map_err(|e| self.call.fail(Error::Refused(format!("repository URL {e}"))))
            .map_err(|e| git2::Error::from_str(&e.to_string()))?;
        Ok(Box::new(Stream {
            call: self.call.clone(),
            post: method == "POST",
            url,
            content_type,
            accept,
            body: Vec::new(),
            response: None,
            pending: (Vec::new(), 0),
            started: false,
        }))
    }

    fn close(&self) -> Result<(), git2::Error> {
        Ok(())
    }
}

/// One request: written bytes are buffered and sent as the body at the
/// first read (git2-curl's design); the answer is then read chunk by
/// chunk, each counted against the call's byte bound.
struct Stream {
    call: Arc<Call>,
    post: bool,
    url: String,
    content_type: Option<&'static str>,
    accept: &'static str,
    body: Vec<u8>,
    response: Option<reqwest::Response>,
    /// The current chunk and how much of it was read.
    pending: (Vec<u8>, usize),
    /// Whether the first chunk of the answer was seen.
    started: bool,
}

/// The error a git server sends instead of an answer: a first pkt-line
/// `ERR <message>` (libgit2 reports it only as an unexpected packet).
/// "not our ref" is upload-pack's answer to a `want` of a commit it does
/// not have (or will not serve by id).
fn server_error(first: &[u8]) -> Option<Error> {
    let payload = first.get(4..)?.strip_prefix(b"ERR ")?;
    let len = usize::from_str_radix(std::str::from_utf8(first.get(..4)?).ok()?, 16).ok()?;
    let payload = &payload[..payload.len().min(len.saturating_sub(8)).min(300)];
    let message = String::from_utf8_lossy(payload).trim().to_owned();
    if message.contains("not our ref") {
        Some(Error::NotFound(format!("the repository does not have that commit ({message})")))
    } else {
        Some(Error::Failed(format!("the git server answered: {message}")))
    }
}

impl Stream {
    fn send(&mut self) -> Result<reqwest::Response, Error> {
        let call = &self.call;
        let left = call.remaining()?;
        let method = if self.post { reqwest::Method::POST } else { reqwest::Method::GET };
        let mut request = call.client.request(method, &self.url).timeout(left).header(ACCEPT, self.accept);
        if let Some(content_type) = self.content_type {
            request = request.header(CONTENT_TYPE, content_type).body(std::mem::take(&mut self.body));
        }
        if let Some(token) = &call.token {
            // reqwest marks the header sensitive (kept out of its Debug).
            request = request.basic_auth(TOKEN_USER, Some(&token.0));
        }
        let response = call.handle.block_on(request.send()).map_err(|e| crate::client::classify(&e, call.timeout))?;
        let status = response.status();
        let shown = self.url.split('?').next().unwrap_or_default();
        match status {
            s if s.is_success() => {}
            s if s.is_redirection() => {
                return Err(Error::Failed(format!("{shown} answered {s}: redirects are not followed")));
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                return Err(Error::Unauthorized(format!("{shown} answered {status}")));
            }
            StatusCode::NOT_FOUND => return Err(Error::NotFound(format!("{shown} answered {status}"))),
            s => return Err(Error::Failed(format!("{shown} answered {s}"))),
        }
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        if !content_type.starts_with(self.accept) {
            return Err(Error::Failed(format!(
                "{shown} is not a git smart HTTP server (content type {content_type:?}, expected {})",
                self.accept
            )));
        }
        Ok(response)
    }

    fn read_inner(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        if self.response.is_none() {
            self.response = Some(self.send()?);
        }
        loop {
            let (chunk, at) = &mut self.pending;
            if *at < chunk.len() {
                let n = buf.len().min(chunk.len() - *at);
                buf[..n].copy_from_slice(&chunk[*at..*at + n]);
                *at += n;
                return Ok(n);
            }
            let Some(response) = self.response.as_mut() else { return Ok(0) };
            let call = &self.call;
            call.remaining()?;
            match call.handle.block_on(response.chunk()) {
                Ok(Some(next)) => {
                    call.receive(next.len())?;
                    if !self.started {
                        self.started = true;
                        if let Some(error) = server_error(&next) {
                            call.fail(error);
                        }
                    }
                    self.pending = (next.to_vec(), 0);
                }
                Ok(None) => return Ok(0),
                Err(e) => return Err(crate::client::classify(&e, call.timeout)),
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_inner(buf).map_err(|e| io::Error::other(self.call.fail(e).to_string()))
    }
}

impl Write for Stream {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if (self.body.len() + data.len()) as u64 > self.call.max_bytes {
            let error = Error::TooLarge(format!("a request body would exceed {} bytes", self.call.max_bytes));
            return Err(io::Error::other(self.call.fail(error).to_string()));
        }
        self.body.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
