//! The shared end-to-end harness: a real sshd on loopback, the machine's
//! Docker engine, locally built test images and a local registry. Every e2e
//! test file includes it with `mod support;`. The real binary runs as a
//! server only through [`serve`]; a Playground world wired in-process is
//! [`world::World`].
//!
//! Nothing here is skipped silently: a missing `sshd`, `docker`,
//! `docker-registry` or `htpasswd` fails the test with the package to install
//! (`apt-get install openssh-server docker-registry apache2-utils
//! busybox-static caddy pebble openssl curl`). Every process and Docker object a helper creates is
//! removed on `Drop`.
#![allow(dead_code, reason = "each test binary uses a different part of the shared harness")]
#![allow(clippy::expect_used, reason = "test harness: a panic with the reason is the failure report")]

pub mod app;
pub mod browser;
pub mod caddy;
pub mod docker;
pub mod edged;
pub mod git_cli;
pub mod github;
pub mod host_view;
pub mod pebble;
pub mod playzones;
pub mod registry;
pub mod scenarios;
pub mod serve;
pub mod simhost;
pub mod sshd;
pub mod webhooks;
pub mod world;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub use play_model::testing::free_port;

/// A loopback port bound but not listening: connections to it are refused
/// for as long as the socket lives, whatever other processes do meanwhile.
/// Takes `preferred` (a port just freed, say) when it can, else any.
pub fn refusing_port(preferred: u16) -> (tokio::net::TcpSocket, u16) {
    for port in [preferred, 0] {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        if socket.bind(([127, 0, 0, 1], port).into()).is_ok() {
            let port = socket.local_addr().expect("bound address").port();
            return (socket, port);
        }
    }
    panic!("cannot bind a loopback port");
}

/// Runs a command to completion; panics with its output when it fails.
pub fn run(cmd: &mut Command) -> Output {
    let shown = format!("{cmd:?}");
    let output = cmd.output().unwrap_or_else(|e| panic!("cannot run {shown}: {e}"));
    assert!(
        output.status.success(),
        "{shown} failed ({}):\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Panics with an install hint unless `path` exists.
pub fn require_binary(path: &str, package: &str) {
    assert!(
        Path::new(path).exists(),
        "{path} is missing: install it with `apt-get install -y {package}` (the e2e tests need it)"
    );
}

/// Waits until something accepts TCP connections on `port`.
pub fn wait_for_port(port: u16, what: &str, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = std::fs::read_to_string(log).unwrap_or_default();
    panic!("{what} did not listen on 127.0.0.1:{port} within 10 s; its log:\n{log}");
}

/// Polls `check` every 50 ms until it holds: how long that took; panics
/// after `limit`.
pub async fn wait_until<F: Future<Output = bool>>(
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> F,
) -> Duration {
    let started = Instant::now();
    while started.elapsed() < limit {
        if check().await {
            return started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not within {limit:?}");
}

/// A label value unique to this test process and call, for Docker objects.
pub fn unique_label(test: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{test}-{}-{n}", std::process::id())
}

/// `body` (an object) with the fields of `extra` (an object) added.
fn with_fields(mut body: serde_json::Value, extra: serde_json::Value) -> serde_json::Value {
    if let (Some(body), serde_json::Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    body
}
