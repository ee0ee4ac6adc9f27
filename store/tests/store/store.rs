//! Store tests. Run on SQLite by default and on PostgreSQL with
//! `PLAY_TEST_BACKEND=postgres` (scripts/test runs both).

use play_model::model::event::{Actor, NewEvent};
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::scopes::{Scope, ScopeSet};
use play_model::time;
use play_store::Error;
use play_store::events;
use play_store::quotas;
use play_store::testing;
use play_store::{accounts, keys};

fn new_key(account_id: i64, user_id: i64, label: &str) -> play_model::model::account::NewApiKey {
    let minted = play_model::token::generate();
    play_model::model::account::NewApiKey {
        account_id,
        user_id,
        label: label.into(),
        client_id: minted.client_id,
        token_digest: play_model::token::TokenPepper::new([7; 32]).digest(&minted.token),
        scopes: [Scope::KeysManage].into_iter().collect(),
        expires_at: None,
    }
}

#[tokio::test]
async fn migrations_are_idempotent_and_ping_works() {
    let t = testing::store().await;
    t.store.migrate().await.unwrap();
    t.store.ping().await.unwrap();
    assert_eq!(t.store.backend(), testing::backend());
}

#[tokio::test]
async fn accounts_have_unique_names_and_an_admin_user() {
    let t = testing::store().await;
    let (account, user) = accounts::create_account(&t.store, "acme").await.unwrap();
    assert_eq!(user.account_id, account.id);
    assert!(matches!(accounts::create_account(&t.store, "acme").await, Err(Error::Conflict(_))));
    assert!(matches!(accounts::create_account(&t.store, "bad name").await, Err(Error::Validation(_))));
    let (again, same_user) = accounts::ensure_account(&t.store, "acme").await.unwrap();
    assert_eq!((again.id, same_user.id), (account.id, user.id));
    assert_eq!(accounts::find_account_by_name(&t.store, "acme").await.unwrap(), account);
    assert!(matches!(accounts::find_account_by_name(&t.store, "nope").await, Err(Error::NotFound(_))));
}

#[tokio::test]
async fn keys_round_trip_and_are_scoped_by_account() {
    let t = testing::store().await;
    let (a, ua) = accounts::create_account(&t.store, "a").await.unwrap();
    let (b, _) = accounts::create_account(&t.store, "b").await.unwrap();
    let mut new = new_key(a.id, ua.id, "ci");
    new.expires_at = Some(time::now() + chrono::Duration::days(1));
    new.scopes = [Scope::KeysManage, Scope::PlayroomsRead].into_iter().collect();
    let digest = new.token_digest.clone();
    let key = keys::create(&t.store, new, &QuotaLimits::default(), Actor::System).await.unwrap();

    let listed = keys::list(&t.store, a.id).await.unwrap();
    assert_eq!(listed, vec![key.clone()]);
    assert!(keys::list(&t.store, b.id).await.unwrap().is_empty());

    let (found, stored_digest) = keys::find_by_digest(&t.store, &digest).await.unwrap().unwrap();
    assert_eq!(found, key);
    assert_eq!(stored_digest, digest);
    assert!(keys::find_by_digest(&t.store, "0".repeat(64).as_str()).await.unwrap().is_none());

    let used = time::now();
    keys::touch_many(&t.store, &[(key.id, used)]).await.unwrap();
    assert_eq!(keys::list(&t.store, a.id).await.unwrap()[0].last_used_at, Some(used));

    // Another account cannot delete it; its owner can, once.
    assert!(matches!(keys::delete(&t.store, b.id, key.id, Actor::System).await, Err(Error::NotFound(_))));
    keys::delete(&t.store, a.id, key.id, Actor::ApiKey(key.id)).await.unwrap();
    assert!(matches!(keys::delete(&t.store, a.id, key.id, Actor::System).await, Err(Error::NotFound(_))));
    assert!(keys::find_by_digest(&t.store, &digest).await.unwrap().is_none());
}

