//! A real git smart-HTTP server on loopback for tests: Debian's `git`
//! (`git http-backend` as CGI) behind a small HTTP/1.1 server, with HTTP
//! basic auth per repository. Enabled by the `testing` feature.
//!
//! Nothing is skipped silently: without `git` the harness panics with
//! the package to install (`apt-get install git`). The server, its thread
//! and every repository are removed when the [`GitServer`] is dropped.
//!
//! ```no_run
//! use play_git::testing::{Access, GitServer, file};
//! let server = GitServer::start();
//! let commits = server.create_repo("app", Access::Public, &[("main", &[("README", file("hi"))])]);
//! let url = server.url("app"); // http://127.0.0.1:<port>/app.git
//! ```
#![expect(clippy::expect_used, reason = "test harness: a panic with the reason is the failure report")]

mod repo;
mod server;
mod ssh;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use tempfile::TempDir;

pub use repo::{Entry, executable, file, symlink};
pub use ssh::GitSsh;

/// Who may read and push a repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone, without credentials.
    Public,
    /// Only requests whose basic-auth password is `token` (any user):
    /// others get `401` with `WWW-Authenticate: Basic`.
    Private { token: String },
}

/// One request the server received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRequest {
    pub method: String,
    /// Path and query, as sent.
    pub uri: String,
    /// Whether an `Authorization` header came with it.
    pub authorization: bool,
}

/// State shared by the server task and the helpers.
#[derive(Debug)]
pub(crate) struct Shared {
    /// `GIT_PROJECT_ROOT`: one bare `<name>.git` per repository.
    pub(crate) root: PathBuf,
    /// `HOME` of every git process, so no user configuration leaks in.
    pub(crate) home: PathBuf,
    pub(crate) backend: PathBuf,
    pub(crate) repos: Mutex<HashMap<String, Access>>,
    /// More passwords a private repository takes ([`GitServer::allow_token`]).
    pub(crate) extra_tokens: Mutex<HashMap<String, Vec<String>>>,
    pub(crate) log: Mutex<Vec<LoggedRequest>>,
}

/// See the [module documentation](self).
#[derive(Debug)]
pub struct GitServer {
    _dir: TempDir,
    port: u16,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// `git http-backend`'s path; panics with the package to install.
fn http_backend() -> PathBuf {
    let hint = "git is missing: install it with `apt-get install -y git` (play-git's tests need git http-backend)";
    let output = Command::new("git").arg("--exec-path").output().expect(hint);
    assert!(output.status.success(), "{hint}");
    let backend = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join("git-http-backend");
    assert!(backend.exists(), "{} is missing: {hint}", backend.display());
    backend
}

impl GitServer {
    /// Starts the server on 127.0.0.1 and a free port, on a thread of its
    /// own (so it serves whatever runtime, if any, the test uses).
    pub fn start() -> GitServer {
        let backend = http_backend();
        let dir = tempfile::Builder::new().prefix("play-git-server-").tempdir().expect("temp dir");
        let (root, home) = (dir.path().join("repos"), dir.path().join("home"));
        std::fs::create_dir_all(&root).expect("repos dir");
        std::fs::create_dir_all(&home).expect("home dir");
        let shared = Arc::new(Shared {
            root,
            home,
            backend,
            repos: Mutex::new(HashMap::new()),
            extra_tokens: Mutex::new(HashMap::new()),
            log: Mutex::new(Vec::new()),
        });
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind a loopback port");
        let port = listener.local_addr().expect("local address").port();
        listener.set_nonblocking(true).expect("nonblocking listener");
        let (shutdown, stopped) = tokio::sync::oneshot::channel();
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("git-server".into())
            .spawn(move || server::serve(listener, state, stopped))
            .expect("spawn the git server thread");
        GitServer { _dir: dir, port, shared, shutdown: Some(shutdown), thread: Some(thread) }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>/<name>.git`.
    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}.git", self.port)
    }

    /// Lets private repository `name` take `token` as a password too (a
    /// fake provider's short-lived tokens).
    pub fn allow_token(&self, name: &str, token: &str) {
        self.shared.extra_tokens.lock().expect("tokens").entry(name.to_owned()).or_default().push(token.to_owned());
    }

    /// Takes back every password [`GitServer::allow_token`] gave `name`.
    pub fn revoke_tokens(&self, name: &str) {
        self.shared.extra_tokens.lock().expect("tokens").remove(name);
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.log.lock().expect("request log").clone()
    }

    pub fn request_count(&self) -> usize {
        self.shared.log.lock().expect("request log").len()
    }
}

impl Drop for GitServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
