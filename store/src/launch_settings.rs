//! What the store of schedules and of triggers share, the one idea of a
//! launch setting with two kinds ([`Owner`]): both are made from the latest
//! version of a template, both launch on one of the account's Playrooms,
//! paused or not ([`activate`]), and both keep the launch variables an
//! account gives them, sealed.
//!
//! The reads every kind has (`get`, `find`, `list`, `ids`, `of_template`,
//! `variables`) and its activation (`activate`) are generic over the kind's
//! record ([`Setting`]): callers name the kind,
//! `launch_settings::find::<Schedule>(store, id)`. What only one kind has
//! (a schedule's runs and cursor, a trigger's targets, pass and right to
//! read Playzones) stays in `schedules` and `triggers`.
//!
//! Not through `store::templates`: it calls `schedules::sync_in` and
//! `triggers::sync_in`, which read the version here.

use std::collections::BTreeMap;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Conn, Store, flag, is_set};
use crate::{Error, Result};
use play_model::model::schedule::Activation;
use play_model::secrets::SecretBox;
use play_model::time;
use play_model::wake::Wake;

/// The tables whose rows keep launch variables.
#[derive(Clone, Copy, Debug)]
pub enum Owner {
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

    /// What a missing row is called (`NotFound`).
    fn what(self) -> &'static str {
        match self {
            Owner::Schedules => "schedule",
            Owner::Triggers => "trigger",
        }
    }

    fn resource(self) -> play_model::model::quota::Resource {
        match self {
            Owner::Schedules => play_model::model::quota::Resource::Schedules,
            Owner::Triggers => play_model::model::quota::Resource::Triggers,
        }
    }

    /// The wake of row `id`'s loop.
    fn wake(self, id: i64) -> Wake {
        match self {
            Owner::Schedules => Wake::Schedule(id.into()),
            Owner::Triggers => Wake::Trigger(id.into()),
        }
    }

    /// The sealing context: a value sealed for one row opens for no other.
    fn context(self, id: i64) -> String {
        format!("{}:{id}:variables", self.table())
    }
}

