//! One gateway call's context, as the transport sees it: the token,
//! the policy, the deadline, the byte bound and the first failure.
//!
//! # Why a thread-local
//!
//! libgit2's transport factory is registered once for the whole process
//! (`crate::transport`), so it cannot be handed per-call settings. But
//! libgit2 creates the transport, and calls it, on the thread that called
//! into libgit2 (connect, fetch, push). So each gateway call runs its
//! libgit2 work on one blocking thread inside a [`CallGuard`], which makes
//! its [`Call`] this thread's current call; the factory takes
//! [`current`]. Outside a guard there is no current call, and the factory
//! refuses to build a transport.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use play_model::webhook::UrlPolicy;
use tokio::runtime::Handle;

use crate::error::Error;

/// An access token: shown by `Debug` as `<redacted>`, sent only as the
/// password of the `Authorization` header.
#[derive(Clone)]
pub(crate) struct Token(pub(crate) String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// One gateway call's settings and outcome, shared by every transport and
/// stream libgit2 creates during it.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) client: reqwest::Client,
    pub(crate) handle: Handle,
    pub(crate) policy: Arc<UrlPolicy>,
    pub(crate) token: Option<Token>,
    pub(crate) timeout: Duration,
    pub(crate) deadline: Instant,
    /// Bound of the bytes received over the whole call (advertisements
    /// and packs), and of a request body sent.
    pub(crate) max_bytes: u64,
    /// How an ssh remote is reached (`crate::ssh`); `None` for https.
    pub(crate) ssh: Option<SshCall>,
    received: AtomicU64,
    failure: Mutex<Option<Error>>,
}

impl Call {
    pub(crate) fn new(
        client: reqwest::Client,
        handle: Handle,
        policy: Arc<UrlPolicy>,
        token: Option<Token>,
        timeout: Duration,
        max_bytes: u64,
    ) -> Call {
        Call {
            client,
            handle,
            policy,
            token,
            timeout,
            deadline: Instant::now() + timeout,
            max_bytes,
            ssh: None,
            received: AtomicU64::new(0),
            failure: Mutex::new(None),
        }
    }

    /// Records why the call fails; the first reason wins (a later one is
    /// usually libgit2 reacting to it).
    pub(crate) fn fail(&self, error: Error) -> Error {
        if let Ok(mut slot) = self.failure.lock() {
            slot.get_or_insert_with(|| error.clone());
        }
        error
    }

    /// The recorded reason, if any, else what libgit2's error means.
    pub(crate) fn explain(&self, what: &str, error: &git2::Error) -> Error {
        let recorded = self.failure.lock().ok().and_then(|mut slot| slot.take());
        recorded.unwrap_or_else(|| Error::from_git(what, error))
    }

    /// Time left before the deadline, or the timeout error (recorded).
    pub(crate) fn remaining(&self) -> Result<Duration, Error> {
        match self.deadline.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => Err(self.fail(self.timed_out())),
        }
    }

    pub(crate) fn timed_out(&self) -> Error {
        Error::Timeout(format!("the repository call took longer than {:?}", self.timeout))
    }

    /// Counts `n` bytes received; the bound error (recorded) past it.
    pub(crate) fn receive(&self, n: usize) -> Result<(), Error> {
        let total = self.received.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        self.check_received(total)
    }

    /// Checks a byte count (libgit2's own, from the transfer progress
    /// callback) against the bound.
    pub(crate) fn check_received(&self, total: u64) -> Result<(), Error> {
        if total > self.max_bytes {
            return Err(self.fail(Error::TooLarge(format!(
                "the repository sent more than {} bytes (the fetch bound)",
                self.max_bytes
            ))));
        }
        Ok(())
    }
}

/// What one call needs to reach a repository over ssh.
#[derive(Clone)]
pub(crate) struct SshCall {
    pub(crate) url: play_model::repository::ssh::SshUrl,
    pub(crate) key: Arc<russh::keys::PrivateKey>,
    pub(crate) pin: Option<play_model::ssh_keys::HostKeyPin>,
    pub(crate) playzone_id: i64,
    pub(crate) pins: Option<Arc<dyn play_model::repository::ssh::SshHostKeys>>,
}

impl std::fmt::Debug for SshCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshCall")
            .field("url", &self.url)
            .field("key", &"<redacted>")
            .field("pin", &self.pin.as_ref().map(play_model::ssh_keys::HostKeyPin::fingerprint))
            .field("playzone_id", &self.playzone_id)
            .finish()
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Call>>> = const { RefCell::new(None) };
}

/// Makes `call` the current call of this thread until dropped (then the
/// previous one, if any, is current again). Hold it around every libgit2
/// operation that may reach the network.
#[derive(Debug)]
pub(crate) struct CallGuard {
    previous: Option<Arc<Call>>,
}

impl CallGuard {
    pub(crate) fn enter(call: Arc<Call>) -> CallGuard {
        let previous = CURRENT.with(|current| current.borrow_mut().replace(call));
        CallGuard { previous }
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

/// This thread's current call, if a [`CallGuard`] is held.
pub(crate) fn current() -> Option<Arc<Call>> {
    CURRENT.with(|current| current.borrow().clone())
}
