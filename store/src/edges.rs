//! What the edge reconciler last did on each Playroom (`playroom_edges`)
//! and the routes it decided (`edge_routes`: host claims, whether each
//! route is live, which Playground holds a host a route lost).
//!
//! Invariants:
//! - Only the edge reconciler writes here, in fenced transactions
//!   ([`record_pass`]): a replica that lost a Playroom's lease writes
//!   nothing.
//! - `edge_routes` holds exactly the routes of the last pass that got as
//!   far as deciding them; a route's `claimed_at` is kept while its host is
//!   unchanged (see `play_model::edge::claims`).
//! - A route is `live` when the config the edge last accepted serves it.
//!   When the edge refuses a config, the routes it served stay live (Caddy
//!   keeps the last good config) and new ones are not.
//! - Events: `playground.route.conflict` when a route newly loses its host,
//!   `playroom.edge.restored` when the edge container had to be made again,
//!   `playroom.edge.failed` when an error first appears.

use std::collections::BTreeMap;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::events;
use super::fence::{Fence, Fenced};
use super::shapes::{all, coalesced};
use super::{Conn, Store, flag, leases};
use crate::Result;
use play_model::edge::claims::Claim;
use play_model::edge::model::{EdgeStatus, PassOutcome, RouteRow};
use play_model::model::event::NewEvent;
use play_model::time;

/// The name edge leases are taken under (the edge reconciler's `NAME`).
pub const RECONCILER: &str = "edge";

/// The edge of Playroom `playroom_id`, `None` before its first pass.
/// Concurrent calls share a query that started after each of them
/// ([`super::coalesce`]).
pub async fn status(store: &Store, playroom_id: i64) -> Result<Option<EdgeStatus>> {
    coalesced(store, |reads| &reads.edge_status, playroom_id, |conn| Box::pin(edge_row(conn, playroom_id))).await
}

const ROUTE_COLUMNS: &str = "playground_id, service, playroom_id, host, claimed_at, live, conflict_with, upstream";

fn route_row(row: &AnyRow) -> Result<RouteRow> {
    Ok(columns!(
        row,
        RouteRow {
            claim: columns!(
                row,
                Claim { playground_id, service, host, claimed_at => time }
            ),
            playroom_id,
            live => flag,
            conflict_with,
            upstream,
        }
    ))
}

/// The routes decided on Playroom `playroom_id`.
pub async fn routes_on(conn: &mut Conn, playroom_id: i64) -> Result<Vec<RouteRow>> {
    let sql = format!("SELECT {ROUTE_COLUMNS} FROM edge_routes WHERE playroom_id = $1 ORDER BY playground_id, service");
    all(conn, sqlx::query(&sql).bind(playroom_id), route_row).await
}

/// The routes decided for Playground `playground_id`, by service;
/// concurrent calls share a query that started after each of them
/// ([`super::coalesce`]).
pub async fn routes_of(store: &Store, playground_id: i64) -> Result<BTreeMap<String, RouteRow>> {
    coalesced(store, |reads| &reads.edge_routes, playground_id, |conn| Box::pin(read_routes_of(conn, playground_id)))
        .await
}

async fn read_routes_of(conn: &mut Conn, playground_id: i64) -> Result<BTreeMap<String, RouteRow>> {
    let sql = format!("SELECT {ROUTE_COLUMNS} FROM edge_routes WHERE playground_id = $1");
    let routes = all(conn, sqlx::query(&sql).bind(playground_id), route_row).await?;
    Ok(routes.into_iter().map(|r| (r.claim.service.clone(), r)).collect())
}

