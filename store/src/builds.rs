//! What a Playground's dynamic services are built from (pins) and how each
//! image came to be (build records).
//!
//! Pins are written by the Playground reconciler, fenced by its lease, on
//! the pass that first needs them; a rollout deletes them
//! ([`clear_pins`], in the rollout's own transaction) so the next pass
//! pins the branches' current commits. Build records are append-only,
//! written fenced after a build or a cache hit.

use sqlx::Row;

use super::fence::{Fence, Fenced};
use super::shapes::{all, column};
use super::{Conn, Store, flag, leases};
use crate::Result;
use play_model::build::Pin;
use play_model::build::model::{BuildRecord, NewRecord};
use play_model::secrets::SecretBox;
use play_model::time;

/// The Playground's pins, by service.
pub async fn pins(store: &Store, playground_id: i64) -> Result<Vec<Pin>> {
    let query = sqlx::query(
        "SELECT service, playzone_id, branch, commit_sha, created_branch, env_file FROM playground_sources \
         WHERE playground_id = $1 ORDER BY service",
    )
    .bind(playground_id);
    all(store, query, |r| {
        Ok(columns!(
            r,
            Pin {
                service,
                playzone_id,
                branch,
                commit: r.try_get("commit_sha")?,
                created_branch => flag,
                env_file: serde_json::from_str(&r.try_get::<String, _>("env_file")?)
                    .map_err(|e| crate::Error::Internal(format!("a pin's env file is not JSON: {e}")))?,
            }
        ))
    })
    .await
}

/// Records `pins` (services not pinned yet; an existing pin is kept).
pub async fn pin(store: &Store, fence: Fence<'_>, playground_id: i64, pins: &[Pin]) -> Result<Fenced> {
    leases::write_fenced(store, fence, playground_id, async |tx| {
        let now = time::to_db(&time::now());
        for p in pins {
            sqlx::query(
                "INSERT INTO playground_sources (playground_id, service, playzone_id, branch, commit_sha, \
                 created_branch, pinned_at, env_file) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (playground_id, service) DO NOTHING",
            )
            .bind(playground_id)
            .bind(&p.service)
            .bind(p.playzone_id)
            .bind(&p.branch)
            .bind(&p.commit)
            .bind(flag(p.created_branch))
            .bind(&now)
            .bind(serde_json::to_string(&p.env_file).map_err(|e| crate::Error::Internal(e.to_string()))?)
            .execute(&mut *tx)
            .await?;
        }
        Ok(())
    })
    .await
}

/// Forgets the Playground's pins (a rollout: build from the branches'
/// current commits). Runs in the caller's transaction.
pub async fn clear_pins(conn: &mut Conn, playground_id: i64) -> Result<()> {
    sqlx::query("DELETE FROM playground_sources WHERE playground_id = $1")
        .bind(playground_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Appends a record, fenced by the Playground reconciler's lease.
pub async fn record(store: &Store, fence: Fence<'_>, playground_id: i64, record: &NewRecord) -> Result<Fenced> {
    leases::write_fenced(store, fence, playground_id, async |tx| {
        sqlx::query(
            "INSERT INTO build_records (playground_id, service, commit_sha, image, cache_hit, succeeded, \
             duration_ms, log_tail, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(playground_id)
        .bind(&record.service)
        .bind(&record.commit)
        .bind(&record.image)
        .bind(flag(record.cache_hit))
        .bind(flag(record.succeeded))
        .bind(record.duration_ms)
        .bind(&record.log_tail)
        .bind(time::to_db(&time::now()))
        .execute(&mut *tx)
        .await?;
        Ok(())
    })
    .await
}

/// The Playground's build records, oldest first.
pub async fn records(store: &Store, playground_id: i64) -> Result<Vec<BuildRecord>> {
    let query = sqlx::query(
        "SELECT id, service, commit_sha, image, cache_hit, succeeded, duration_ms, log_tail, created_at \
         FROM build_records WHERE playground_id = $1 ORDER BY id",
    )
    .bind(playground_id);
    all(store, query, |r| {
        Ok(columns!(
            r,
            BuildRecord {
                id,
                service,
                commit: r.try_get("commit_sha")?,
                image,
                cache_hit => flag,
                succeeded => flag,
                duration_ms,
                log_tail,
                created_at => time,
            }
        ))
    })
    .await
}

/// The Playground's pins, the URLs of the Playzones they name (of the
/// Playground's account) and, when an env file asks for any, its
/// generated values (opened with `secrets`): what its builds and their
/// environments are made from.
pub async fn sources(
    store: &Store,
    secrets: &SecretBox,
    account_id: i64,
    playground_id: i64,
) -> Result<play_model::build::Sources> {
    let pins = pins(store, playground_id).await?;
    let mut urls = std::collections::BTreeMap::new();
    for pin in &pins {
        if urls.contains_key(&pin.playzone_id) {
            continue;
        }
        let row = sqlx::query("SELECT scm_url FROM playzones WHERE id = $1 AND account_id = $2")
            .bind(pin.playzone_id)
            .bind(account_id)
            .fetch_optional(store.pool())
            .await?;
        if let Some(row) = row {
            urls.insert(pin.playzone_id, row.try_get("scm_url")?);
        }
    }
    let generated = if play_model::build::secret_lengths(&pins).is_empty() {
        Default::default()
    } else {
        super::generated_env::values(store, secrets, playground_id).await?
    };
    Ok(play_model::build::Sources { pins, urls, generated, image_key: secrets.image_key() })
}

/// The pinned sources (`ps`) whose branch (`pb`) the Playzone's index now
/// holds at another commit: the one definition of "outdated", shared with
/// the Playground detail's single read (`playground_detail::get_for_detail`).
/// A pull request's pin (`pull/<n>/head`) is compared with its head in the
/// pull request index; the Playzone sync never indexes a branch of that
/// name, so a pin matches one row at most.
pub(crate) const OUTDATED_SOURCES: &str = "FROM playground_sources ps \
     JOIN (SELECT playzone_id, name, commit_sha FROM playzone_branches \
           UNION ALL SELECT playzone_id, 'pull/' || CAST(number AS TEXT) || '/head' AS name, head_sha AS commit_sha \
           FROM playzone_pulls) pb ON pb.playzone_id = ps.playzone_id AND pb.name = ps.branch \
     WHERE pb.commit_sha <> ps.commit_sha";

/// The Playground's built services whose branch the Playzone's index now
/// holds at another commit than the pinned one (what `needs_rollout`
/// says), by name.
pub async fn outdated(store: &Store, playground_id: i64) -> Result<Vec<String>> {
    let sql = format!("SELECT ps.service {OUTDATED_SOURCES} AND ps.playground_id = $1 ORDER BY ps.service");
    column(store, sqlx::query(&sql).bind(playground_id), "service").await
}
