//! The targets of triggers: one row per (trigger, ref) with the
//! Playground the trigger keeps for it (issue #30; see `store::triggers`).
//!
//! Invariants:
//! - one target per (trigger, ref kind, ref name), by a unique index;
//! - a launch is announced before it is made ([`begin_launch`] bumps the
//!   target's generation and clears its Playground), and the launch's
//!   Playspec is named after the target and that generation
//!   ([`launch_name`]): a pass that stopped between the launch and
//!   [`launched`] finds the Playground again by that name instead of
//!   launching a second one;
//! - a Playground the trigger destroys is destroyed in the transaction
//!   that marks its target `gone`;
//! - each change the trigger makes is a `trigger.fired` event with the
//!   trigger, template, ref, commit and Playground.

use std::collections::BTreeMap;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::shapes::{all, one};
use super::write_shapes::update_touched;
use super::{Conn, Store, events};
use crate::{Error, Result};
use play_model::model::event::{Actor, NewEvent};
use play_model::model::trigger::{Reported, Target, TargetStatus, Trigger};
use play_model::playground::model::Origin;
use play_model::time;

const COLUMNS: &str = "id, trigger_id, ref_kind, ref_name, status, reason, playground_id, commit_sha, generation, \
                       created_at, updated_at";

fn from_row(row: &AnyRow) -> Result<Target> {
    Ok(Target {
        id: row.try_get("id")?,
        trigger_id: row.try_get("trigger_id")?,
        ref_kind: row.try_get("ref_kind")?,
        ref_name: row.try_get("ref_name")?,
        status: row.try_get::<String, _>("status")?.parse().map_err(Error::Internal)?,
        reason: row.try_get("reason")?,
        playground_id: row.try_get("playground_id")?,
        commit_sha: row.try_get("commit_sha")?,
        generation: row.try_get("generation")?,
        created_at: time::from_db(&row.try_get::<String, _>("created_at")?)?,
        updated_at: time::from_db(&row.try_get::<String, _>("updated_at")?)?,
    })
}

/// The Playspec name of `target`'s launch at `generation`.
pub fn launch_name(target: &Target) -> String {
    format!("trigger-{}-target-{}-{}", target.trigger_id, target.id, target.generation)
}

/// The trigger's targets, in ref order.
pub async fn list(store: &Store, trigger_id: i64) -> Result<Vec<Target>> {
    let sql = format!("SELECT {COLUMNS} FROM trigger_targets WHERE trigger_id = $1 ORDER BY ref_kind, ref_name");
    let mut conn = store.conn().await?;
    all(&mut *conn, sqlx::query(&sql).bind(trigger_id), from_row).await
}

/// The trigger that keeps Playground `playground_id`, if one does (the
/// Playground's detail shows it; its one-read path joins the same row).
pub async fn origin_of(store: &Store, playground_id: i64) -> Result<Option<Origin>> {
    let sql = format!("SELECT {COLUMNS} FROM trigger_targets WHERE playground_id = $1");
    let mut conn = store.conn().await?;
    let target = sqlx::query(&sql).bind(playground_id).fetch_optional(&mut *conn).await?.as_ref().map(from_row);
    Ok(target.transpose()?.map(|t| Origin {
        trigger_id: t.trigger_id,
        ref_kind: t.ref_kind,
        ref_name: t.ref_name,
        commit: t.commit_sha,
    }))
}

async fn get_in(conn: &mut Conn, id: i64) -> Result<Target> {
    let sql = format!("SELECT {COLUMNS} FROM trigger_targets WHERE id = $1");
    one(&mut *conn, sqlx::query(&sql).bind(id), "trigger target", from_row).await
}

async fn fired_in(
    conn: &mut Conn,
    trigger: &Trigger,
    target: &Target,
    action: &str,
    commit: Option<&str>,
    urls: &BTreeMap<String, String>,
) -> Result<()> {
    let mut metadata = serde_json::json!({
        "trigger_id": trigger.id,
        "template_id": trigger.template_id,
        "action": action,
        "ref_kind": target.ref_kind,
        "commit": commit,
        "playground_id": target.playground_id,
        "reason": target.reason,
    });
    // `branch` (or `pull_request`, its number): the ref, under its kind's
    // name.
    metadata[target.ref_kind.as_str()] = match target.ref_name.parse::<u64>() {
        Ok(number) if target.ref_kind == "pull_request" => serde_json::json!(number),
        _ => serde_json::json!(target.ref_name),
    };
    if !urls.is_empty() {
        // Where the Playground is reached (service -> URL).
        metadata["urls"] = serde_json::json!(urls);
    }
    let event = NewEvent::new(trigger.account_id, "trigger", trigger.id, "fired").actor(Actor::System);
    events::record(conn, event.metadata(metadata)).await.map(|_| ())
}

