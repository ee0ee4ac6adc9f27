//! Triggers (issue #30; the rules are `play_model::trigger`, the loop
//! `play_reconcilers::trigger`, the targets `store::trigger_targets`).
//!
//! Invariants:
//! - one trigger per template ([`sync_in`] runs in every transaction that
//!   changes the template's versions): its settings are those of the
//!   latest version, or none when that version has no enabled trigger;
//!   its targets and their Playgrounds outlive a version change (a pass
//!   converges them to the new settings);
//! - launch variables are sealed, never shown, and never in events.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::launch_settings::{self, Activated, Owner};
use super::{Conn, Store, flag, is_set};
use crate::Result;
use play_model::compose::svc;
use play_model::model::trigger::{Authored, Trigger, TriggerSettings};
use play_model::time;
use play_model::trigger::DEFAULT_MAX_PLAYGROUNDS;

const COLUMNS: &str = "id, account_id, template_id, config, config_version, playroom_id, variables, paused, problem, \
                       playzone_id, may_read_playzones, last_pass_at, created_at, updated_at";

launch_settings::setting!(Trigger, Owner::Triggers, TriggerSettings, activated = take_right_in, |row| {
    problem: row.try_get("problem")?,
    playzone_id: row.try_get("playzone_id")?,
    may_read_playzones: is_set(row.try_get("may_read_playzones")?),
    last_pass_at: time::opt_from_db(row.try_get("last_pass_at")?)?,
});

/// The settings `body`'s `svc.trigger_config` asks for, when enabled (the
/// body was validated when its version was made).
fn settings_of(body: &str) -> Option<TriggerSettings> {
    let info = svc::validate_template(body).ok()?;
    let config = info.trigger_config.filter(|c| c.enabled)?;
    Some(TriggerSettings {
        event_type: config.event_type.clone().unwrap_or_else(|| "push".into()),
        repo_url: config.repo_url.clone().map(|u| u.trim_end_matches('/').to_owned()),
        branch: config.branch.clone(),
        allow_forks: config.allow_forks,
        max_playgrounds: config.max_playgrounds.unwrap_or(DEFAULT_MAX_PLAYGROUNDS),
        prop_id: config.prop_id,
        marquee_id: config.marquee_id,
    })
}

/// What template `template_id` builds now, and whether the key about to
/// change its versions may read Playzones: read in the same transaction
/// before the change, for [`sync_in`].
pub async fn authored_in(
    conn: &mut Conn,
    account_id: i64,
    template_id: i64,
    author_may_read_playzones: bool,
) -> Result<Authored> {
    let previous_body = launch_settings::latest_body_in(conn, account_id, template_id).await?.map(|(_, b)| b);
    Ok(Authored { previous_body, author_may_read_playzones })
}

/// Brings template `template_id`'s trigger in line with its latest
/// version, in the caller's transaction: made when that version has an
/// enabled trigger, its settings replaced, or switched off (its targets
/// stay: the next pass converges them). Its id, if it has one.
///
/// A change of the repository, the branch pattern or the Compose file
/// (the template's body) by a key without `playzones:read` (`authored`)
/// takes back what the key that started the trigger was allowed: the
/// trigger waits for a start by a key that may read (issue #49, item 3:
/// else a version, which needs only `import_templates:write`, points a
/// started pull-request trigger at another private repository of the
/// installation and has it built into an image its author chose).
pub async fn sync_in(
    conn: &mut Conn,
    account_id: i64,
    template_id: i64,
    limits: &play_model::model::quota::QuotaLimits,
    authored: Option<Authored>,
) -> Result<Option<i64>> {
    let (settings, version, body) = match launch_settings::latest_body_in(&mut *conn, account_id, template_id).await? {
        Some((version, body)) => (settings_of(&body), version, Some(body)),
        None => (None, 0, None),
    };
    let existing = launch_settings::of_template_row_in::<Trigger>(&mut *conn, template_id).await?;
    if let (Some(row), Some(authored)) = (&existing, &authored)
        && row.may_read_playzones
        && !authored.author_may_read_playzones
        && redirects(row.settings.as_ref(), settings.as_ref(), authored.previous_body.as_deref(), body.as_deref())
    {
        sqlx::query("UPDATE triggers SET may_read_playzones = 0 WHERE id = $1")
            .bind(row.id)
            .execute(&mut *conn)
            .await?;
    }
    let synced = launch_settings::Synced {
        account_id,
        template_id,
        version,
        author_may_read_playzones: authored.as_ref().is_some_and(|a| a.author_may_read_playzones),
        reset: "problem = NULL, playzone_id = NULL",
        limits,
    };
    launch_settings::sync_row_in(conn, existing.as_ref(), settings.as_ref(), synced).await
}

/// Whether a change of the latest version changes what the trigger
/// builds: its repository, its branch pattern, or the Compose file.
fn redirects(
    before: Option<&TriggerSettings>,
    after: Option<&TriggerSettings>,
    previous_body: Option<&str>,
    body: Option<&str>,
) -> bool {
    let target = |s: Option<&TriggerSettings>| s.map(|s| (s.repo_url.clone(), s.branch.clone()));
    after.is_some() && (target(before) != target(after) || previous_body != body)
}

/// Beside an activation ([`launch_settings::activate`]): a change that
/// starts the trigger gives it the right to read Playzones of the key that
/// made it, or takes it back. A paused trigger keeps its Playgrounds as
/// they are.
async fn take_right_in(conn: &mut Conn, id: i64, done: Activated, may_read_playzones: bool) -> Result<()> {
    // The row is locked since the activation: a change of the template's
    // version that clears `may_read_playzones` (`sync_in`) comes before
    // (and is kept) or after.
    if done.starts {
        sqlx::query("UPDATE triggers SET may_read_playzones = $1 WHERE id = $2")
            .bind(flag(may_read_playzones))
            .bind(id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Records what a pass found: the Playzone it follows and what is in its
/// way (`None`: nothing).
pub async fn record_pass(store: &Store, id: i64, playzone_id: Option<i64>, problem: Option<&str>) -> Result<()> {
    sqlx::query("UPDATE triggers SET playzone_id = $1, problem = $2, last_pass_at = $3 WHERE id = $4")
        .bind(playzone_id)
        .bind(problem)
        .bind(time::to_db(&time::now()))
        .bind(id)
        .execute(store.pool())
        .await?;
    Ok(())
}

#[cfg(test)]
#[path = "triggers_tests.rs"]
pub(crate) mod tests;
