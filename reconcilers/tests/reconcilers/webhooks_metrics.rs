//! The webhook dispatcher's attempts as passes of the controller
//! `webhook_dispatcher` in controller-runtime's `reconcile_*` families
//! (issue #54, item 1), against two receivers on loopback: one answers
//! 200, the other 500.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::runtime_probe::sample;
use play_core::metrics::Metrics;
use play_model::model::event::NewEvent;
use play_model::model::quota::QuotaLimits;
use play_model::secrets::MasterKey;
use play_model::webhook::{Changes, UrlPolicy};
use play_reconcilers::webhooks::{Dispatcher, WebhooksConfig};
use play_store::{accounts, events, webhooks};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A receiver on 127.0.0.1 that answers every request with `status`; its
/// URL.
async fn receiver(status: u16) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                // Reads the head, then the body its Content-Length announces.
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                let body_at = loop {
                    let n = conn.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&seen[..body_at]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |n| n.trim().parse().unwrap());
                while seen.len() < body_at + length {
                    let n = conn.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                }
                let answer = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                let _ = conn.write_all(answer.as_bytes()).await;
            });
        }
    });
    url
}

#[tokio::test]
async fn each_attempt_counts_as_a_pass_of_the_dispatcher() {
    let test_store = play_store::testing::store().await;
    let store = test_store.store.clone();
    let secrets = MasterKey::generate().secret_box();
    let (account, _) = accounts::create_account(&store, "hooks").await.unwrap();
    for url in [receiver(200).await, receiver(500).await] {
        let changes =
            Changes { url: Some(url), events: Some(vec!["playground.created".to_owned()]), ..Changes::default() };
        webhooks::create(&store, &secrets, account.id, changes, &QuotaLimits::default()).await.unwrap();
    }
    let metrics = Arc::new(Metrics::new());
    let policy = UrlPolicy { allow_http: true, allowlist: UrlPolicy::parse_allowlist("127.0.0.1").unwrap() };
    let config = WebhooksConfig {
        poll_interval: Duration::from_millis(20),
        // One attempt each within the test: the failed one is retried in an hour.
        retry_schedule: vec![Duration::from_secs(3600)],
        ..WebhooksConfig::default()
    };
    let dispatcher =
        Dispatcher::new(store.clone(), secrets, policy, config, "test").unwrap().with_metrics(metrics.clone());
    let series = |result: &str| format!(r#"play_reconcile_total{{controller="webhook_dispatcher",result="{result}"}}"#);
    assert_eq!(sample(&metrics, &series("success")), Some(0.0), "exists before the first attempt");
    assert_eq!(sample(&metrics, r#"play_workqueue_depth{controller="webhook_dispatcher"}"#), None, "no queue here");

    let shutdown = CancellationToken::new();
    let running = tokio::spawn(dispatcher.run(shutdown.clone()));
    let mut tx = store.write().await.unwrap();
    events::record(&mut tx, NewEvent::new(account.id, "playground", 7, "created")).await.unwrap();
    tx.commit().await.unwrap();

    let started = Instant::now();
    let v = |series: &str| sample(&metrics, series).unwrap_or(0.0);
    while v(&series("success")) + v(&series("error")) < 2.0 {
        assert!(started.elapsed() < Duration::from_secs(10), "{}", metrics.render());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shutdown.cancel();
    running.await.unwrap();
    assert_eq!(v(&series("success")), 1.0, "the 200");
    assert_eq!(v(&series("error")), 1.0, "the 500");
    assert_eq!(v(r#"play_reconcile_errors_total{controller="webhook_dispatcher"}"#), 1.0);
    assert_eq!(v(r#"play_reconcile_time_seconds_count{controller="webhook_dispatcher"}"#), 2.0);
    assert_eq!(v(r#"play_workqueue_work_duration_seconds_count{controller="webhook_dispatcher"}"#), 2.0);
    let longest = r#"play_workqueue_longest_running_processor_seconds{controller="webhook_dispatcher"}"#;
    assert_eq!(sample(&metrics, longest), Some(0.0), "no attempt left in flight");
}
