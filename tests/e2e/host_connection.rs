//! test_connection against a real sshd and the machine's Docker engine: each
//! failure kind, host key pinning, and the local-socket path.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::support::docker::require_docker;
use crate::support::sshd::Sshd;
use play_core::metrics::Metrics;
use play_model::host::{FailureKind, FailureStage, HostGateway, HostKind, HostTarget, Transport};
use play_model::ssh_keys;
use play_reconcilers::host::{DockerHostGateway, HostConfig};

fn gateway() -> DockerHostGateway {
    DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(5)), Arc::new(Metrics::new()))
}

fn engine_version() -> String {
    require_docker();
    let out = crate::support::run(Command::new("docker").args(["version", "--format", "{{.Server.Version}}"]));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn pin(target: &mut HostTarget, key: &str) {
    if let HostKind::Ssh { pinned_host_key, .. } = &mut target.kind {
        *pinned_host_key = Some(key.to_owned());
    }
}

#[tokio::test]
async fn succeeds_over_ssh_with_engine_version_and_direct_streamlocal_then_pins() {
    let sshd = Sshd::start();
    let gateway = gateway();
    let mut target = sshd.target(1);

    let report = gateway.test_connection(&target).await;
    assert!(report.ok, "{report:#?}\nsshd log:\n{}", sshd.log());
    assert_eq!(report.failure, None);
    assert_eq!(report.transport, Some(Transport::DirectStreamlocal));
    assert_eq!(report.docker.version.as_deref(), Some(engine_version().as_str()));
    assert!(report.docker.api_version.is_some() && report.docker.os.is_some());
    assert!(report.latency_ms.is_some_and(|ms| ms > 0.0));
    let ssh = report.ssh.clone().expect("an SSH report");
    assert!(ssh.reachable && ssh.authenticated && ssh.host_key_pinned_now);
    assert_eq!(ssh.host_key.as_deref(), Some(sshd.host_key.as_str()));
    assert_eq!(ssh.host_key_fingerprint, Some(ssh_keys::public_key_fingerprint(&sshd.host_key).unwrap()));

    // The caller stores the reported key; the next test is not a new pin.
    pin(&mut target, ssh.host_key.as_deref().unwrap());
    let again = gateway.test_connection(&target).await;
    assert!(again.ok, "{again:#?}");
    assert!(!again.ssh.unwrap().host_key_pinned_now);

    // A pin given as a fingerprint works the same.
    pin(&mut target, ssh.host_key_fingerprint.as_deref().unwrap());
    assert!(gateway.test_connection(&target).await.ok);
}

#[tokio::test]
async fn wrong_key_is_auth_refused() {
    let sshd = Sshd::start();
    let stranger = ssh_keys::generate_ed25519("stranger").unwrap();
    let mut target = sshd.target(2);
    if let HostKind::Ssh { private_key_openssh, .. } = &mut target.kind {
        *private_key_openssh = stranger.private_openssh;
    }
    let report = gateway().test_connection(&target).await;
    let failure = report.failure.expect("a failure");
    assert_eq!((failure.stage, failure.kind), (FailureStage::Auth, FailureKind::AuthRefused));
    let ssh = report.ssh.unwrap();
    assert!(ssh.reachable && !ssh.authenticated);
    assert!(!report.ok && !report.docker.reachable);
}

#[tokio::test]
async fn stopped_sshd_is_unreachable() {
    let mut sshd = Sshd::start();
    sshd.stop();
    // Hold the freed port so no other process (parallel test binaries run
    // their own harness listeners) can answer on it.
    let (_held, port) = crate::support::refusing_port(sshd.port);
    let mut target = sshd.target(3);
    if let HostKind::Ssh { port: p, .. } = &mut target.kind {
        *p = port;
    }
    let report = gateway().test_connection(&target).await;
    let failure = report.failure.expect("a failure");
    assert_eq!((failure.stage, failure.kind), (FailureStage::Connect, FailureKind::Unreachable));
    assert!(!report.ssh.unwrap().reachable);
}

#[tokio::test]
async fn a_listener_that_never_answers_is_a_timeout() {
    // Accepts TCP (the kernel completes the handshake) but never speaks SSH.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let key = ssh_keys::generate_ed25519("t").unwrap();
    let target = HostTarget::ssh(4, "127.0.0.1", port, "root", key.private_openssh, None);
    let gateway =
        DockerHostGateway::new(HostConfig::with_timeout(Duration::from_millis(500)), Arc::new(Metrics::new()));
    let report = gateway.test_connection(&target).await;
    let failure = report.failure.expect("a failure");
    assert_eq!((failure.stage, failure.kind), (FailureStage::Connect, FailureKind::Timeout));
    drop(silent);
}

#[tokio::test]
async fn a_changed_host_key_is_refused_before_authentication() {
    let mut sshd = Sshd::start();
    let gateway = gateway();
    let mut target = sshd.target(5);
    pin(&mut target, &sshd.host_key.clone());
    assert!(gateway.test_connection(&target).await.ok);
    // The pooled path works too, then the host "is reinstalled".
    gateway.docker(&target).await.unwrap().ping().await.unwrap();
    let old_key = sshd.host_key.clone();
    sshd.change_host_key();
    assert_ne!(old_key, sshd.host_key);

    let report = gateway.test_connection(&target).await;
    let failure = report.failure.clone().expect("a failure");
    assert_eq!((failure.stage, failure.kind), (FailureStage::HostKey, FailureKind::HostKeyMismatch), "{report:#?}");
    let ssh = report.ssh.unwrap();
    assert!(!ssh.authenticated && !ssh.host_key_pinned_now);
    // The report shows the key the server presented, for the user to verify.
    assert_eq!(ssh.host_key.as_deref(), Some(sshd.host_key.as_str()));
    // The pooled connection reconnects on next use and is refused the same way.
    let err = gateway.connection(&target).await.unwrap_err();
    assert_eq!(err.kind(), FailureKind::HostKeyMismatch, "{err}");
    // sshd never saw an authentication attempt after the key change.
    let log = sshd.log();
    let after_change = log.rsplit("Server listening").next().unwrap_or("");
    assert!(!after_change.contains("Accepted publickey"), "{after_change}");
}

#[tokio::test]
async fn a_missing_socket_is_socket_missing() {
    let sshd = Sshd::start();
    let target = sshd.target_with_socket(6, "/nonexistent/docker.sock");
    let report = gateway().test_connection(&target).await;
    let failure = report.failure.clone().expect("a failure");
    assert_eq!((failure.stage, failure.kind), (FailureStage::Docker, FailureKind::SocketMissing), "{report:#?}");
    assert!(report.ssh.unwrap().authenticated);
}

#[tokio::test]
async fn the_private_key_never_appears_in_debug_or_the_report() {
    let sshd = Sshd::start();
    let target = sshd.target(7);
    let secret_line = sshd.client_key.private_openssh.lines().nth(1).expect("a key body line").to_owned();
    let report = gateway().test_connection(&target).await;
    assert!(report.ok, "{report:#?}");
    let shown = format!("{target:?} {report:?} {} {:?}", serde_json::to_string(&report).unwrap(), gateway());
    assert!(!shown.contains(&secret_line));
    assert!(!shown.contains("PRIVATE KEY"));
}

#[tokio::test]
async fn a_local_socket_target_goes_through_the_same_gateway() {
    require_docker();
    let gateway = gateway();
    let target = HostTarget::local(8, "/var/run/docker.sock");
    let report = gateway.test_connection(&target).await;
    assert!(report.ok, "{report:#?}");
    assert_eq!(report.transport, Some(Transport::LocalSocket));
    assert!(report.ssh.is_none());
    assert_eq!(report.docker.version.as_deref(), Some(engine_version().as_str()));
    let connection = gateway.connection(&target).await.unwrap();
    assert_eq!(connection.transport, Transport::LocalSocket);
    connection.docker.ping().await.unwrap();

    let missing = HostTarget::local(9, "/nonexistent/docker.sock");
    let failure = gateway.test_connection(&missing).await.failure.expect("a failure");
    assert_eq!(failure.kind, FailureKind::SocketMissing);
}
