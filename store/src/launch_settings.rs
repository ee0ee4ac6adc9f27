//! What the store of schedules and of triggers share: both are made from
//! the latest version of a template, and both keep the launch variables
//! an account gives them, sealed.
//!
//! Not through `store::templates`: it calls `schedules::sync_in` and
//! `triggers::sync_in`, which read the version here.

use std::collections::BTreeMap;

use sqlx::Row;

use super::{Conn, Store};
use crate::{Error, Result};
use play_model::secrets::SecretBox;

/// The tables whose rows keep launch variables.
#[derive(Clone, Copy, Debug)]
pub(super) enum Owner {
    Schedules,
    Triggers,
}

impl Owner {
    fn table(self) -> &'static str {
        match self {
            Owner::Schedules => "schedules",
            Owner::Triggers => "triggers",
        }
    }

    fn resource(self) -> play_model::model::quota::Resource {
        match self {
            Owner::Schedules => play_model::model::quota::Resource::Schedules,
            Owner::Triggers => play_model::model::quota::Resource::Triggers,
        }
    }

    /// The sealing context: a value sealed for one row opens for no other.
    fn context(self, id: i64) -> String {
        format!("{}:{id}:variables", self.table())
    }
}

/// The number and body of template `template_id`'s latest version.
pub(super) async fn latest_body_in(
    conn: &mut Conn,
    account_id: i64,
    template_id: i64,
) -> Result<Option<(i64, String)>> {
    let row = sqlx::query(
        "SELECT version, template_body FROM import_template_versions WHERE template_id = $1 AND account_id = $2 \
         ORDER BY version DESC LIMIT 1",
    )
    .bind(template_id)
    .bind(account_id)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| Ok((r.try_get("version")?, r.try_get("template_body")?))).transpose()
}

/// A row of `owner` brought in line with its template's latest version.
#[derive(Debug)]
pub(super) struct Synced<'a> {
    pub account_id: i64,
    pub template_id: i64,
    pub version: i64,
    /// The settings the latest version asks for, as stored (JSON); `None`:
    /// none.
    pub config: Option<String>,
    /// The template's row: its id, and whether its settings differ.
    pub existing: Option<(i64, bool)>,
    /// What else a change of settings resets (`SET` clauses).
    pub reset: &'a str,
    /// The account's quota of enabled rows (`triggers`, `schedules`) is
    /// checked when a version turns one on.
    pub limits: &'a play_model::model::quota::QuotaLimits,
}

/// Makes the row when the version asks for one and there is none, and
/// replaces its settings when they changed (a row is never deleted here:
/// its history and targets outlive a version without settings). Its id.
pub(super) async fn sync_row_in(conn: &mut Conn, owner: Owner, synced: Synced<'_>) -> Result<Option<i64>> {
    let now = play_model::time::to_db(&play_model::time::now());
    if synced.config.is_some() {
        let sql = format!("SELECT id FROM {} WHERE template_id = $1 AND config IS NOT NULL", owner.table());
        let on = sqlx::query(&sql).bind(synced.template_id).fetch_optional(&mut *conn).await?;
        if on.is_none() {
            super::quotas::check(conn, synced.account_id, owner.resource(), synced.limits).await?;
        }
    }
    match synced.existing {
        None if synced.config.is_none() => Ok(None),
        None => {
            let sql = format!(
                "INSERT INTO {} (account_id, template_id, config, config_version, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $5) RETURNING id",
                owner.table()
            );
            let row = sqlx::query(&sql)
                .bind(synced.account_id)
                .bind(synced.template_id)
                .bind(&synced.config)
                .bind(synced.version)
                .bind(&now)
                .fetch_one(&mut *conn)
                .await?;
            Ok(Some(row.try_get("id")?))
        }
        Some((id, changed)) => {
            if changed {
                let sql = format!(
                    "UPDATE {} SET config = $1, config_version = $2, {}, updated_at = $3 WHERE id = $4",
                    owner.table(),
                    synced.reset
                );
                sqlx::query(&sql)
                    .bind(&synced.config)
                    .bind(synced.version)
                    .bind(&now)
                    .bind(id)
                    .execute(&mut *conn)
                    .await?;
            }
            Ok(Some(id))
        }
    }
}

/// Seals and stores `variables` on row `id` of `owner`.
pub(super) async fn set_variables_in(
    conn: &mut Conn,
    secrets: &SecretBox,
    owner: Owner,
    id: i64,
    variables: &BTreeMap<String, serde_json::Value>,
) -> Result<()> {
    let sealed = secrets.seal(&serde_json::json!(variables).to_string(), &owner.context(id))?;
    sqlx::query(&format!("UPDATE {} SET variables = $1 WHERE id = $2", owner.table()))
        .bind(sealed)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The launch variables of row `id` of `owner`, opened.
pub(super) async fn variables(
    store: &Store,
    secrets: &SecretBox,
    owner: Owner,
    id: i64,
) -> Result<BTreeMap<String, serde_json::Value>> {
    let mut conn = store.conn().await?;
    let row = sqlx::query(&format!("SELECT variables FROM {} WHERE id = $1", owner.table()))
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    let sealed: Option<String> = row.map(|r| r.try_get("variables")).transpose()?.flatten();
    match sealed {
        Some(sealed) => serde_json::from_str(&secrets.open(&sealed, &owner.context(id))?)
            .map_err(|e| Error::Internal(format!("stored launch variables of {} {id}: {e}", owner.table()))),
        None => Ok(BTreeMap::new()),
    }
}
