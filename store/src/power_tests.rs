use std::time::Duration;

use super::*;
use crate::{leases, playground_status};

const OWNER: &str = "replica-a";

fn fence(token: i64) -> Fence<'static> {
    Fence { reconciler: "playground", owner: OWNER, token }
}

async fn power_of(store: &Store, id: i64) -> (Power, i64) {
    let p = playground_status::load(store, id).await.unwrap().unwrap();
    (p.sleep.power, p.generation)
}

async fn set_running(store: &Store, id: i64) {
    let sql = "UPDATE playgrounds SET status = $1, desired_state = $2 WHERE id = $3";
    let running = (PlaygroundStatus::Running.as_str(), DesiredState::Running.as_str());
    crate::write_shapes::set_pair_by_id(store.pool(), sql, running, id).await.unwrap();
}

/// A running Playground that a request put to sleep, where a wake test
/// starts: its id.
async fn asleep_playground(store: &Store) -> i64 {
    let (_, id) = crate::testing::playground_row(store).await;
    set_running(store, id).await;
    let mut tx = store.write().await.unwrap();
    assert!(set_power_in(&mut tx, id, Power::Asleep, PowerReason::Api).await.unwrap());
    tx.commit().await.unwrap();
    id
}

#[tokio::test]
async fn concurrent_wakes_of_one_sleeping_playground_wake_it_once() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let id = asleep_playground(store).await;
    let (_, asleep_generation) = power_of(store, id).await;
    // Two replicas' monitors see the same request's line at once.
    let (a, b) = tokio::join!(wake_on_request(store, id), wake_on_request(store, id));
    assert_eq!([a.unwrap(), b.unwrap()].iter().filter(|w| **w).count(), 1, "exactly one wake");
    assert_eq!(power_of(store, id).await, (Power::Awake, asleep_generation + 1), "one new generation");
}

#[tokio::test]
async fn a_request_for_a_playground_awake_already_costs_no_write_transaction() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let id = asleep_playground(store).await;
    let writes = || store.write_transactions().get();
    let before = writes();
    assert!(wake_on_request(store, id).await.unwrap(), "the first request wakes it");
    assert_eq!(writes(), before + 1, "in one write transaction");
    // Awake now: the next requests (a flood's lines) only read.
    for _ in 0..50 {
        assert!(!wake_on_request(store, id).await.unwrap());
    }
    assert_eq!(writes(), before + 1, "no write transaction for a Playground awake already");
}

#[tokio::test]
async fn idle_sleep_yields_to_activity_recorded_after_the_look() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let (_, id) = crate::testing::playground_row(store).await;
    set_running(store, id).await;
    let lease = leases::claim(store, "playground", id, OWNER, time::now(), Duration::from_secs(60)).await.unwrap();
    let token = lease.unwrap().token;
    let cutoff = time::now();
    // Activity after the reconciler looked: it stays awake.
    touch(store, &[id], cutoff + chrono::Duration::milliseconds(10)).await.unwrap();
    assert!(!sleep_if_idle(store, fence(token), id, cutoff).await.unwrap().held().unwrap());
    assert_eq!(power_of(store, id).await.0, Power::Awake);
    // Idle past the cutoff: asleep, once.
    let later = cutoff + chrono::Duration::seconds(1);
    assert!(sleep_if_idle(store, fence(token), id, later).await.unwrap().held().unwrap());
    assert!(!sleep_if_idle(store, fence(token), id, later).await.unwrap().held().unwrap());
    assert_eq!(power_of(store, id).await.0, Power::Asleep);
    // Activity only moves forward.
    touch(store, &[id], cutoff).await.unwrap();
    let p = playground_status::load(store, id).await.unwrap().unwrap();
    assert_eq!(p.sleep.last_active_at, Some(cutoff + chrono::Duration::milliseconds(10)));
}
