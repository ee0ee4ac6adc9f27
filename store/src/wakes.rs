//! Wakes committed with the change (issue #50, item 6): the store writes
//! that change what a loop converges note the wake in the same
//! transaction ([`note`]), and [`Store::commit`], the one way a write
//! transaction of play ends in a commit, hands them to the process's
//! [`Waker`] once the commit succeeded. No route, flow or apply step wakes
//! a loop for a change it wrote: a new caller of a store write cannot
//! forget the wake, and a rolled-back change wakes nobody.
//!
//! How: every pooled connection has a temporary table, `play_wakes`
//! (made when the connection opens; private to the connection, and
//! transactional like any table). A note is a row in it; the commit reads
//! and deletes the transaction's rows just before `COMMIT` and delivers
//! them, once each, after it. A rollback takes its rows with it.
//!
//! Invariants:
//! - a wake is delivered only after its transaction committed, so the loop
//!   it wakes reads the change;
//! - a wake is a hint (`play_model::wake`): a process stopping between
//!   the commit and the delivery loses it, and the loop's periodic resync
//!   finds the change; other replicas get it through the waker's relay
//!   (`play_store::wake_bus`, `NOTIFY`);
//! - without a waker (commands, tests of the store) nothing is delivered.

use std::collections::BTreeSet;
use std::sync::Arc;

use sqlx::Row;

use crate::{Conn, Error, Result, Store, Tx};
use play_model::wake::{Wake, Waker};

/// Makes the connection's table of noted wakes (run when a pooled
/// connection opens).
pub(crate) const CREATE: &str =
    "CREATE TEMPORARY TABLE IF NOT EXISTS play_wakes (kind TEXT NOT NULL, object_id BIGINT NOT NULL)";

/// Notes, in the caller's write transaction, that `wake`'s loop must look
/// at its object once the transaction commits.
pub async fn note(conn: &mut Conn, wake: Wake) -> Result<()> {
    sqlx::query("INSERT INTO play_wakes (kind, object_id) VALUES ($1, $2)")
        .bind(wake.kind().as_str())
        .bind(wake.id())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// [`note`] for each of `wakes`.
pub async fn note_all(conn: &mut Conn, wakes: Vec<Wake>) -> Result<()> {
    for wake in wakes {
        note(conn, wake).await?;
    }
    Ok(())
}

/// Takes the transaction's noted wakes out of its table.
async fn take(conn: &mut Conn) -> Result<BTreeSet<Wake>> {
    let rows = sqlx::query("DELETE FROM play_wakes RETURNING kind, object_id").fetch_all(&mut *conn).await?;
    rows.iter()
        .map(|row| {
            let kind: String = row.try_get("kind")?;
            let kind = kind.parse().map_err(|()| Error::Internal(format!("a noted wake of kind {kind:?}")))?;
            Ok(Wake::of(kind, row.try_get("object_id")?))
        })
        .collect()
}

impl Store {
    /// Gives this store (and every clone of it) the waker that commits
    /// deliver their noted wakes to; `false` when one was set before.
    pub fn set_waker(&self, waker: Arc<dyn Waker>) -> bool {
        self.waker.set(waker).is_ok()
    }

    /// Commits `tx` and then delivers the wakes it noted ([`note`]).
    pub async fn commit(&self, mut tx: Tx) -> Result<()> {
        let wakes = take(&mut tx).await?;
        tx.commit().await?;
        if let Some(waker) = self.waker.get() {
            for wake in wakes {
                waker.wake(wake);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "wakes_tests.rs"]
mod tests;
