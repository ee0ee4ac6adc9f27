//! An account's launch defaults (issue #52, item 6): the Playroom its new
//! schedules and triggers launch on, so that a template whose version
//! turns one on runs without another call. Kept on the account's row;
//! adopted by `launch_settings::sync_row_in`; cleared with its Playroom
//! (`playrooms::delete`).

use sqlx::Row;

use super::{Conn, Store, flag, is_set};
use crate::{Error, Result};
use play_model::model::schedule::{Adopted, LaunchDefaults};
use play_model::wake::Wake;

/// The account's launch defaults.
pub async fn get(store: &Store, account_id: i64) -> Result<LaunchDefaults> {
    let mut conn = store.conn().await?;
    get_in(&mut conn, account_id).await
}

/// [`get`] in the caller's transaction.
pub async fn get_in(conn: &mut Conn, account_id: i64) -> Result<LaunchDefaults> {
    let row = sqlx::query("SELECT launch_playroom_id, launch_may_read_playzones FROM accounts WHERE id = $1")
        .bind(account_id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(row) = row else { return Err(Error::NotFound("account")) };
    Ok(LaunchDefaults {
        playroom_id: row.try_get("launch_playroom_id")?,
        may_read_playzones: is_set(row.try_get("launch_may_read_playzones")?),
    })
}

/// Sets the account's launch defaults, and gives the Playroom to each of
/// the account's schedules and triggers that is on and has none (a trigger
/// with the caller's right to read Playzones, as a `PATCH` would). The
/// Playroom must be one of the account's (a field error `playroom_id`
/// otherwise); it is locked first on PostgreSQL, so a concurrent delete
/// of it, which clears the default, comes wholly before (and this
/// refuses) or after (and clears it). Settings that have a Playroom keep
/// theirs; clearing the default moves none.
pub async fn set(store: &Store, account_id: i64, defaults: LaunchDefaults) -> Result<Adopted> {
    store.in_write(async |conn| set_in(conn, account_id, defaults).await).await
}

/// [`set`] in the caller's transaction (`play apply` of a Playroom with
/// `launchDefault`).
pub async fn set_in(conn: &mut Conn, account_id: i64, defaults: LaunchDefaults) -> Result<Adopted> {
    if let Some(playroom) = defaults.playroom_id {
        super::shapes::lock_row(conn, "playrooms", playroom).await?;
        // Not through `playrooms`, whose delete clears the default here.
        let sql = "SELECT id FROM playrooms WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL";
        if sqlx::query(sql).bind(playroom).bind(account_id).fetch_optional(&mut *conn).await?.is_none() {
            return Err(Error::field("playroom_id", "no Playroom of this account has this id"));
        }
    }
    sqlx::query("UPDATE accounts SET launch_playroom_id = $1, launch_may_read_playzones = $2 WHERE id = $3")
        .bind(defaults.playroom_id)
        .bind(flag(defaults.playroom_id.is_some() && defaults.may_read_playzones))
        .bind(account_id)
        .execute(&mut *conn)
        .await?;
    let defaults = get_in(conn, account_id).await?;
    let Some(playroom) = defaults.playroom_id else {
        return Ok(Adopted { defaults, schedules: Vec::new(), triggers: Vec::new() });
    };
    let idle = "WHERE account_id = $2 AND playroom_id IS NULL AND config IS NOT NULL RETURNING id";
    let sql = format!("UPDATE schedules SET playroom_id = $1, next_at = NULL {idle}");
    let schedules = sqlx::query(&sql).bind(playroom).bind(account_id).fetch_all(&mut *conn).await?;
    let sql = format!("UPDATE triggers SET playroom_id = $1, may_read_playzones = $3 {idle}");
    let triggers = sqlx::query(&sql)
        .bind(playroom)
        .bind(account_id)
        .bind(flag(defaults.may_read_playzones))
        .fetch_all(&mut *conn)
        .await?;
    let ids = |rows: Vec<sqlx::any::AnyRow>| -> Result<Vec<i64>> {
        rows.iter().map(|r| Ok(r.try_get::<i64, _>("id")?)).collect()
    };
    let adopted = Adopted { defaults, schedules: ids(schedules)?, triggers: ids(triggers)? };
    super::wakes::note_all(conn, adopted.schedules.iter().map(|id| Wake::Schedule((*id).into())).collect()).await?;
    super::wakes::note_all(conn, adopted.triggers.iter().map(|id| Wake::Trigger((*id).into())).collect()).await?;
    Ok(adopted)
}

/// Clears every account's default that names Playroom `playroom_id`, in
/// the caller's transaction (the Playroom is being deleted).
pub(super) async fn forget_playroom_in(conn: &mut Conn, playroom_id: i64) -> Result<()> {
    sqlx::query(
        "UPDATE accounts SET launch_playroom_id = NULL, launch_may_read_playzones = 0 WHERE launch_playroom_id = $1",
    )
    .bind(playroom_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
