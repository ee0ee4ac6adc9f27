//! The store's pool skips sqlx's test of every acquired connection (a round
//! trip each, issue #16) but still tests one that sat idle: a PostgreSQL
//! connection cut while idle (a restart, a firewall) is replaced, never
//! handed to a query; the connection kept for hot reads, cut, costs a retry
//! on the pool, not an error.

use std::time::Duration;

use play_store::testing;
use play_store::{Backend, TEST_IDLE_AFTER, playgrounds};
use sqlx::Connection as _;

#[tokio::test]
async fn connections_cut_while_idle_are_replaced_before_use() {
    let t = testing::store().await;
    if t.store.backend() != Backend::Postgres {
        // SQLite's connections are files in this process: nothing cuts them.
        return;
    }
    // The connection kept for hot reads is made and used...
    let (account, id) = testing::playground_row(&t.store).await;
    playgrounds::get(&t.store, account, id).await.expect("a hot read");
    // ... and four connections in the pool, all idle.
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(t.store.conn().await.expect("a connection"));
    }
    drop(held);
    // Cut every pooled session from the server's side, as a restart would.
    let mut admin = sqlx::PgConnection::connect(&t.url).await.expect("connect");
    let cut: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(&mut admin)
    .await
    .expect("terminate");
    assert!(cut.len() >= 5, "the pool's sessions and the hot one were cut: {cut:?}");
    tokio::time::sleep(TEST_IDLE_AFTER + Duration::from_millis(200)).await;
    for n in 0..8 {
        sqlx::query("SELECT 1")
            .execute(t.store.pool())
            .await
            .unwrap_or_else(|e| panic!("query {n} got a cut connection: {e}"));
    }
}

/// `Backend::of` reads a connection's backend as the store was opened
/// (the quota check locks the account row on PostgreSQL by it).
#[tokio::test]
async fn a_connection_knows_its_backend() {
    let t = testing::store().await;
    let conn = t.store.conn().await.expect("a connection");
    assert_eq!(Backend::of(&conn), t.store.backend());
    drop(conn);
    let tx = t.store.write().await.expect("a transaction");
    assert_eq!(Backend::of(&tx), t.store.backend());
}
