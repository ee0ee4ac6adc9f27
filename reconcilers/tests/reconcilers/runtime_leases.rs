//! Leases in the store, on SQLite by default and on PostgreSQL with
//! `PLAY_TEST_BACKEND=postgres`, and two runtimes sharing one store.

use std::time::Duration;

use crate::runtime_probe::{Probe, Running, quiet_config, reconciles, runtime};
use play_model::time;
use play_reconcilers::runtime::Config;
use play_store::leases;
use play_store::testing;

const MINUTE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn claim_renew_release_and_takeover_after_expiry() {
    let t = testing::store().await;
    let store = &t.store;
    let t0 = time::now();
    let later = |secs| t0 + chrono::Duration::seconds(secs);

    let a = leases::claim(store, "probe", 1, "a", t0, MINUTE).await.unwrap().expect("free: claimed");
    assert_eq!(a.expires_at, later(60));
    assert!(leases::claim(store, "probe", 1, "b", later(30), MINUTE).await.unwrap().is_none(), "held by a");
    assert!(leases::claim(store, "probe", 2, "b", later(30), MINUTE).await.unwrap().is_some(), "per object");
    assert!(leases::claim(store, "other", 1, "b", later(30), MINUTE).await.unwrap().is_some(), "per reconciler");

    let a = leases::renew(store, &a, later(50), MINUTE).await.unwrap().expect("renewed before expiry");
    assert_eq!(a.expires_at, later(110));
    assert!(leases::claim(store, "probe", 1, "b", later(100), MINUTE).await.unwrap().is_none(), "renewal held");

    let b = leases::claim(store, "probe", 1, "b", later(111), MINUTE).await.unwrap().expect("expired: taken over");
    assert!(b.token > a.token, "a takeover carries a higher fencing token");
    assert!(leases::renew(store, &a, later(112), MINUTE).await.unwrap().is_none(), "a lost it");
    assert!(!leases::release(store, &a).await.unwrap(), "a stale release changes nothing");
    let stored = leases::get(store, "probe", 1).await.unwrap().unwrap();
    assert_eq!((stored.owner.as_str(), stored.token), ("b", b.token));

    assert!(leases::release(store, &b).await.unwrap());
    let c = leases::claim(store, "probe", 1, "c", later(113), MINUTE).await.unwrap().expect("released: free");
    assert!(c.token > b.token);
    let again = leases::claim(store, "probe", 1, "c", later(114), MINUTE).await.unwrap().expect("own lease");
    assert!(again.token > c.token, "every claim is a new token, also the owner's");
}

#[tokio::test]
async fn an_expired_lease_is_not_renewed() {
    let t = testing::store().await;
    let t0 = time::now();
    let a = leases::claim(&t.store, "probe", 1, "a", t0, MINUTE).await.unwrap().unwrap();
    let after = t0 + chrono::Duration::seconds(61);
    assert!(leases::renew(&t.store, &a, after, MINUTE).await.unwrap().is_none());
}

#[tokio::test]
async fn still_held_is_false_after_a_takeover() {
    let t = testing::store().await;
    let store = &t.store;
    let now = time::now();
    let a = leases::claim(store, "probe", 1, "a", now, MINUTE).await.unwrap().unwrap();
    let mut tx = store.write().await.unwrap();
    assert!(leases::still_held(&mut tx, "probe", 1, "a", a.token).await.unwrap());
    assert!(!leases::still_held(&mut tx, "probe", 1, "b", a.token).await.unwrap(), "another owner");
    assert!(!leases::still_held(&mut tx, "probe", 1, "a", a.token + 1).await.unwrap(), "another token");
    tx.commit().await.unwrap();

    // `a` stalled past its expiry; `b` took over.
    let b = leases::claim(store, "probe", 1, "b", now + chrono::Duration::seconds(61), Duration::from_secs(3600))
        .await
        .unwrap()
        .unwrap();
    let mut conn = store.conn().await.unwrap();
    assert!(!leases::still_held(&mut conn, "probe", 1, "a", a.token).await.unwrap());
    assert!(leases::still_held(&mut conn, "probe", 1, "b", b.token).await.unwrap());
    drop(conn);
    leases::release(store, &b).await.unwrap();
    let mut conn = store.conn().await.unwrap();
    assert!(!leases::still_held(&mut conn, "probe", 1, "b", b.token).await.unwrap(), "released");
}

#[tokio::test]
async fn of_many_simultaneous_claims_exactly_one_wins() {
    let t = testing::store().await;
    let now = time::now();
    let claims = (0..12).map(|i| {
        let store = t.store.clone();
        tokio::spawn(async move { leases::claim(&store, "probe", 7, &format!("r{i}"), now, MINUTE).await })
    });
    let mut won = 0;
    for claim in futures::future::join_all(claims).await {
        if claim.unwrap().unwrap().is_some() {
            won += 1;
        }
    }
    assert_eq!(won, 1);
}

#[tokio::test]
async fn two_runtimes_on_one_store_never_reconcile_one_object_at_once() {
    let t = testing::store().await;
    let probe = Probe::ok(Duration::from_millis(40));
    let config = Config {
        concurrency: 4,
        lease_duration: Duration::from_secs(10),
        lease_busy_retry: Duration::from_millis(20),
        ..quiet_config()
    };
    let (a, metrics_a) = runtime(&probe, t.store.clone(), config.clone());
    let (b, metrics_b) = runtime(&probe, t.store.clone(), config);
    let (a, b) = (a.with_replica_id("replica-a"), b.with_replica_id("replica-b"));
    let (ha, hb) = (a.handle(), b.handle());
    let (a, b) = (Running::start(a, metrics_a), Running::start(b, metrics_b));
    for _ in 0..25 {
        for id in 0..4 {
            ha.wake(id);
            hb.wake(id);
        }
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (ma, mb) = (a.stop().await, b.stop().await);

    assert_eq!(probe.overlaps(), 0, "{:?}", probe.runs());
    assert!(reconciles(&ma, "skipped_lease") + reconciles(&mb, "skipped_lease") > 0, "the replicas contended");
    for id in 0..4 {
        let runs = probe.runs_of(id);
        assert!(!runs.is_empty());
        let tokens: Vec<i64> = runs.iter().map(|r| r.token).collect();
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens grow: {tokens:?}");
        let lease = leases::get(&t.store, "probe", id).await.unwrap().unwrap();
        assert!(lease.expires_at < time::now(), "released at the end");
    }
}