#[tokio::test]
async fn key_creation_and_deletion_write_outbox_events_in_the_same_transaction() {
    let t = testing::store().await;
    let (a, ua) = accounts::create_account(&t.store, "a").await.unwrap();
    let key =
        keys::create(&t.store, new_key(a.id, ua.id, "x"), &QuotaLimits::default(), Actor::ApiKey(99)).await.unwrap();
    keys::delete(&t.store, a.id, key.id, Actor::System).await.unwrap();
    let events = events::list_for_account(&t.store, a.id).await.unwrap();
    let kinds: Vec<_> = events.iter().map(|e| (e.event_type.as_str(), e.entity_id)).collect();
    assert_eq!(kinds, vec![("api_key.created", key.id), ("api_key.destroyed", key.id)]);
    // Non-playground events carry exactly the spec's four payload fields.
    let payload = serde_json::to_value(&events[0]).unwrap();
    let mut fields: Vec<_> = payload.as_object().unwrap().keys().cloned().collect();
    fields.sort();
    assert_eq!(fields, ["action", "entity_id", "entity_type", "timestamp"]);
}

#[tokio::test]
async fn a_failed_quota_check_writes_neither_key_nor_event() {
    let t = testing::store().await;
    let (a, ua) = accounts::create_account(&t.store, "a").await.unwrap();
    let limits = QuotaLimits::parse("api_keys=1").unwrap();
    keys::create(&t.store, new_key(a.id, ua.id, "one"), &limits, Actor::System).await.unwrap();
    let err = keys::create(&t.store, new_key(a.id, ua.id, "two"), &limits, Actor::System).await.unwrap_err();
    assert!(matches!(err, Error::QuotaExceeded { limit: 1, .. }), "{err:?}");
    assert_eq!(keys::list(&t.store, a.id).await.unwrap().len(), 1);
    assert_eq!(events::list_for_account(&t.store, a.id).await.unwrap().len(), 1);

    // A per-account override beats the default.
    quotas::set_account_limit(&t.store, a.id, Resource::ApiKeys, 2).await.unwrap();
    keys::create(&t.store, new_key(a.id, ua.id, "two"), &limits, Actor::System).await.unwrap();
}

#[tokio::test]
async fn concurrent_creations_never_exceed_the_quota() {
    let t = testing::store().await;
    let (a, ua) = accounts::create_account(&t.store, "a").await.unwrap();
    let limits = QuotaLimits::parse("api_keys=5").unwrap();
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let store = t.store.clone();
            let limits = limits.clone();
            tokio::spawn(async move {
                keys::create(&store, new_key(a.id, ua.id, &format!("k{i}")), &limits, Actor::System).await
            })
        })
        .collect();
    let mut ok = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => ok += 1,
            Err(Error::QuotaExceeded { .. }) => {}
            Err(other) => panic!("unexpected error under concurrency: {other:?}"),
        }
    }
    assert_eq!(ok, 5);
    assert_eq!(keys::list(&t.store, a.id).await.unwrap().len(), 5);
}

#[tokio::test]
async fn undispatched_events_are_read_in_order_and_marked() {
    let t = testing::store().await;
    let (a, _) = accounts::create_account(&t.store, "a").await.unwrap();
    let mut tx = t.store.write().await.unwrap();
    for id in 1..=3 {
        events::record(
            &mut tx,
            NewEvent::new(a.id, "playground", id, "status.changed")
                .playground_name(format!("pg-{id}"))
                .actor(Actor::ApiKey(5))
                .metadata(serde_json::json!({"from": "in_progress", "to": "running"})),
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    let pending = events::undispatched(&t.store, 10).await.unwrap();
    assert_eq!(pending.iter().map(|e| e.entity_id).collect::<Vec<_>>(), vec![1, 2, 3]);
    let payload = serde_json::to_value(&pending[0]).unwrap();
    assert_eq!(payload["audit_log_id"], pending[0].id);
    assert_eq!(payload["playground_name"], "pg-1");
    assert_eq!(payload["actor_type"], "api_key");
    assert_eq!(payload["actor_id"], 5);
    assert_eq!(payload["metadata"]["to"], "running");
    events::mark_dispatched(&t.store, pending[0].id, time::now()).await.unwrap();
    assert_eq!(events::undispatched(&t.store, 10).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_rolled_back_transaction_leaves_no_event() {
    let t = testing::store().await;
    let (a, _) = accounts::create_account(&t.store, "a").await.unwrap();
    let mut tx = t.store.write().await.unwrap();
    events::record(&mut tx, NewEvent::new(a.id, "playspec", 1, "created")).await.unwrap();
    tx.rollback().await.unwrap();
    assert!(events::list_for_account(&t.store, a.id).await.unwrap().is_empty());
}

#[test]
fn scope_sets_survive_the_stored_form() {
    let set = ScopeSet::all();
    assert_eq!(ScopeSet::from_db(&set.to_db()), set);
}
