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
pub mod caddy;
pub mod docker;
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

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A port on 127.0.0.1 that was free a moment ago and that this process has
/// not handed out before. Ports come from 20000-29999, below Linux's
/// ephemeral range, so a port a test has just stopped using (to test
/// "unreachable") is not handed to a parallel test's listener meanwhile.
pub fn free_port() -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let base = 20_000 + (std::process::id() % 400) * 25;
    for _ in 0..10_000 {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = u16::try_from(20_000 + (base - 20_000 + n) % 10_000).expect("port in range");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in 20000-29999");
}

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
