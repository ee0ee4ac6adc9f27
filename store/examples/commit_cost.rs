//! What `Store::commit`'s drain of noted wakes costs a write transaction
//! (issue #50, item 6): the same empty write transaction committed
//! through `Store::commit` (the drain, then `COMMIT`) and committed bare
//! (`COMMIT` alone), alternating rounds, on SQLite (a file in a temporary
//! directory) or on the PostgreSQL of `PLAY_TEST_POSTGRES_URL` with
//! `PLAY_TEST_BACKEND=postgres`.
//!
//!   cargo run --release -p play-store --features testing --example commit_cost [transactions per round]

use std::time::{Duration, Instant};

use play_store::testing;

#[tokio::main]
async fn main() -> play_store::Result<()> {
    let n: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let t = testing::store().await;
    let store = &t.store;
    let (mut drained, mut bare) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let started = Instant::now();
        for _ in 0..n {
            let tx = store.write().await?;
            store.commit(tx).await?;
        }
        drained.push(started.elapsed() / n);
        let started = Instant::now();
        for _ in 0..n {
            let tx = store.write().await?;
            tx.commit().await?;
        }
        bare.push(started.elapsed() / n);
    }
    let show = |mut v: Vec<Duration>| {
        v.sort();
        format!("min {:?} median {:?} max {:?}", v[0], v[v.len() / 2], v[v.len() - 1])
    };
    println!("{:?}, {n} transactions a round, 5 rounds", store.backend());
    println!("Store::commit (drain + COMMIT): {}", show(drained));
    println!("bare COMMIT:                    {}", show(bare));
    Ok(())
}
