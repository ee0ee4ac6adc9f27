//! What connecting to a Playroom records on it: the outcome of a
//! `test_connection`, and the host key pinned on first contact (trust on
//! first use) by whichever path connects first. Queries only; the policy
//! (refuse a connection whose key is not the pin) is the gateway's. A
//! first pin leaves `trusted` as it is: it names the machine at the
//! address the operator trusted (see `playroom_trust`).

use sqlx::Row;

use super::Store;
use super::events;
use super::playrooms::get;
use crate::Result;
use play_model::model::event::NewEvent;
use play_model::model::playroom::CheckOutcome;
use play_model::model::playroom::Playroom;
use play_model::time;

/// Records a connection check. A pin is written only if none exists yet, so
/// two racing first checks cannot replace each other's pin.
pub async fn record_check(store: &Store, account_id: i64, id: i64, outcome: CheckOutcome) -> Result<Playroom> {
    let mut tx = store.write().await?;
    let now = time::to_db(&time::now());
    sqlx::query("UPDATE playrooms SET last_checked_at = $1, last_transport = $2, last_error = $3 WHERE id = $4")
        .bind(&now)
        .bind(outcome.transport)
        .bind(outcome.error)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    if let Some(pin) = outcome.pin_host_key {
        pin_if_unset(&mut tx, account_id, id, &pin).await?;
    }
    let room = get(&mut tx, account_id, id).await?;
    store.commit(tx).await?;
    Ok(room)
}

/// Pins `key` unless the Playroom already has a pin, with an event when it
/// does. A compare-and-set: of two first contacts, exactly one pins.
async fn pin_if_unset(conn: &mut super::Conn, account_id: i64, id: i64, key: &str) -> Result<()> {
    let pinned =
        sqlx::query("UPDATE playrooms SET host_key = $1, host_key_pinned_at = $2 WHERE id = $3 AND host_key IS NULL")
            .bind(key)
            .bind(time::to_db(&time::now()))
            .bind(id)
            .execute(&mut *conn)
            .await?;
    if pinned.rows_affected() > 0 {
        let metadata = serde_json::json!({"host_key_pinned": true});
        events::record(conn, NewEvent::new(account_id, "playroom", id, "updated").metadata(metadata)).await?;
    }
    Ok(())
}

/// Trust on first use, for every connection play makes (a reconciler, the
/// sweep, an event watcher, a live read): pins `key` when the Playroom has
/// no pin yet, and returns the pin it holds afterwards (`key`, or the one
/// another connection pinned first); `None` when the Playroom is gone. The
/// caller refuses the connection when that pin is not `key`.
pub async fn pin_first_contact(store: &Store, id: i64, key: &str) -> Result<Option<String>> {
    let mut tx = store.write().await?;
    let Some(row) =
        sqlx::query("SELECT account_id FROM playrooms WHERE id = $1").bind(id).fetch_optional(&mut *tx).await?
    else {
        return Ok(None);
    };
    let account_id: i64 = row.try_get("account_id")?;
    pin_if_unset(&mut tx, account_id, id, key).await?;
    let pin: Option<String> = sqlx::query("SELECT host_key FROM playrooms WHERE id = $1")
        .bind(id)
        .fetch_one(&mut *tx)
        .await?
        .try_get("host_key")?;
    store.commit(tx).await?;
    Ok(pin)
}