/// A launch setting's record, of either kind: how its rows are read.
pub trait Setting: Sized {
    const OWNER: Owner;
    /// The columns [`Setting::from_row`] reads.
    const COLUMNS: &'static str;
    /// What a template's latest version asks of this kind.
    type Settings: PartialEq + serde::Serialize;
    fn from_row(row: &AnyRow) -> Result<Self>;
    fn id(&self) -> i64;
    /// The settings the row holds; `None` when its version turned it off.
    fn settings(&self) -> Option<&Self::Settings>;
    /// What this kind writes beside an activation of row `id` ([`activate`]),
    /// in its transaction, the row locked: `done` is what changed,
    /// `may_read_playzones` whether the key that made the change may.
    fn activated(
        conn: &mut Conn,
        id: i64,
        done: Activated,
        may_read_playzones: bool,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// Implements [`Setting`] for a kind's record, whose `id` and `settings`
/// fields are the row's, with `$activated` as [`Setting::activated`]. Its
/// `from_row` reads the columns both kinds have once ([`common`]) and each
/// of the kind's own fields with the expression given for it (`$row` names
/// the row), all from the kind's `COLUMNS`: the common fields are copied
/// in one place, so a field added to both kinds is read the same way.
macro_rules! setting {
    (
        $record:ident, $owner:expr, $settings:ty, activated = $activated:path,
        |$row:ident| { $($field:ident: $value:expr),* $(,)? }
    ) => {
        impl $crate::launch_settings::Setting for $record {
            const OWNER: $crate::launch_settings::Owner = $owner;
            const COLUMNS: &'static str = COLUMNS;
            type Settings = $settings;
            fn from_row($row: &AnyRow) -> Result<Self> {
                let common = $crate::launch_settings::common($row, $owner)?;
                Ok($record {
                    id: common.id,
                    account_id: common.account_id,
                    template_id: common.template_id,
                    settings: common.settings,
                    config_version: common.config_version,
                    playroom_id: common.playroom_id,
                    has_variables: common.has_variables,
                    paused: common.paused,
                    created_at: common.created_at,
                    updated_at: common.updated_at,
                    $($field: $value),*
                })
            }
            fn id(&self) -> i64 {
                self.id
            }
            fn settings(&self) -> Option<&$settings> {
                self.settings.as_ref()
            }
            fn activated(
                conn: &mut $crate::Conn,
                id: i64,
                done: $crate::launch_settings::Activated,
                may_read_playzones: bool,
            ) -> impl Future<Output = Result<()>> + Send {
                $activated(conn, id, done, may_read_playzones)
            }
        }
    };
}
pub(super) use setting;

/// The columns both kinds' rows have, read once for either record.
#[derive(Debug)]
pub(super) struct Common<S> {
    pub id: i64,
    pub account_id: i64,
    pub template_id: i64,
    pub settings: Option<S>,
    pub config_version: i64,
    pub playroom_id: Option<i64>,
    pub has_variables: bool,
    pub paused: bool,
    pub created_at: time::Timestamp,
    pub updated_at: time::Timestamp,
}

/// Reads [`Common`] from a row of `owner` (its settings are stored as JSON).
pub(super) fn common<S: serde::de::DeserializeOwned>(row: &AnyRow, owner: Owner) -> Result<Common<S>> {
    let config: Option<String> = row.try_get("config")?;
    let settings = config
        .map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|e| Error::Internal(format!("a {}'s stored settings: {e}", owner.what())))?;
    Ok(Common {
        id: row.try_get("id")?,
        account_id: row.try_get("account_id")?,
        template_id: row.try_get("template_id")?,
        settings,
        config_version: row.try_get("config_version")?,
        playroom_id: row.try_get("playroom_id")?,
        has_variables: row.try_get::<Option<String>, _>("variables")?.is_some(),
        paused: is_set(row.try_get("paused")?),
        created_at: time::from_db(&row.try_get::<String, _>("created_at")?)?,
        updated_at: time::from_db(&row.try_get::<String, _>("updated_at")?)?,
    })
}

/// The account's setting `id`; `NotFound` for another account's.
pub async fn get<T: Setting>(store: &Store, account_id: i64, id: i64) -> Result<T> {
    let sql = format!("SELECT {} FROM {} WHERE id = $1 AND account_id = $2", T::COLUMNS, T::OWNER.table());
    let mut conn = store.conn().await?;
    super::shapes::one(&mut *conn, sqlx::query(&sql).bind(id).bind(account_id), T::OWNER.what(), T::from_row).await
}

/// Setting `id` of any account (its loop), `None` when gone.
pub async fn find<T: Setting>(store: &Store, id: i64) -> Result<Option<T>> {
    let mut conn = store.conn().await?;
    find_in(&mut conn, id).await
}

/// [`find`] in the caller's transaction.
pub(super) async fn find_in<T: Setting>(conn: &mut Conn, id: i64) -> Result<Option<T>> {
    let sql = format!("SELECT {} FROM {} WHERE id = $1", T::COLUMNS, T::OWNER.table());
    sqlx::query(&sql).bind(id).fetch_optional(&mut *conn).await?.as_ref().map(T::from_row).transpose()
}

/// The account's settings of one kind, by id.
pub async fn list<T: Setting>(store: &Store, account_id: i64) -> Result<Vec<T>> {
    let sql = format!("SELECT {} FROM {} WHERE account_id = $1 ORDER BY id", T::COLUMNS, T::OWNER.table());
    let mut conn = store.conn().await?;
    super::shapes::all(&mut *conn, sqlx::query(&sql).bind(account_id), T::from_row).await
}

/// Where a row launches before and after an [`activate`], and whether
/// the change starts it (a Playroom given, or unpaused): what each kind
/// resets or records beside it ([`Setting::activated`]).
#[derive(Clone, Copy, Debug)]
pub struct Activated {
    pub before: (Option<i64>, bool),
    pub after: (Option<i64>, bool),
    pub starts: bool,
}

/// Sets where and with what the account's setting `id` of kind `T`
/// launches, and pauses or resumes it ([`activate_in`]), with what the
/// kind writes beside it ([`Setting::activated`]) in the same write
/// transaction, the row locked throughout. `may_read_playzones`: whether
/// the key that makes the change may read Playzones (a trigger that starts
/// takes that right). The setting as the change leaves it; `NotFound` for
/// another account's.
pub async fn activate<T: Setting>(
    store: &Store,
    secrets: &SecretBox,
    (account_id, id): (i64, i64),
    change: Activation,
    may_read_playzones: bool,
) -> Result<T> {
    store
        .in_write(async |conn| {
            let done = activate_in(conn, secrets, T::OWNER, (account_id, id), &change).await?;
            T::activated(conn, id, done, may_read_playzones).await?;
            find_in(conn, id).await?.ok_or(Error::NotFound(T::OWNER.what()))
        })
        .await
}

/// Sets where (`playroom_id`) and with what (`variables`, sealed) row `id`
/// of `owner` launches, and pauses or resumes it, in the caller's
/// transaction. The row is locked first (`shapes::lock_row`): what each
/// kind writes beside it may read the row as this change leaves it. A
/// Playroom must be one of the account's (a field error otherwise); a row
/// of another account is `NotFound`.
async fn activate_in(
    conn: &mut Conn,
    secrets: &SecretBox,
    owner: Owner,
    (account_id, id): (i64, i64),
    change: &Activation,
) -> Result<Activated> {
    super::shapes::lock_row(conn, owner.table(), id).await?;
    let sql = format!("SELECT playroom_id, paused FROM {} WHERE id = $1 AND account_id = $2", owner.table());
    let row = sqlx::query(&sql).bind(id).bind(account_id).fetch_optional(&mut *conn).await?;
    let Some(row) = row else { return Err(Error::NotFound(owner.what())) };
    let before: (Option<i64>, bool) = (row.try_get("playroom_id")?, is_set(row.try_get("paused")?));
    if let Some(Some(playroom)) = change.playroom_id {
        super::playrooms::get(&mut *conn, account_id, playroom).await.map_err(|e| match e {
            Error::NotFound(_) => Error::field("playroom_id", "no Playroom of this account has this id"),
            other => other,
        })?;
    }
    let after = (change.playroom_id.unwrap_or(before.0), change.paused.unwrap_or(before.1));
    let sql = format!("UPDATE {} SET playroom_id = $1, paused = $2, updated_at = $3 WHERE id = $4", owner.table());
    super::write_shapes::update_touched(&mut *conn, sqlx::query(&sql).bind(after.0).bind(flag(after.1)), id).await?;
    if let Some(variables) = &change.variables {
        set_variables_in(conn, secrets, owner, id, variables).await?;
    }
    super::wakes::note(conn, owner.wake(id)).await?;
    Ok(Activated { before, after, starts: change.starts() })
}

/// The row of kind `T` made for template `template_id`, if there is one
/// (to wake its loop after a version changed it).
pub async fn of_template_in<T: Setting>(conn: &mut Conn, template_id: i64) -> Result<Option<i64>> {
    let sql = format!("SELECT id FROM {} WHERE template_id = $1", T::OWNER.table());
    let row = sqlx::query(&sql).bind(template_id).fetch_optional(&mut *conn).await?;
    Ok(row.map(|r| r.try_get::<i64, _>("id")).transpose()?)
}

/// [`of_template_in`] on a connection of its own.
pub async fn of_template<T: Setting>(store: &Store, template_id: i64) -> Result<Option<i64>> {
    let mut conn = store.conn().await?;
    of_template_in::<T>(&mut conn, template_id).await
}

/// Every row's id of kind `T` (its loop's resync).
pub async fn ids<T: Setting>(store: &Store) -> Result<Vec<i64>> {
    let mut conn = store.conn().await?;
    let sql = format!("SELECT id FROM {} ORDER BY id", T::OWNER.table());
    let rows = sqlx::query(&sql).fetch_all(&mut *conn).await?;
    rows.iter().map(|r| Ok(r.try_get::<i64, _>("id")?)).collect()
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

/// Template `template_id`'s row of kind `T`, if it has one, read in the
/// caller's transaction (what a version change compares its settings with).
pub(super) async fn of_template_row_in<T: Setting>(conn: &mut Conn, template_id: i64) -> Result<Option<T>> {
    let sql = format!("SELECT {} FROM {} WHERE template_id = $1", T::COLUMNS, T::OWNER.table());
    sqlx::query(&sql).bind(template_id).fetch_optional(&mut *conn).await?.as_ref().map(T::from_row).transpose()
}

/// A row brought in line with its template's latest version.
#[derive(Debug)]
pub(super) struct Synced<'a> {
    pub account_id: i64,
    pub template_id: i64,
    pub version: i64,
    /// Whether the key writing the version may read Playzones: a trigger
    /// that adopts the account's default Playroom keeps the right only if
    /// both its author and the key that chose the default have it.
    pub author_may_read_playzones: bool,
    /// What else a change of settings resets (`SET` clauses).
    pub reset: &'a str,
    /// The account's quota of enabled rows (`triggers`, `schedules`) is
    /// checked when a version turns one on.
    pub limits: &'a play_model::model::quota::QuotaLimits,
}

/// A template's schedule or trigger row as [`sync_row_in`] finds it.
#[derive(Clone, Copy, Debug)]
struct Existing {
    pub id: i64,
    /// Its settings differ from the latest version's.
    pub changed: bool,
    /// It had settings (was on) before this version.
    pub was_on: bool,
}

/// Makes template `synced.template_id`'s row of kind `T` when the version
/// asks for one (`settings`) and there is none, and replaces its settings
/// when they changed (a row is never deleted here: its history and targets
/// outlive a version without settings). A row the version turns on that
/// has no Playroom takes the account's default ([`adopt_default_in`]).
/// `existing` is the row as the caller read it in this transaction
/// ([`of_template_row_in`]). Its id.
pub(super) async fn sync_row_in<T: Setting>(
    conn: &mut Conn,
    existing: Option<&T>,
    settings: Option<&T::Settings>,
    synced: Synced<'_>,
) -> Result<Option<i64>> {
    let owner = T::OWNER;
    let config = settings.map(|s| serde_json::json!(s).to_string());
    let existing = existing.map(|row| Existing {
        id: row.id(),
        changed: row.settings() != settings,
        was_on: row.settings().is_some(),
    });
    let turned_on = config.is_some() && existing.is_none_or(|e| !e.was_on);
    let (account_id, author_may_read) = (synced.account_id, synced.author_may_read_playzones);
    let id = write_row_in(conn, owner, (config, existing), synced).await?;
    if let (true, Some(id)) = (turned_on, id) {
        adopt_default_in(conn, owner, account_id, id, author_may_read).await?;
    }
    // A version may have changed or switched off the row's settings: its
    // loop looks at once.
    if let Some(id) = id {
        super::wakes::note(conn, owner.wake(id)).await?;
    }
    Ok(id)
}

/// Gives row `id` of `owner`, when it has no Playroom, the account's
/// default one (`accounts.launch_playroom_id`), if any. A trigger takes
/// the right to read Playzones only if both the default's chooser and the
/// version's author have it.
async fn adopt_default_in(
    conn: &mut Conn,
    owner: Owner,
    account_id: i64,
    id: i64,
    author_may_read: bool,
) -> Result<()> {
    let defaults = super::launch_defaults::get_in(conn, account_id).await?;
    let Some(playroom) = defaults.playroom_id else { return Ok(()) };
    let sql = format!("UPDATE {} SET playroom_id = $1 WHERE id = $2 AND playroom_id IS NULL", owner.table());
    let adopted = sqlx::query(&sql).bind(playroom).bind(id).execute(&mut *conn).await?.rows_affected() > 0;
    if adopted && matches!(owner, Owner::Triggers) {
        sqlx::query("UPDATE triggers SET may_read_playzones = $1 WHERE id = $2")
            .bind(flag(defaults.may_read_playzones && author_may_read))
            .bind(id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// [`sync_row_in`]'s write of the row itself: `config` is the settings as
/// stored (JSON; `None`: none), `existing` the row, if any.
async fn write_row_in(
    conn: &mut Conn,
    owner: Owner,
    (config, existing): (Option<String>, Option<Existing>),
    synced: Synced<'_>,
) -> Result<Option<i64>> {
    let now = play_model::time::to_db(&play_model::time::now());
    if config.is_some() {
        let sql = format!("SELECT id FROM {} WHERE template_id = $1 AND config IS NOT NULL", owner.table());
        let on = sqlx::query(&sql).bind(synced.template_id).fetch_optional(&mut *conn).await?;
        if on.is_none() {
            super::quotas::check(conn, synced.account_id, owner.resource(), synced.limits).await?;
        }
    }
    match existing {
        None if config.is_none() => Ok(None),
        None => {
            let sql = format!(
                "INSERT INTO {} (account_id, template_id, config, config_version, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $5) RETURNING id",
                owner.table()
            );
            let row = sqlx::query(&sql)
                .bind(synced.account_id)
                .bind(synced.template_id)
                .bind(&config)
                .bind(synced.version)
                .bind(&now)
                .fetch_one(&mut *conn)
                .await?;
            Ok(Some(row.try_get("id")?))
        }
        Some(Existing { id, changed, .. }) => {
            if changed {
                let sql = format!(
                    "UPDATE {} SET config = $1, config_version = $2, {}, updated_at = $3 WHERE id = $4",
                    owner.table(),
                    synced.reset
                );
                sqlx::query(&sql).bind(&config).bind(synced.version).bind(&now).bind(id).execute(&mut *conn).await?;
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

/// The launch variables of row `id` of kind `T`, opened.
pub async fn variables<T: Setting>(
    store: &Store,
    secrets: &SecretBox,
    id: i64,
) -> Result<BTreeMap<String, serde_json::Value>> {
    let owner = T::OWNER;
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
