//! Reads shared by concurrent callers (`store::coalesce`) are as fresh as
//! a read of one's own: a write committed before a read starts is seen,
//! however many other reads of the same row are in flight.

#![allow(clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use play_store::testing;
use play_store::{Store, playground_detail, playgrounds};

/// Writes `message` as the Playground's error message, then requires the
/// Playground's read and its detail read to see it.
async fn write_then_read(store: &Store, account: i64, id: i64, message: &str) {
    sqlx::query("UPDATE playgrounds SET error_message = $1 WHERE id = $2")
        .bind(message)
        .bind(id)
        .execute(store.pool())
        .await
        .expect("write");
    let read = playgrounds::get(store, account, id).await.expect("a read after the write");
    assert_eq!(read.error_message.as_deref(), Some(message), "a read after the write missed it");
    let detail = playground_detail::get_for_detail(store, account, id).await.expect("a detail read after the write");
    assert_eq!(detail.playground.error_message.as_deref(), Some(message), "a detail read after the write missed it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_after_a_write_sees_it_while_other_reads_are_in_flight() {
    let t = testing::store().await;
    let store = t.store.clone();
    let (account, id) = testing::playground_row(&store).await;
    // Eight readers keep queries of the same Playground in flight.
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let (store, stop) = (store.clone(), stop.clone());
            tokio::spawn(async move {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    playgrounds::get(&store, account, id).await.expect("read");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for n in 0..300 {
        write_then_read(&store, account, id, &format!("write {n}")).await;
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.await.expect("join") > 0);
    }
    // Another account's id is not found, shared or not.
    let other = playgrounds::get(&store, account + 1, id).await.expect_err("another account's");
    assert!(matches!(other, play_store::Error::NotFound("playground")), "{other:?}");
}

#[tokio::test]
async fn the_detail_read_holds_the_playground_and_its_playroom_as_their_own_reads_do() {
    let t = testing::store().await;
    let store = &t.store;
    let (account, id) = testing::playground_row(store).await;
    let own = playgrounds::get(store, account, id).await.expect("the Playground");
    let room = play_store::playrooms::get(store, account, own.playroom_id).await.expect("its Playroom");
    let detail = playground_detail::get_for_detail(store, account, id).await.expect("the detail read");
    assert_eq!(detail.playroom.as_ref(), Some(&room));
    assert_eq!(detail.playground.updated_at, own.updated_at);
    assert_eq!(detail.playground.playroom_id, room.id);
    assert!(!detail.any_outdated);
    // A deleted Playroom is none, as its own read finds none.
    sqlx::query("UPDATE playrooms SET deleted_at = created_at WHERE id = $1")
        .bind(room.id)
        .execute(store.pool())
        .await
        .expect("delete");
    let gone = play_store::playrooms::get(store, account, room.id).await.expect_err("deleted");
    assert!(matches!(gone, play_store::Error::NotFound("playroom")), "{gone:?}");
    let detail = playground_detail::get_for_detail(store, account, id).await.expect("the detail read");
    assert_eq!(detail.playroom, None);
}

/// Hot reads run on a connection of their own; one dropped mid-read (its
/// caller went away) is never reused half-way through, and reads after it
/// answer right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_cancelled_at_any_point_leave_later_reads_right() {
    let t = testing::store().await;
    let store = &t.store;
    let (account, id) = testing::playground_row(store).await;
    for round in 0..300u64 {
        let _ = tokio::time::timeout(
            std::time::Duration::from_micros(round * 2),
            playground_detail::get_for_detail(store, account, id),
        )
        .await;
        if round % 10 == 0 {
            write_then_read(store, account, id, &format!("round {round}")).await;
        }
    }
}
