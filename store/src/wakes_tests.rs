use std::sync::{Arc, Mutex};

use super::*;
use crate::testing;

/// A waker that records what it is given, and what the store held when it
/// was given it.
#[derive(Debug, Default)]
struct Seen(Mutex<Vec<(Kind, i64)>>);

impl Waker for Seen {
    fn wake(&self, kind: Kind, id: i64) {
        self.0.lock().unwrap().push((kind, id));
    }
}

impl Seen {
    fn taken(&self) -> Vec<(Kind, i64)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[tokio::test]
async fn noted_wakes_are_delivered_once_each_after_the_commit_and_never_after_a_rollback() {
    let t = testing::store().await;
    let seen = Arc::new(Seen::default());
    assert!(t.store.set_waker(seen.clone()));
    assert!(!t.store.set_waker(Arc::new(Seen::default())), "set once");

    let mut tx = t.store.write().await.unwrap();
    note(&mut tx, Kind::Playground, 7).await.unwrap();
    note(&mut tx, Kind::Playground, 7).await.unwrap();
    note_all(&mut tx, Kind::Edge, [3, 4]).await.unwrap();
    assert_eq!(seen.taken(), vec![], "nothing before the commit");
    t.store.commit(tx).await.unwrap();
    assert_eq!(seen.taken(), vec![(Kind::Playground, 7), (Kind::Edge, 3), (Kind::Edge, 4)]);

    let mut tx = t.store.write().await.unwrap();
    note(&mut tx, Kind::Trigger, 9).await.unwrap();
    tx.rollback().await.unwrap();
    // The next transaction on any connection delivers only its own.
    for _ in 0..4 {
        let mut tx = t.store.write().await.unwrap();
        note(&mut tx, Kind::Schedule, 1).await.unwrap();
        t.store.commit(tx).await.unwrap();
        assert_eq!(seen.taken(), vec![(Kind::Schedule, 1)], "a rolled-back note is never delivered");
    }
}

#[tokio::test]
async fn in_write_delivers_its_notes_and_a_failed_write_none() {
    let t = testing::store().await;
    let seen = Arc::new(Seen::default());
    t.store.set_waker(seen.clone());
    t.store.in_write(async |conn| note(conn, Kind::Playzone, 5).await).await.unwrap();
    assert_eq!(seen.taken(), vec![(Kind::Playzone, 5)]);
    let failed: Result<()> = t
        .store
        .in_write(async |conn| {
            note(conn, Kind::Playzone, 6).await?;
            Err(Error::Conflict("no".into()))
        })
        .await;
    assert!(failed.is_err());
    t.store.in_write(async |_| Ok(())).await.unwrap();
    assert_eq!(seen.taken(), vec![], "the failed write's note went with its transaction");
}

#[tokio::test]
async fn without_a_waker_commits_deliver_nothing_and_succeed() {
    let t = testing::store().await;
    let mut tx = t.store.write().await.unwrap();
    note(&mut tx, Kind::Playground, 1).await.unwrap();
    t.store.commit(tx).await.unwrap();
}