/// Announces a launch for `ref_name` at `commit`: the target (made if
/// new) is `live` with no Playground and its next generation. The target
/// as it now is; its [`launch_name`] names the launch.
pub async fn begin_launch(
    store: &Store,
    trigger_id: i64,
    ref_kind: &str,
    ref_name: &str,
    commit: &str,
) -> Result<Target> {
    store
        .in_write(async |conn| {
            let now = time::to_db(&time::now());
            let row = sqlx::query(
                "INSERT INTO trigger_targets (trigger_id, ref_kind, ref_name, status, commit_sha, generation, \
                 created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 1, $6, $6) \
                 ON CONFLICT (trigger_id, ref_kind, ref_name) DO UPDATE SET status = $4, reason = NULL, \
                 playground_id = NULL, commit_sha = $5, generation = trigger_targets.generation + 1, updated_at = $6 \
                 RETURNING id",
            )
            .bind(trigger_id)
            .bind(ref_kind)
            .bind(ref_name)
            .bind(TargetStatus::Live.as_str())
            .bind(commit)
            .bind(&now)
            .fetch_one(&mut *conn)
            .await?;
            get_in(conn, row.try_get("id")?).await
        })
        .await
}

/// In the launch's transaction: records Playground `playground_id` on
/// target `id` if the target is still live at `generation`; whether it
/// was (else the launch must not commit).
pub async fn claim_in(conn: &mut Conn, id: i64, generation: i64, playground_id: i64) -> Result<bool> {
    let done =
        sqlx::query("UPDATE trigger_targets SET playground_id = $1 WHERE id = $2 AND generation = $3 AND status = $4")
            .bind(playground_id)
            .bind(id)
            .bind(generation)
            .bind(TargetStatus::Live.as_str())
            .execute(&mut *conn)
            .await?;
    Ok(done.rows_affected() == 1)
}

/// Records that `target`'s launch made Playground `playground_id`, if the
/// target is still at the launch's generation.
pub async fn launched(
    store: &Store,
    trigger: &Trigger,
    target: &Target,
    playground_id: i64,
    urls: &BTreeMap<String, String>,
) -> Result<()> {
    store
        .in_write(async |conn| {
            let done = sqlx::query(
                "UPDATE trigger_targets SET playground_id = $1, updated_at = $2 WHERE id = $3 AND generation = $4 \
                 AND status = $5",
            )
            .bind(playground_id)
            .bind(time::to_db(&time::now()))
            .bind(target.id)
            .bind(target.generation)
            .bind(TargetStatus::Live.as_str())
            .execute(&mut *conn)
            .await?;
            if done.rows_affected() == 1 {
                let now = get_in(conn, target.id).await?;
                fired_in(conn, trigger, &now, "launched", now.commit_sha.as_deref(), urls).await?;
            }
            Ok(())
        })
        .await
}

/// Records that `target`'s Playground was rolled out for `commit`.
pub async fn rolled_out(
    store: &Store,
    trigger: &Trigger,
    target: &Target,
    commit: &str,
    urls: &BTreeMap<String, String>,
) -> Result<()> {
    store
        .in_write(async |conn| {
            sqlx::query("UPDATE trigger_targets SET commit_sha = $1, updated_at = $2 WHERE id = $3")
                .bind(commit)
                .bind(time::to_db(&time::now()))
                .bind(target.id)
                .execute(&mut *conn)
                .await?;
            let now = get_in(conn, target.id).await?;
            fired_in(conn, trigger, &now, "rolled_out", Some(commit), urls).await
        })
        .await
}

