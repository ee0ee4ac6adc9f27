use super::*;
use play_model::secrets::MasterKey;

fn wanted(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
}

/// A store with one Playground (its id) and a secret box.
async fn fixture() -> (crate::testing::TestStore, SecretBox, i64) {
    let db = crate::testing::store().await;
    let (_, id) = crate::testing::playground_row(&db.store).await;
    (db, MasterKey::generate().secret_box(), id)
}

#[tokio::test]
async fn values_are_generated_once_sealed_and_kept_until_another_length_is_asked() {
    let (db, secrets, id) = fixture().await;
    let store = &db.store;
    assert!(values(store, &secrets, id).await.unwrap().is_empty());

    ensure(store, &secrets, id, &wanted(&[("DB_PASSWORD", 32), ("API_KEY", 16)])).await.unwrap();
    let first = values(store, &secrets, id).await.unwrap();
    assert_eq!(first["DB_PASSWORD"].len(), 32);
    assert_eq!(first["API_KEY"].len(), 16);
    assert!(first.values().all(|v| v.chars().all(|c| c.is_ascii_alphanumeric())), "{first:?}");
    assert_ne!(first["DB_PASSWORD"][..16], first["API_KEY"][..], "independent values");

    // Again (a later pass, a rollout, a racing replica): the same values.
    ensure(store, &secrets, id, &wanted(&[("DB_PASSWORD", 32), ("API_KEY", 16)])).await.unwrap();
    ensure(store, &secrets, id, &wanted(&[("DB_PASSWORD", 32)])).await.unwrap();
    assert_eq!(values(store, &secrets, id).await.unwrap(), first);

    // Another length: a new value of that length; the other stays.
    ensure(store, &secrets, id, &wanted(&[("API_KEY", 24)])).await.unwrap();
    let second = values(store, &secrets, id).await.unwrap();
    assert_eq!(second["API_KEY"].len(), 24);
    assert_eq!(second["DB_PASSWORD"], first["DB_PASSWORD"]);

    // At rest only sealed: the plaintext is in no column.
    let rows = sqlx::query("SELECT name, length, sealed_value, created_at FROM playground_generated_env")
        .fetch_all(store.pool())
        .await
        .unwrap();
    let stored: String = rows.iter().map(|r| r.try_get::<String, _>("sealed_value").unwrap()).collect();
    assert!(!stored.contains(&second["DB_PASSWORD"]) && !stored.contains(&second["API_KEY"]), "{stored}");
    // Bound to the Playground: another box (or another context) opens
    // nothing.
    assert!(values(store, &MasterKey::generate().secret_box(), id).await.is_err());
}

#[tokio::test]
async fn they_go_with_the_playground() {
    let (db, secrets, id) = fixture().await;
    let store = &db.store;
    ensure(store, &secrets, id, &wanted(&[("DB_PASSWORD", 32)])).await.unwrap();
    sqlx::query("DELETE FROM playgrounds WHERE id = $1").bind(id).execute(store.pool()).await.unwrap();
    assert!(values(store, &secrets, id).await.unwrap().is_empty());
}
