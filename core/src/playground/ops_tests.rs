use super::*;

/// Seven extensions of one hour at once (PostgreSQL): each read the same
/// `expires_at` and wrote it plus an hour, so all but one were lost
/// though every request answered success. Each must count.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn extensions_at_once_all_count() {
    let db = play_store::testing::store().await;
    let (account, id) = play_store::testing::playground_row(&db.store).await;
    let far = time::now() + chrono::Duration::days(30);
    let mut tx = db.store.write().await.unwrap();
    rows::set_expiry_in(&mut tx, id, far).await.unwrap();
    tx.commit().await.unwrap();
    let before = rows::get(&db.store, account, id).await.unwrap().expires_at.unwrap();
    let mut extensions = tokio::task::JoinSet::new();
    for _ in 0..7 {
        let store = db.store.clone();
        extensions.spawn(async move { extend(&store, account, id, Some(1), Actor::System).await });
    }
    while let Some(done) = extensions.join_next().await {
        done.unwrap().unwrap();
    }
    let after = rows::get(&db.store, account, id).await.unwrap().expires_at.unwrap();
    assert_eq!(after - before, chrono::Duration::hours(7));
}