/// Records a pass on Playroom `playroom_id` of account `account_id`,
/// fenced by the pass's lease.
pub async fn record_pass(
    store: &Store,
    fence: Fence<'_>,
    account_id: i64,
    playroom_id: i64,
    outcome: &PassOutcome,
) -> Result<Fenced> {
    let written = leases::write_fenced(store, fence, playroom_id, async |tx| {
        let mut changed = Changed::default();
        let now = time::now();
        let now_db = time::to_db(&now);
        let before: BTreeMap<(i64, String), RouteRow> = routes_on(tx, playroom_id)
            .await?
            .into_iter()
            .map(|r| ((r.claim.playground_id, r.claim.service.clone()), r))
            .collect();
        sqlx::query("DELETE FROM edge_routes WHERE playroom_id = $1").bind(playroom_id).execute(&mut *tx).await?;
        for decision in &outcome.decisions {
            let claim = &decision.claim;
            let previous = before.get(&(claim.playground_id, claim.service.clone()));
            let key = (claim.playground_id, claim.service.clone());
            let (live, upstream) = match &outcome.applied {
                Some(_) if decision.lost_to.is_none() => (true, outcome.upstreams.get(&key).cloned()),
                Some(_) => (false, None),
                None => match previous {
                    Some(p) if p.live && p.claim.host == claim.host && decision.lost_to.is_none() => {
                        (true, p.upstream.clone())
                    }
                    _ => (false, None),
                },
            };
            // A Playground's routes may have moved here from another Playroom's
            // rows in this table: one row per Playground and service.
            sqlx::query("DELETE FROM edge_routes WHERE playground_id = $1 AND service = $2")
                .bind(claim.playground_id)
                .bind(&claim.service)
                .execute(&mut *tx)
                .await?;
            sqlx::query(&format!("INSERT INTO edge_routes ({ROUTE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"))
                .bind(claim.playground_id)
                .bind(&claim.service)
                .bind(playroom_id)
                .bind(&claim.host)
                .bind(time::to_db(&claim.claimed_at))
                .bind(flag(live))
                .bind(decision.lost_to)
                .bind(upstream.clone())
                .execute(&mut *tx)
                .await?;
            if previous.map(|p| (p.live, &p.upstream, &p.claim.host, p.conflict_with))
                != Some((live, &upstream, &claim.host, decision.lost_to))
            {
                changed.playgrounds.push(claim.playground_id);
            }
            let newly_lost = decision.lost_to.is_some() && previous.and_then(|p| p.conflict_with) != decision.lost_to;
            if let Some(holder) = decision.lost_to.filter(|_| newly_lost) {
                events::record(
                    tx,
                    NewEvent::new(account_id, "playground", claim.playground_id, "route.conflict").metadata(
                        serde_json::json!({"service": claim.service, "host": claim.host, "held_by_playground_id": holder}),
                    ),
                )
                .await?;
            }
        }
        let current = edge_row(tx, playroom_id).await?;
        if let Some(reason) = &outcome.restored {
            events::record(
                tx,
                NewEvent::new(account_id, "playroom", playroom_id, "edge.restored")
                    .metadata(serde_json::json!({"reason": reason})),
            )
            .await?;
        }
        if let Some(error) = &outcome.error
            && current.as_ref().and_then(|c| c.error.as_ref()) != Some(error)
        {
            events::record(
                tx,
                NewEvent::new(account_id, "playroom", playroom_id, "edge.failed")
                    .metadata(serde_json::json!({"error": error})),
            )
            .await?;
        }
        let decided: std::collections::BTreeSet<i64> = outcome.decisions.iter().map(|d| d.claim.playground_id).collect();
        changed.playgrounds.extend(before.keys().map(|(id, _)| *id).filter(|id| !decided.contains(id)));
        changed.all = current.as_ref().and_then(|c| c.error.as_ref()) != outcome.error.as_ref();
        let current = current.unwrap_or_default();
        let (hash, applied_at, container) = match &outcome.applied {
            Some((hash, container)) => {
                let at = if current.config_hash.as_ref() == Some(hash) { current.applied_at } else { Some(now) };
                (Some(hash.clone()), at, Some(container.clone()))
            }
            None => (current.config_hash, current.applied_at, current.container_id),
        };
        let error_at = match &outcome.error {
            Some(e) if current.error.as_ref() == Some(e) => current.error_at,
            Some(_) => Some(now),
            None => None,
        };
        sqlx::query("DELETE FROM playroom_edges WHERE playroom_id = $1").bind(playroom_id).execute(&mut *tx).await?;
        sqlx::query(
            "INSERT INTO playroom_edges (playroom_id, config_hash, applied_at, container_id, error, error_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(playroom_id)
        .bind(hash)
        .bind(applied_at.as_ref().map(time::to_db))
        .bind(container)
        .bind(outcome.error.clone())
        .bind(error_at.as_ref().map(time::to_db))
        .bind(&now_db)
        .execute(&mut *tx)
        .await?;
        Ok(changed)
    })
    .await?;
    Ok(written.map(|changed| changed.retire(store)))
}

/// What an edge write changed of the Playground views that show routes
/// (`store::local_writes`): some Playgrounds' routes, or the edge's error
/// that every Playground of the Playroom shows.
#[derive(Debug, Default)]
struct Changed {
    playgrounds: Vec<i64>,
    all: bool,
}

impl Changed {
    /// Marks what changed, once the write committed.
    fn retire(self, store: &Store) {
        if self.all {
            store.local_writes().mark_all();
        }
        for id in self.playgrounds {
            store.local_writes().mark(id);
        }
    }
}

/// Records that a pass on Playroom `playroom_id` failed before it could
/// decide its routes (the host unreachable, the container not starting):
/// routes and the applied config are left as they are. Fenced like
/// [`record_pass`].
pub async fn record_error(
    store: &Store,
    fence: Fence<'_>,
    account_id: i64,
    playroom_id: i64,
    error: &str,
) -> Result<Fenced> {
    let written = leases::write_fenced(store, fence, playroom_id, async |tx| {
        let current = edge_row(tx, playroom_id).await?;
        if current.as_ref().and_then(|c| c.error.as_deref()) == Some(error) {
            return Ok(Changed::default());
        }
        events::record(
            tx,
            NewEvent::new(account_id, "playroom", playroom_id, "edge.failed")
                .metadata(serde_json::json!({"error": error})),
        )
        .await?;
        let now = time::to_db(&time::now());
        if current.is_some() {
            sqlx::query("UPDATE playroom_edges SET error = $1, error_at = $2, updated_at = $2 WHERE playroom_id = $3")
                .bind(error)
                .bind(&now)
                .bind(playroom_id)
                .execute(&mut *tx)
                .await?;
        } else {
            sqlx::query(
                "INSERT INTO playroom_edges (playroom_id, error, error_at, updated_at) VALUES ($1, $2, $3, $3)",
            )
            .bind(playroom_id)
            .bind(error)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
        }
        Ok(Changed { all: true, ..Changed::default() })
    })
    .await?;
    Ok(written.map(|changed| changed.retire(store)))
}

/// Forgets Playroom `playroom_id`'s edge: it was switched off, or the
/// Playroom is gone. Fenced like [`record_pass`].
pub async fn forget(store: &Store, fence: Fence<'_>, playroom_id: i64) -> Result<Fenced> {
    let written = leases::write_fenced(store, fence, playroom_id, async |tx| {
        sqlx::query("DELETE FROM edge_routes WHERE playroom_id = $1").bind(playroom_id).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM playroom_edges WHERE playroom_id = $1").bind(playroom_id).execute(&mut *tx).await?;
        Ok(Changed { all: true, ..Changed::default() })
    })
    .await?;
    Ok(written.map(|changed| changed.retire(store)))
}

async fn edge_row(conn: &mut Conn, playroom_id: i64) -> Result<Option<EdgeStatus>> {
    let row = sqlx::query(
        "SELECT config_hash, applied_at, container_id, error, error_at FROM playroom_edges WHERE playroom_id = $1",
    )
    .bind(playroom_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    Ok(Some(EdgeStatus {
        config_hash: row.try_get("config_hash")?,
        applied_at: super::opt_time_column(&row, "applied_at")?,
        container_id: row.try_get("container_id")?,
        error: row.try_get("error")?,
        error_at: super::opt_time_column(&row, "error_at")?,
    }))
}
