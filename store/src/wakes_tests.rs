use std::sync::{Arc, Mutex};

use super::*;
use crate::testing;

/// A waker that records what it is given, and what the store held when it
/// was given it.
#[derive(Debug, Default)]
struct Seen(Mutex<Vec<Wake>>);

impl Waker for Seen {
    fn wake(&self, wake: Wake) {
        self.0.lock().unwrap().push(wake);
    }
}

impl Seen {
    fn taken(&self) -> Vec<Wake> {
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
    note(&mut tx, Wake::Playground(7.into())).await.unwrap();
    note(&mut tx, Wake::Playground(7.into())).await.unwrap();
    note_all(&mut tx, vec![Wake::Edge(3.into()), Wake::Edge(4.into())]).await.unwrap();
    assert_eq!(seen.taken(), vec![], "nothing before the commit");
    t.store.commit(tx).await.unwrap();
    assert_eq!(seen.taken(), vec![Wake::Playground(7.into()), Wake::Edge(3.into()), Wake::Edge(4.into())]);

    let mut tx = t.store.write().await.unwrap();
    note(&mut tx, Wake::Trigger(9.into())).await.unwrap();
    tx.rollback().await.unwrap();
    // The next transaction on any connection delivers only its own.
    for _ in 0..4 {
        let mut tx = t.store.write().await.unwrap();
        note(&mut tx, Wake::Schedule(1.into())).await.unwrap();
        t.store.commit(tx).await.unwrap();
        assert_eq!(seen.taken(), vec![Wake::Schedule(1.into())], "a rolled-back note is never delivered");
    }
}

#[tokio::test]
async fn in_write_delivers_its_notes_and_a_failed_write_none() {
    let t = testing::store().await;
    let seen = Arc::new(Seen::default());
    t.store.set_waker(seen.clone());
    t.store.in_write(async |conn| note(conn, Wake::Playzone(5.into())).await).await.unwrap();
    assert_eq!(seen.taken(), vec![Wake::Playzone(5.into())]);
    let failed: Result<()> = t
        .store
        .in_write(async |conn| {
            note(conn, Wake::Playzone(6.into())).await?;
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
    note(&mut tx, Wake::Playground(1.into())).await.unwrap();
    t.store.commit(tx).await.unwrap();
}
