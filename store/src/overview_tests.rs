use super::*;
use crate::events;
use play_model::model::event::{Actor, NewEvent};

async fn created(store: &Store, account: i64, id: i64) {
    let event = NewEvent::new(account, "playground", id, "created").actor(Actor::System);
    store.in_write(async |conn| events::record(conn, event).await).await.unwrap();
}

async fn moved(store: &Store, account: i64, id: i64, from: &str, to: &str) {
    let event = NewEvent::new(account, "playground", id, "status.changed")
        .actor(Actor::System)
        .metadata(serde_json::json!({"from": from, "to": to}));
    store.in_write(async |conn| events::record(conn, event).await).await.unwrap();
}

#[tokio::test]
async fn a_launch_counts_until_its_first_running_and_other_accounts_are_not_seen() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let [mine, other] = crate::testing::accounts(store, ["mine", "other"]).await;
    let since = time::now() - chrono::Duration::hours(1);
    created(store, mine.id, 1).await;
    moved(store, mine.id, 1, "in_progress", "running").await;
    moved(store, mine.id, 1, "running", "in_progress").await;
    moved(store, mine.id, 1, "in_progress", "running").await;
    created(store, mine.id, 2).await;
    created(store, other.id, 3).await;

    let found = launches(store, mine.id, since).await.unwrap();
    assert_eq!(found.iter().map(|l| l.playground_id).collect::<Vec<_>>(), vec![1, 2], "{found:?}");
    let first = found[0].to_running.unwrap();
    assert!(first >= chrono::Duration::zero() && first < chrono::Duration::seconds(5), "{first:?}");
    assert_eq!(found[1].to_running, None, "not running yet");

    // Nothing before the window.
    assert!(launches(store, mine.id, time::now() + chrono::Duration::seconds(5)).await.unwrap().is_empty());
    assert!(deliveries(store, mine.id, since).await.unwrap().is_empty());
}
