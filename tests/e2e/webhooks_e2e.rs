//! The webhook dispatcher against real receivers on loopback (issue #15,
//! "Must show"): signatures verify over the raw body, filters narrow what
//! is sent, failures are retried with growing gaps and disable the
//! endpoint at 10, a dead receiver does not delay a healthy one, redirects
//! are not followed, a non-allowlisted address is refused at send time,
//! and `play serve` killed with SIGKILL mid-fan-out loses no event.
//!
//! Only loopback traffic: 127.0.0.1 is allowlisted, 127.0.0.2 is not.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::support::serve::Play;
use crate::support::webhooks::{Mode, Receiver, verify};
use play_model::model::quota::QuotaLimits;
use play_model::secrets::{MasterKey, SecretBox};
use play_model::webhook::model::Endpoint;
use play_model::webhook::model::Page;
use play_model::webhook::{Changes, DeliveryStatus, UrlPolicy};
use play_reconcilers::webhooks::{Dispatcher, WebhooksConfig};
use play_store::webhook_deliveries;
use play_store::webhooks;
use play_store::{Store, accounts, events};
use tokio_util::sync::{CancellationToken, DropGuard};

const SECRET: &str = "0123456789abcdef0123456789abcdef-test-secret";

struct Setup {
    _store: play_store::testing::TestStore,
    store: Store,
    secrets: SecretBox,
    account: i64,
    /// Stops the dispatcher when the set-up is dropped.
    _dispatcher: DropGuard,
}

fn policy() -> UrlPolicy {
    UrlPolicy { allow_http: true, allowlist: UrlPolicy::parse_allowlist("127.0.0.1").unwrap() }
}

fn config() -> WebhooksConfig {
    WebhooksConfig {
        poll_interval: Duration::from_millis(20),
        timeout: Duration::from_secs(2),
        retry_schedule: vec![Duration::from_millis(100); 9],
        ..WebhooksConfig::default()
    }
}

async fn setup(config: WebhooksConfig) -> Setup {
    let test_store = play_store::testing::store().await;
    let store = test_store.store.clone();
    let secrets = MasterKey::generate().secret_box();
    let (account, _) = accounts::create_account(&store, "hooks").await.unwrap();
    let shutdown = CancellationToken::new();
    let dispatcher = Dispatcher::new(store.clone(), secrets.clone(), policy(), config, "test").unwrap();
    tokio::spawn(dispatcher.run(shutdown.clone()));
    Setup { _store: test_store, store, secrets, account: account.id, _dispatcher: shutdown.drop_guard() }
}

impl Setup {
    async fn endpoint(&self, url: &str, events: &[&str], filters: &[(&str, Vec<i64>)]) -> Endpoint {
        let changes = Changes {
            url: Some(url.to_owned()),
            events: Some(events.iter().map(|e| e.to_string()).collect()),
            event_filters: Some(filters.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<BTreeMap<_, _>>()),
            secret: Some(SECRET.to_owned()),
            ..Changes::default()
        };
        webhooks::create(&self.store, &self.secrets, self.account, changes, &QuotaLimits::default()).await.unwrap().0
    }

    async fn event(&self, entity: &'static str, id: i64, action: &'static str) -> i64 {
        let mut tx = self.store.write().await.unwrap();
        let event_id =
            events::record(&mut tx, play_model::model::event::NewEvent::new(self.account, entity, id, action))
                .await
                .unwrap();
        tx.commit().await.unwrap();
        event_id
    }

    async fn endpoint_now(&self, id: i64) -> Endpoint {
        webhooks::get(&self.store, self.account, id).await.unwrap()
    }

    async fn deliveries(&self, endpoint: i64) -> Vec<play_model::webhook::model::Delivery> {
        webhook_deliveries::list(&self.store, self.account, endpoint, Page { limit: 1000, before: None }).await.unwrap()
    }

