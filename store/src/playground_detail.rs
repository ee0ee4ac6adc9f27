//! The read behind a Playground's detail view: the Playground, whether any
//! of its built services is outdated, and its Playroom, in one query (each
//! query is a hand-off to the store's worker thread or a network round
//! trip, issue #16). A module of its own so that `playgrounds` need not
//! import `playrooms` (which imports, through quotas, back into it).

use sqlx::Row;

use super::playgrounds::{COLUMNS, FROM, from_row};
use super::playrooms;
use super::{Conn, Store};
use crate::{Error, Result};
use play_model::playground::model::{ForDetail, Origin};

/// The query of [`get_for_detail`], built once from the columns of both
/// tables.
static DETAIL_QUERY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let outdated = super::builds::OUTDATED_SOURCES;
    let room = playrooms::columns_as("r", "room_");
    format!(
        "SELECT {COLUMNS}, CAST(CASE WHEN EXISTS (SELECT 1 {outdated} AND ps.playground_id = g.id) THEN 1 ELSE 0 END \
         AS BIGINT) AS any_outdated, {room}, tt.trigger_id AS origin_trigger, tt.ref_kind AS origin_kind, \
         tt.ref_name AS origin_ref, tt.commit_sha AS origin_commit FROM {FROM} \
         LEFT JOIN playrooms r ON r.id = g.playroom_id AND r.account_id = g.account_id AND r.deleted_at IS NULL \
         LEFT JOIN trigger_targets tt ON tt.playground_id = g.id \
         WHERE g.id = $1 AND g.account_id = $2"
    )
});

/// [`super::playgrounds::get`], whether any of its built services is outdated and its
/// Playroom, in one read: each query is a hand-off to the store's worker
/// thread or a network round trip (issue #16), and the view needs all
/// three. Not coalesced here: the detail view coalesces its whole render
/// (`play_api::rendered`), this read included.
pub async fn get_for_detail(store: &Store, account_id: i64, id: i64) -> Result<ForDetail> {
    store.hot_read(|conn| Box::pin(read_for_detail(conn, account_id, id))).await
}

async fn read_for_detail(conn: &mut Conn, account_id: i64, id: i64) -> Result<ForDetail> {
    let row = sqlx::query(DETAIL_QUERY.as_str())
        .bind(id)
        .bind(account_id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(Error::NotFound("playground"))?;
    let playroom = match row.try_get::<Option<i64>, _>("room_id")? {
        Some(_) => Some(playrooms::from_row_as(&row, "room_")?),
        None => None,
    };
    let origin = match row.try_get::<Option<i64>, _>("origin_trigger")? {
        Some(trigger_id) => Some(Origin {
            trigger_id,
            ref_kind: row.try_get("origin_kind")?,
            ref_name: row.try_get("origin_ref")?,
            commit: row.try_get("origin_commit")?,
        }),
        None => None,
    };
    Ok(ForDetail {
        playground: from_row(&row)?,
        any_outdated: row.try_get::<i64, _>("any_outdated")? != 0,
        playroom,
        origin,
    })
}
