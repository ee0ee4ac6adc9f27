#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use super::*;
use crate::model::event::{Actor, NewEvent};
use crate::store::{accounts, events};

async fn record(store: &Store, account: i64, id: i64, action: &'static str, metadata: serde_json::Value) {
    let event = NewEvent::new(account, "playground", id, action).actor(Actor::System).metadata(metadata);
    store.in_write(async |conn| events::record(conn, event).await).await.unwrap();
}

#[tokio::test]
async fn a_launch_counts_until_its_first_running_and_other_accounts_are_not_seen() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let (mine, _) = accounts::create_account(store, "mine").await.unwrap();
    let (other, _) = accounts::create_account(store, "other").await.unwrap();
    let since = time::now() - chrono::Duration::hours(1);
    record(store, mine.id, 1, "created", serde_json::json!({})).await;
    record(store, mine.id, 1, "status.changed", serde_json::json!({"from": "in_progress", "to": "running"})).await;
    record(store, mine.id, 1, "status.changed", serde_json::json!({"from": "running", "to": "in_progress"})).await;
    record(store, mine.id, 1, "status.changed", serde_json::json!({"from": "in_progress", "to": "running"})).await;
    record(store, mine.id, 2, "created", serde_json::json!({})).await;
    record(store, other.id, 3, "created", serde_json::json!({})).await;

    let found = launches(store, mine.id, since).await.unwrap();
    assert_eq!(found.iter().map(|l| l.playground_id).collect::<Vec<_>>(), vec![1, 2], "{found:?}");
    let first = found[0].to_running.unwrap();
    assert!(first >= chrono::Duration::zero() && first < chrono::Duration::seconds(5), "{first:?}");
    assert_eq!(found[1].to_running, None, "not running yet");

    // Nothing before the window.
    assert!(launches(store, mine.id, time::now() + chrono::Duration::seconds(5)).await.unwrap().is_empty());
    assert!(deliveries(store, mine.id, since).await.unwrap().is_empty());
}
