//! The pooled connection: shared, reconnecting, falling back to dial-stdio,
//! and carrying live reads (logs).

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::support::docker::{BUSYBOX_IMAGE, Labelled, ensure_busybox_image};
use crate::support::sshd::{Sshd, SshdOptions};
use play_core::metrics::Metrics;
use play_model::host::{FailureKind, HostGateway, Transport};
use play_reconcilers::host::{DockerHostGateway, HostConfig};

fn gateway(metrics: &Arc<Metrics>) -> DockerHostGateway {
    DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(5)), Arc::clone(metrics))
}

fn count(metrics: &Metrics, host: &str, operation: &str, outcome: &str) -> u64 {
    let needle = format!(r#"play_remote_calls_total{{host="{host}",operation="{operation}",outcome="{outcome}"}} "#);
    metrics.render().lines().find_map(|line| line.strip_prefix(&needle)?.trim().parse().ok()).unwrap_or(0)
}

#[tokio::test]
async fn one_connection_is_shared_by_concurrent_callers() {
    let sshd = Sshd::start();
    let metrics = Arc::new(Metrics::new());
    let gateway = gateway(&metrics);
    let target = sshd.target(10);
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let gateway = gateway.clone();
            let target = target.clone();
            tokio::spawn(async move {
                let docker = gateway.docker(&target).await.map_err(|e| e.to_string())?;
                docker.ping().await.map_err(|e| e.to_string())
            })
        })
        .collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(count(&metrics, "playroom:10", "ssh_connect", "ok"), 1, "{}", metrics.render());
    assert!(count(&metrics, "playroom:10", "docker GET _ping", "ok") >= 8);
}

#[tokio::test]
async fn the_connection_survives_sshd_restarting_between_two_calls() {
    let mut sshd = Sshd::start();
    let metrics = Arc::new(Metrics::new());
    let gateway = gateway(&metrics);
    let target = sshd.target(11);
    let docker = gateway.docker(&target).await.unwrap();
    docker.ping().await.unwrap();

    // Kills the listener and the session process serving our connection.
    sshd.restart();

    // The same client keeps working: the link notices the dead connection
    // and reconnects underneath it.
    docker.ping().await.unwrap();
    gateway.docker(&target).await.unwrap().version().await.unwrap();
    assert_eq!(count(&metrics, "playroom:11", "ssh_connect", "ok"), 2, "{}", metrics.render());
}

#[tokio::test]
async fn while_sshd_is_down_calls_fail_as_unreachable_then_recover() {
    let mut sshd = Sshd::start();
    let metrics = Arc::new(Metrics::new());
    let gateway = gateway(&metrics);
    let target = sshd.target(12);
    gateway.docker(&target).await.unwrap().ping().await.unwrap();
    sshd.stop();
    let err = gateway.connection(&target).await.unwrap_err();
    assert_eq!(err.kind(), FailureKind::Unreachable, "{err}");
    sshd.restart();
    gateway.docker(&target).await.unwrap().ping().await.unwrap();
}

#[tokio::test]
async fn falls_back_to_dial_stdio_when_stream_local_forwarding_is_off() {
    let sshd = Sshd::start_with(SshdOptions { allow_streamlocal: false });
    let metrics = Arc::new(Metrics::new());
    let gateway = gateway(&metrics);
    let target = sshd.target(13);
    let report = gateway.test_connection(&target).await;
    assert!(report.ok, "{report:#?}\n{}", sshd.log());
    assert_eq!(report.transport, Some(Transport::DialStdio));
    assert!(report.docker.version.is_some());

    let connection = gateway.connection(&target).await.unwrap();
    assert_eq!(connection.transport, Transport::DialStdio);
    for _ in 0..3 {
        connection.docker.ping().await.unwrap();
    }
    // sshd really refused the stream-local channel.
    assert!(sshd.log().contains("refused streamlocal"), "{}", sshd.log());
}

#[tokio::test]
async fn service_logs_are_read_through_the_tunnel() {
    ensure_busybox_image();
    let label = crate::support::unique_label("logs");
    let _cleanup = Labelled(format!("dev.play.test={label}"));
    let name = format!("play-test-{label}");
    crate::support::run(Command::new("docker").args([
        "run",
        "-d",
        "--name",
        &name,
        "--label",
        &format!("dev.play.test={label}"),
        BUSYBOX_IMAGE,
        "sh",
        "-c",
        "echo one; echo two; echo three; sleep 60",
    ]));
    let sshd = Sshd::start();
    let gateway = gateway(&Arc::new(Metrics::new()));
    let target = sshd.target(14);
    let mut lines = Vec::new();
    for _ in 0..50 {
        lines = gateway.service_logs(&target, &name, 2).await.unwrap();
        if lines.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(lines, ["two", "three"]);
    let missing = gateway.service_logs(&target, "play-test-absent", 5).await.unwrap_err();
    assert_eq!(missing.kind(), FailureKind::NotFound, "{missing}");
}

/// Finding 4 of issue #10: a target without a pin was trusted on every
/// connection, reconnects included, so a host whose key changed (or a
/// machine in the middle) was accepted after any reconnect. The link now
/// keeps the first key it saw and refuses a reconnect to another.
#[tokio::test]
async fn an_unpinned_link_refuses_a_changed_key_on_reconnect() {
    let mut sshd = Sshd::start();
    let metrics = Arc::new(Metrics::new());
    let gateway = gateway(&metrics);
    let target = sshd.target(14);
    gateway.docker(&target).await.unwrap().ping().await.unwrap();
    sshd.change_host_key();
    let err = gateway.connection(&target).await.unwrap_err();
    assert_eq!(err.kind(), FailureKind::HostKeyMismatch, "{err}");
}
