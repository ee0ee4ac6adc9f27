use crate::{Backend, Store, testing};

#[tokio::test]
async fn a_snapshot_holds_what_the_database_held_and_names_its_schema_and_installation() {
    let t = testing::store().await;
    let (account, room) = testing::playroom_row(&t.store).await;
    testing::insert_playground(&t.store, account, room).await;
    let live = t.store.contents().await.unwrap();
    assert_eq!(live.schema, Some(t.store.schema().await.unwrap().binary));
    assert_eq!(live.installation, t.store.installation().await.unwrap());
    assert_eq!(live.counts.get("playgrounds"), Some(&1));
    assert_eq!(live.counts.get("playrooms"), Some(&1));
    assert!(live.counts.contains_key("_sqlx_migrations"), "{:?}", live.counts.keys());

    match t.store.backend() {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().unwrap();
            let copy = dir.path().join("copy.db");
            let taken = t.store.snapshot_sqlite_into(&copy).await.unwrap();
            assert_eq!(taken, live);
            crate::snapshot::check_sqlite_file(&copy).await.unwrap();
            // A write after the snapshot is not in the copy.
            testing::insert_playroom(&t.store, account, "later").await;
            assert_eq!(crate::snapshot::contents_of_sqlite_file(&copy).await.unwrap(), live);
            // The copy opens as a store of its own.
            let reopened = Store::connect(&format!("sqlite://{}", copy.display())).await.unwrap();
            assert_eq!(reopened.contents().await.unwrap(), live);
        }
        Backend::Postgres => {
            let exported = t.store.export_snapshot().await.unwrap();
            assert!(!exported.id.is_empty());
            assert_eq!(exported.contents, live);
            testing::insert_playroom(&t.store, account, "later").await;
            exported.finish().await.unwrap();
            assert_eq!(t.store.contents().await.unwrap().counts.get("playrooms"), Some(&2));
        }
    }
}

#[tokio::test]
async fn a_damaged_sqlite_file_fails_its_integrity_check() {
    if testing::backend() != Backend::Sqlite {
        return;
    }
    let t = testing::store().await;
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    t.store.snapshot_sqlite_into(&copy).await.unwrap();
    let mut bytes = std::fs::read(&copy).unwrap();
    // Past the header: the pages of the tables.
    let middle = bytes.len() / 2;
    bytes[middle..middle + 4096].fill(0xA5);
    std::fs::write(&copy, bytes).unwrap();
    assert!(crate::snapshot::check_sqlite_file(&copy).await.is_err());
}

#[tokio::test]
async fn only_a_database_without_tables_is_empty() {
    let (url, _dir) = testing::fresh_database_url().await;
    let store = Store::connect(&url).await.unwrap();
    assert!(store.is_empty().await.unwrap());
    store.migrate().await.unwrap();
    assert!(!store.is_empty().await.unwrap());
}

#[tokio::test]
async fn after_a_restore_new_playground_ids_start_past_the_gap() {
    let t = testing::store().await;
    let (account, room) = testing::playroom_row(&t.store).await;
    let first = testing::insert_playground(&t.store, account, room).await;
    sqlx::query("DELETE FROM playgrounds").execute(t.store.pool()).await.unwrap();
    t.store.skip_playground_ids(1000).await.unwrap();
    let next = testing::insert_playground(&t.store, account, room).await;
    assert_eq!(next, first + 1001);
    // Again: from the highest id, not from the gap's start.
    t.store.skip_playground_ids(10).await.unwrap();
    sqlx::query("DELETE FROM playgrounds").execute(t.store.pool()).await.unwrap();
    assert_eq!(testing::insert_playground(&t.store, account, room).await, next + 11);
}

#[tokio::test]
async fn the_gap_applies_to_a_database_that_never_had_a_playground() {
    let t = testing::store().await;
    let (account, room) = testing::playroom_row(&t.store).await;
    t.store.skip_playground_ids(500).await.unwrap();
    assert_eq!(testing::insert_playground(&t.store, account, room).await, 501);
}
