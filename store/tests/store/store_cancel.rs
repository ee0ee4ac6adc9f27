//! A write transaction whose caller goes away (a client disconnecting, a
//! timeout) must leave the pool's connections usable. sqlx's `begin` is not
//! cancel-safe: dropped after `BEGIN` ran but before the `Transaction`
//! existed, it returned the connection to the pool inside a transaction
//! that nothing would end (on SQLite holding the database's write lock, so
//! every later write waited out the busy timeout and then failed).

use std::time::Duration;

use play_store::testing;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_cancelled_at_any_point_leave_every_connection_usable() {
    let t = testing::store().await;
    let store = &t.store;
    sqlx::query("CREATE TABLE cancel_probe (n BIGINT NOT NULL)").execute(store.pool()).await.expect("create table");
    // Cancel `write()` at many different points of its progress: after a
    // growing number of microseconds, and a few times with everything in
    // flight at once.
    for round in 0..400u64 {
        let writes: Vec<_> = (0..4)
            .map(|k| {
                let store = store.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(Duration::from_micros(round * 3 + k * 17), async {
                        let mut tx = store.write().await?;
                        sqlx::query("INSERT INTO cancel_probe (n) VALUES ($1)")
                            .bind(i64::try_from(round).unwrap_or(0))
                            .execute(&mut *tx)
                            .await?;
                        tx.commit().await?;
                        Ok::<_, play_store::Error>(())
                    })
                    .await;
                })
            })
            .collect();
        for w in writes {
            w.await.expect("join");
        }
    }
    // Every pooled connection (the pool hands idle ones out in turn) still
    // starts, writes and commits a transaction, within a bound far below
    // the busy timeout a leaked write lock would make it wait out.
    for n in 0..32i64 {
        let write = async {
            let mut tx = store.write().await?;
            sqlx::query("INSERT INTO cancel_probe (n) VALUES ($1)").bind(-n).execute(&mut *tx).await?;
            tx.commit().await?;
            Ok::<_, play_store::Error>(())
        };
        tokio::time::timeout(Duration::from_secs(5), write)
            .await
            .unwrap_or_else(|_| panic!("write {n} waited on a transaction a cancelled caller left open"))
            .unwrap_or_else(|e| {
                panic!("write {n} failed on a connection a cancelled caller left in a transaction: {e}")
            });
    }
}