    async fn wait_delivery(&self, endpoint: i64, ok: impl Fn(&play_model::webhook::model::Delivery) -> bool) {
        let started = Instant::now();
        while !self.deliveries(endpoint).await.iter().any(&ok) {
            assert!(started.elapsed() < Duration::from_secs(10), "{:?}", self.deliveries(endpoint).await);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn entity_ids(hits: &[crate::support::webhooks::Hit]) -> Vec<(String, i64)> {
    let mut ids: Vec<_> =
        hits.iter().map(|h| (h.header("x-webhook-event"), h.json()["entity_id"].as_i64().unwrap())).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn deliveries_are_signed_and_filters_narrow_them() {
    let s = setup(config()).await;
    let a = Receiver::start("127.0.0.1", Mode::Status(200)).await;
    let b = Receiver::start("127.0.0.1", Mode::Status(204)).await;
    let ea = s.endpoint(&a.url(), &["playground.created"], &[("playground.created", vec![7])]).await;
    let eb = s.endpoint(&b.url(), &["playroom.updated", "playground.created"], &[]).await;

    s.event("playground", 8, "created").await; // filtered out for A
    s.event("playground", 7, "created").await;
    s.event("playroom", 3, "updated").await; // A is not subscribed
    webhooks::record_test(&s.store, s.account, ea.id, play_model::model::event::Actor::System).await.unwrap();

    a.wait_for(2, Duration::from_secs(10)).await;
    b.wait_for(3, Duration::from_secs(10)).await;
    // Anything wrongly sent would arrive meanwhile.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (hits_a, hits_b) = (a.hits(), b.hits());
    assert_eq!(
        entity_ids(&hits_a),
        [("playground.created".into(), 7), ("webhook.test".into(), ea.id)],
        "the filtered-out id 8 and the unsubscribed type are not delivered"
    );
    assert_eq!(
        entity_ids(&hits_b),
        [("playground.created".into(), 7), ("playground.created".into(), 8), ("playroom.updated".into(), 3)],
        "no filter: every id; and the test event of A is A's alone"
    );
    for hit in hits_a.iter().chain(&hits_b) {
        verify(SECRET, hit);
        let body = hit.json();
        for field in ["entity_type", "entity_id", "action", "timestamp"] {
            assert!(body.get(field).is_some(), "{field} in {body}");
        }
    }
    let created = hits_a.iter().find(|h| h.header("x-webhook-event") == "playground.created").unwrap().json();
    assert_eq!((created["entity_type"].as_str(), created["action"].as_str()), (Some("playground"), Some("created")));
    assert!(created.get("audit_log_id").is_some(), "Playground events carry the audit fields: {created}");
    for d in s.deliveries(ea.id).await.into_iter().chain(s.deliveries(eb.id).await) {
        assert_eq!((d.status, d.attempts), (DeliveryStatus::Succeeded, 1), "{d:?}");
        assert!(d.last_status_code.is_some_and(|c| (200..300).contains(&c)));
    }
}

#[tokio::test]
async fn a_failing_receiver_is_retried_with_growing_gaps_then_disabled_at_10() {
    let schedule: Vec<Duration> = (1..=9).map(|i| Duration::from_millis(60 * i)).collect();
    let s = setup(WebhooksConfig { retry_schedule: schedule.clone(), ..config() }).await;
    let r = Receiver::start("127.0.0.1", Mode::Status(500)).await;
    let e = s.endpoint(&r.url(), &["playspec.created"], &[]).await;
    // Issue #27, item 11: another endpoint learns of the disable.
    let watcher = Receiver::start("127.0.0.1", Mode::Status(200)).await;
    s.endpoint(&watcher.url(), &["webhook_endpoint.disabled"], &[]).await;
    s.event("playspec", 1, "created").await;

    let hits = r.wait_for(10, Duration::from_secs(20)).await;
    let gaps: Vec<Duration> = hits.windows(2).map(|w| w[1].at - w[0].at).collect();
    println!("gaps between attempts: {gaps:?}");
    for (gap, scheduled) in gaps.iter().zip(&schedule) {
        assert!(*gap >= *scheduled, "gap {gap:?} shorter than the schedule's {scheduled:?}");
    }
    // Growing: the last gap exceeds the first by at least half of what the
    // schedule adds. Not a ratio: each attempt's own time (more on a busy
    // machine) adds to every gap alike, and made `last > 4 * first` fail by
    // a millisecond.
    assert!(gaps[8].saturating_sub(gaps[0]) >= (schedule[8] - schedule[0]) / 2, "gaps grow: {gaps:?}");
    let ids: BTreeSet<String> = hits.iter().map(|h| h.header("x-webhook-delivery")).collect();
    assert_eq!(ids.len(), 1, "one delivery id across retries");

    s.wait_delivery(e.id, |d| d.status == DeliveryStatus::Abandoned).await;
    let endpoint = s.endpoint_now(e.id).await;
    assert_eq!((endpoint.enabled, endpoint.failure_count), (false, 10));
    assert!(endpoint.disabled_reason.as_deref().unwrap().contains("10 consecutive"), "{endpoint:?}");
    let recorded = events::list_for_account(&s.store, s.account).await.unwrap();
    let disabled: Vec<_> = recorded.iter().filter(|ev| ev.event_type == "webhook_endpoint.disabled").collect();
    assert_eq!(disabled.len(), 1, "one event says the endpoint was disabled");
    assert_eq!(disabled[0].entity_id, e.id);
    let told = watcher.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(told[0].header("x-webhook-event"), "webhook_endpoint.disabled");
    assert_eq!(told[0].json()["entity_id"].as_i64(), Some(e.id), "{}", told[0].json());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(r.hits().len(), 10, "nothing more is sent");
    assert_eq!(watcher.hits().len(), 1, "the watcher is told once");
}

#[tokio::test]
async fn gone_disables_at_once_and_re_enabling_sends_the_backlog() {
    let s = setup(WebhooksConfig { per_endpoint: 1, ..config() }).await;
    let r = Receiver::start("127.0.0.1", Mode::Status(410)).await;
    let e = s.endpoint(&r.url(), &["template.created"], &[]).await;
    // Both events recorded while the endpoint is enabled: both are its
    // backlog, even when the 410 answered to one disables it before the
    // other is fanned out (`webhook_dispatch_tests.rs`).
    {
        let mut tx = s.store.write().await.unwrap();
        for id in [1, 2] {
            events::record(&mut tx, play_model::model::event::NewEvent::new(s.account, "template", id, "created"))
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
    }
    r.wait_for(1, Duration::from_secs(10)).await;
    s.wait_delivery(e.id, |d| d.last_status_code == Some(410)).await;
    let endpoint = s.endpoint_now(e.id).await;
    assert_eq!((endpoint.enabled, endpoint.failure_count), (false, 1), "{endpoint:?}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(r.hits().len(), 1, "a disabled endpoint gets nothing");

    r.set_mode(Mode::Status(200));
    let enable = Changes { enabled: Some(true), ..Changes::default() };
    webhooks::update(&s.store, &s.secrets, s.account, e.id, enable).await.unwrap();
    // Normally at once; the bound is above a claim's hold (timeout x 2 +
    // 30 s), since under a loaded run (the whole suite on PostgreSQL) one
    // of the two was once still missing after 10 s. What is tested is that
    // the backlog is sent, not how fast.
    let hits = r.wait_for(3, Duration::from_secs(45)).await;
    let delivered: BTreeSet<i64> = hits[1..].iter().map(|h| h.json()["entity_id"].as_i64().unwrap()).collect();
    assert_eq!(delivered, BTreeSet::from([1, 2]), "the backlog is sent after re-enabling");
    s.wait_delivery(e.id, |d| d.status == DeliveryStatus::Succeeded && d.attempts == 2).await;
}

#[tokio::test]
async fn a_receiver_that_never_answers_does_not_delay_a_healthy_one() {
    let timeout = Duration::from_secs(2);
    let s = setup(WebhooksConfig { timeout, ..config() }).await;
    let dead = Receiver::start("127.0.0.1", Mode::Hang).await;
    let healthy = Receiver::start("127.0.0.1", Mode::Status(200)).await;
    let ed = s.endpoint(&dead.url(), &["playground.created"], &[]).await;
    s.endpoint(&healthy.url(), &["playground.created"], &[]).await;
    const N: usize = 50;
    let started = Instant::now();
    for i in 0..N {
        s.event("playground", i64::try_from(i).unwrap() + 1, "created").await;
    }
    let hits = healthy.wait_for(N, Duration::from_secs(10)).await;
    let all_healthy = hits.last().unwrap().at - started;
    println!(
        "healthy endpoint: {N} deliveries within {all_healthy:?} while the dead one holds {} attempts of {timeout:?}",
        dead.hits().len()
    );
    assert!(all_healthy < timeout, "the healthy endpoint waited for the dead one's timeout ({all_healthy:?})");
    assert!(dead.hits().len() <= 2, "at most per_endpoint attempts in flight to the dead endpoint");
    s.wait_delivery(ed.id, |d| d.last_error.as_deref().is_some_and(|e| e.contains("timed out"))).await;
}

#[tokio::test]
async fn a_redirect_to_a_non_allowlisted_address_is_not_followed() {
    let s = setup(config()).await;
    let target = Receiver::start("127.0.0.2", Mode::Status(200)).await;
    let r = Receiver::start("127.0.0.1", Mode::Redirect(target.url())).await;
    let e = s.endpoint(&r.url(), &["api_key.created"], &[]).await;
    s.event("api_key", 1, "created").await;
    s.wait_delivery(e.id, |d| d.last_status_code == Some(307)).await;
    let delivery = &s.deliveries(e.id).await[0];
    assert_eq!(delivery.status, DeliveryStatus::Failed);
    assert!(delivery.last_error.as_deref().unwrap().contains("not followed"), "{delivery:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(target.hits().is_empty(), "127.0.0.2 was reached");
}

#[tokio::test]
async fn an_endpoint_on_a_non_allowlisted_address_is_refused_at_send_time() {
    let s = setup(config()).await;
    // Saved under a looser policy (the operator narrowed it since).
    let target = Receiver::start("127.0.0.2", Mode::Status(200)).await;
    let e = s.endpoint(&target.url(), &["playroom.created"], &[]).await;
    s.event("playroom", 1, "created").await;
    s.wait_delivery(e.id, |d| d.attempts >= 1).await;
    let delivery = &s.deliveries(e.id).await[0];
    assert_eq!((delivery.status, delivery.last_status_code), (DeliveryStatus::Failed, None));
    assert!(delivery.last_error.as_deref().unwrap().contains("refused"), "{delivery:?}");
    assert_eq!(s.endpoint_now(e.id).await.failure_count, 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(target.hits().is_empty(), "127.0.0.2 was reached");
}

#[tokio::test]
async fn play_serve_killed_mid_fan_out_delivers_every_event_at_least_once() {
    const N: i64 = 2000;
    let play = Play::with_database_in_data_dir().serve_args(&[
        "--webhook-allow-http",
        "--webhook-allowlist",
        "127.0.0.1",
        "--webhook-poll-interval",
        "50ms",
    ]);
    assert!(play.run(&["migrate"]).status.success());
    let store = Store::connect(play.database_url()).await.unwrap();
    let (key, _) = MasterKey::load_or_create(&play.path("master.key")).unwrap();
    let secrets = key.secret_box();
    let (account, _) = accounts::ensure_account(&store, accounts::DEFAULT_ACCOUNT).await.unwrap();
    let r = Receiver::start("127.0.0.1", Mode::Status(200)).await;
    let changes = Changes {
        url: Some(r.url()),
        events: Some(vec!["playground.updated".into()]),
        secret: Some(SECRET.into()),
        ..Changes::default()
    };
    let (endpoint, _) = webhooks::create(&store, &secrets, account.id, changes, &QuotaLimits::default()).await.unwrap();
    let mut tx = store.write().await.unwrap();
    for i in 1..=N {
        events::record(&mut tx, play_model::model::event::NewEvent::new(account.id, "playground", i, "updated"))
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();

    let server = play.spawn();
    // Killed as soon as the first fan-out batch is committed: the kill
    // lands mid-fan-out whatever the speed of the machine (waiting for a
    // number of deliveries instead raced the fan-out's remaining batches).
    let started = Instant::now();
    while usize::try_from(N).unwrap() == events::undispatched(&store, N).await.unwrap().len() {
        assert!(started.elapsed() < Duration::from_secs(30), "play serve fanned out nothing");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    drop(server); // SIGKILL
    let at_kill = r.hits().len();
    let undispatched = events::undispatched(&store, N).await.unwrap().len();
    println!("killed after {at_kill} deliveries, {undispatched} events not yet fanned out");
    assert!(undispatched > 0, "the kill should land mid-fan-out");

    let _server = play.spawn();
    let started = Instant::now();
    loop {
        let seen: BTreeSet<i64> = r.hits().iter().map(|h| h.json()["entity_id"].as_i64().unwrap()).collect();
        if seen.len() == usize::try_from(N).unwrap() {
            break;
        }
        // A bound on waiting, not a speed check: generous, as test
        // binaries share the machine.
        assert!(started.elapsed() < Duration::from_secs(240), "{} of {N} events delivered", seen.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let hits = r.hits();
    verify(SECRET, &hits[hits.len() - 1]);
    let deliveries =
        webhook_deliveries::list(&store, account.id, endpoint.id, Page { limit: N * 2, before: None }).await.unwrap();
    println!("{} requests for {N} events ({} duplicates after the kill)", hits.len(), hits.len() - N as usize);
    assert_eq!(deliveries.len(), usize::try_from(N).unwrap(), "one delivery row per event");
    assert!(events::undispatched(&store, N).await.unwrap().is_empty());
}

/// Not a test: the throughput figure of BENCHMARKS.md ("Webhook
/// deliveries"). `cargo test --release --test webhooks_e2e -- --ignored
/// --nocapture bench_`
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run by hand, results in BENCHMARKS.md"]
async fn bench_signed_deliveries_per_second() {
    const ENDPOINTS: usize = 20;
    const EVENTS: i64 = 250;
    let s = setup(WebhooksConfig::default()).await;
    let r = Receiver::start("127.0.0.1", Mode::Status(200)).await;
    for _ in 0..ENDPOINTS {
        s.endpoint(&r.url(), &["playground.updated"], &[]).await;
    }
    let started = Instant::now();
    let mut tx = s.store.write().await.unwrap();
    for i in 1..=EVENTS {
        events::record(&mut tx, play_model::model::event::NewEvent::new(s.account, "playground", i, "updated"))
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    let total = ENDPOINTS * usize::try_from(EVENTS).unwrap();
    let hits = r.wait_for(total, Duration::from_secs(300)).await;
    let elapsed = hits.last().unwrap().at - started;
    #[expect(clippy::cast_precision_loss, reason = "a rate for a report")]
    let rate = total as f64 / elapsed.as_secs_f64();
    println!(
        "{total} signed deliveries ({EVENTS} events x {ENDPOINTS} endpoints) in {elapsed:?}: {rate:.0}/s ({})",
        play_store::testing::backend().as_str()
    );
}

/// `POST /api/webhook_endpoints/:id/test` through the API, with the
/// dispatcher woken by it (as `play serve` wires them): the answer carries
/// the first attempt's outcome, for a receiver that takes it and one that
/// refuses it.
#[tokio::test]
async fn test_answers_with_the_outcome_of_the_first_attempt() {
    use std::sync::Arc;

    use play_api::ApiConfig;
    use play_api::testing::TestApp;
    use play_core::wake::{ChannelWaker, Kind};
    use serde_json::json;

    let waker = ChannelWaker::new();
    let api =
        ApiConfig { webhook_urls: policy(), webhook_test_wait: Duration::from_secs(10), ..TestApp::default_config() };
    let app = TestApp::with_waker(api, Arc::new(play_api::testing::NoHosts), Arc::new(waker.clone())).await;
    // A slow poll: only the wake makes the answer quick.
    let slow = WebhooksConfig { poll_interval: Duration::from_secs(30), ..config() };
    let dispatcher = Dispatcher::new(app.store().clone(), app.state.secrets.clone(), policy(), slow, "api-test")
        .unwrap()
        .with_wakes(waker.subscribe(Kind::Webhooks));
    let shutdown = CancellationToken::new();
    tokio::spawn(dispatcher.run(shutdown.clone()));

    for (mode, delivered, code) in [(Mode::Status(200), true, 200), (Mode::Status(500), false, 500)] {
        let receiver = Receiver::start("127.0.0.1", mode).await;
        let created = app
            .post(
                "/api/webhook_endpoints",
                &app.admin,
                json!({"webhook_endpoint": {"url": receiver.url(), "events": ["playground.created"]}}),
            )
            .await;
        assert_eq!(created.status.as_u16(), 201, "{}", created.text);
        let id = created.body["id"].as_i64().unwrap();
        let started = Instant::now();
        let r = app.post(&format!("/api/webhook_endpoints/{id}/test"), &app.admin, json!({})).await;
        println!("test answered {} in {:?}", r.status, started.elapsed());
        assert_eq!(r.status.as_u16(), 200, "{}", r.text);
        assert_eq!(r.body["event_type"], "webhook.test");
        assert_eq!(r.body["delivered"], delivered, "{}", r.text);
        assert_eq!(r.body["delivery"]["last_status_code"], code, "{}", r.text);
        assert!(started.elapsed() < Duration::from_secs(5), "the wake, not the 30 s poll, sent it");
        let hits = receiver.hits();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].header("x-webhook-event"), "webhook.test");
    }
    shutdown.cancel();
}