/// Destroys `target`'s Playground (if still there) and marks the target
/// `gone` with `reason`, in one transaction. The Playground's id, to wake.
pub async fn destroy(store: &Store, trigger: &Trigger, target: &Target, reason: &str) -> Result<Option<i64>> {
    store
        .in_write(async |conn| {
            let mut destroyed = None;
            if let Some(playground) = target.playground_id {
                match crate::playgrounds::request_destroy_in(conn, trigger.account_id, playground, Actor::System).await
                {
                    Ok(p) => destroyed = Some(p.id),
                    Err(Error::NotFound(_) | Error::Conflict(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            set_status_in(conn, target.id, TargetStatus::Gone, Some(reason)).await?;
            let now = get_in(conn, target.id).await?;
            fired_in(conn, trigger, &now, "destroyed", now.commit_sha.as_deref(), &BTreeMap::new()).await?;
            Ok(destroyed)
        })
        .await
}

/// Destroys the live Playgrounds of template `template_id`'s trigger, in
/// the caller's transaction (the template is being deleted, and its
/// trigger and targets with it). Their ids, to wake.
pub async fn destroy_for_template_in(conn: &mut Conn, account_id: i64, template_id: i64) -> Result<Vec<i64>> {
    let rows = sqlx::query(
        "SELECT tt.playground_id FROM trigger_targets tt JOIN triggers t ON t.id = tt.trigger_id \
         WHERE t.template_id = $1 AND t.account_id = $2 AND tt.status = $3 AND tt.playground_id IS NOT NULL",
    )
    .bind(template_id)
    .bind(account_id)
    .bind(TargetStatus::Live.as_str())
    .fetch_all(&mut *conn)
    .await?;
    let mut destroyed = Vec::new();
    for row in &rows {
        let playground: i64 = row.try_get("playground_id")?;
        match crate::playgrounds::request_destroy_in(conn, account_id, playground, Actor::System).await {
            Ok(p) => destroyed.push(p.id),
            Err(Error::NotFound(_) | Error::Conflict(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(destroyed)
}

/// Marks `target` stopped: its Playground was destroyed outside the
/// trigger.
pub async fn stopped(store: &Store, target: &Target, reason: &str) -> Result<()> {
    store.in_write(async |conn| set_status_in(conn, target.id, TargetStatus::Stopped, Some(reason)).await).await
}

/// Records that `ref_name` at `commit` was not launched, and why; a
/// `trigger.fired` event only when the refusal is new (not at every pass).
pub async fn refuse(
    store: &Store,
    trigger: &Trigger,
    ref_kind: &str,
    ref_name: &str,
    commit: &str,
    reason: &str,
) -> Result<()> {
    store
        .in_write(async |conn| {
            let now = time::to_db(&time::now());
            let row = sqlx::query(
                "INSERT INTO trigger_targets (trigger_id, ref_kind, ref_name, status, reason, commit_sha, created_at, \
                 updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
                 ON CONFLICT (trigger_id, ref_kind, ref_name) DO UPDATE SET status = $4, reason = $5, \
                 commit_sha = $6, updated_at = $7 WHERE trigger_targets.status <> $4 \
                 OR trigger_targets.commit_sha IS NULL OR trigger_targets.commit_sha <> $6 RETURNING id",
            )
            .bind(trigger.id)
            .bind(ref_kind)
            .bind(ref_name)
            .bind(TargetStatus::Refused.as_str())
            .bind(reason)
            .bind(commit)
            .bind(&now)
            .fetch_optional(&mut *conn)
            .await?;
            if let Some(row) = row {
                let target = get_in(conn, row.try_get("id")?).await?;
                fired_in(conn, trigger, &target, "refused", Some(commit), &BTreeMap::new()).await?;
            }
            Ok(())
        })
        .await
}

async fn set_status_in(conn: &mut Conn, id: i64, status: TargetStatus, reason: Option<&str>) -> Result<()> {
    let update = sqlx::query("UPDATE trigger_targets SET status = $1, reason = $2, updated_at = $3 WHERE id = $4");
    update_touched(conn, update.bind(status.as_str()).bind(reason), id).await
}

/// What target `id` last reported.
pub async fn reported(store: &Store, id: i64) -> Result<Reported> {
    let query =
        sqlx::query("SELECT comment_id, deployment_id, deployment_sha, reported FROM trigger_targets WHERE id = $1")
            .bind(id);
    one(store, query, "trigger target", |row| {
        Ok(Reported {
            comment_id: row.try_get("comment_id")?,
            deployment_id: row.try_get("deployment_id")?,
            deployment_sha: row.try_get("deployment_sha")?,
            digest: row.try_get("reported")?,
        })
    })
    .await
}

/// Records what target `id` reported.
pub async fn record_report(store: &Store, id: i64, reported: &Reported) -> Result<()> {
    sqlx::query(
        "UPDATE trigger_targets SET comment_id = $1, deployment_id = $2, deployment_sha = $3, reported = $4 \
         WHERE id = $5",
    )
    .bind(&reported.comment_id)
    .bind(&reported.deployment_id)
    .bind(&reported.deployment_sha)
    .bind(&reported.digest)
    .bind(id)
    .execute(store.pool())
    .await?;
    Ok(())
}

#[cfg(test)]
#[path = "trigger_targets_tests.rs"]
mod tests;
