use crate::testing;

#[tokio::test]
async fn a_migrated_database_has_nothing_pending_and_names_the_last_migration() {
    let t = testing::store().await;
    let schema = t.store.schema().await.unwrap();
    assert!(schema.pending.is_empty(), "{:?}", schema.pending);
    assert_eq!(schema.database, Some(schema.binary));
    assert!(schema.binary >= 44, "the migrations are numbered up from 1: {}", schema.binary);
    assert_eq!(schema.newer(), None);
    // Migrating again runs nothing and succeeds.
    t.store.migrate().await.unwrap();
}

#[tokio::test]
async fn a_database_newer_than_the_binary_is_refused_naming_both_versions() {
    let t = testing::store().await;
    let binary = t.store.schema().await.unwrap().binary;
    let newer = binary + 1;
    testing::record_applied_migration(&t.store, newer).await;
    let schema = t.store.schema().await.unwrap();
    assert_eq!(schema.database, Some(newer));
    assert_eq!(schema.newer(), Some(newer));
    let err = t.store.migrate().await.unwrap_err();
    assert!(matches!(err, crate::Error::SchemaNewer { database, binary: b } if database == newer && b == binary));
    let message = err.to_string();
    assert!(message.contains(&format!("at migration {newer}")), "{message}");
    assert!(message.contains(&format!("its last migration is {binary}")), "{message}");
    assert!(message.contains("restore the backup"), "{message}");
}

#[tokio::test]
async fn a_new_database_lists_every_migration_and_a_dry_run_changes_nothing() {
    let (url, _dir) = testing::fresh_database_url().await;
    let store = crate::Store::connect(&url).await.unwrap();
    let schema = store.schema().await.unwrap();
    assert_eq!(schema.database, None);
    assert_eq!(schema.pending.first().map(|m| m.version), Some(1));
    assert_eq!(schema.pending.last().map(|m| m.version), Some(schema.binary));
    assert!(schema.pending.iter().all(|m| !m.description.is_empty()));
    // Reading the schema created nothing: it is still all pending.
    assert_eq!(store.schema().await.unwrap(), schema);
    store.migrate().await.unwrap();
    let after = store.schema().await.unwrap();
    assert!(after.pending.is_empty());
    assert_eq!(after.database, Some(schema.binary));
}
