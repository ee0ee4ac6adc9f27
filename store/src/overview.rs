//! What the dashboard's overview draws (issue #31): how long launches took
//! to run, and how webhook deliveries went, over a recent window. Every
//! read is bounded ([`MAX_ROWS`]) and scoped to one account, so an account
//! with a long history costs the page no more than a busy day.

use sqlx::Row;

use super::Store;
use crate::Result;
use play_model::model::overview::Launch;
use play_model::time::{self, Timestamp};

/// The most rows one figure reads.
pub const MAX_ROWS: i64 = 10_000;

/// The account's Playgrounds made since `since`, oldest first, each with
/// the time to its first `running` (read from its events).
pub async fn launches(store: &Store, account_id: i64, since: Timestamp) -> Result<Vec<Launch>> {
    let rows = super::On::Store(store)
        .read(async |conn| {
            Ok(sqlx::query(
                "SELECT entity_id, action, occurred_at FROM events \
                 WHERE account_id = $1 AND entity_type = 'playground' AND occurred_at >= $2 \
                 AND (action = 'created' OR (action = 'status.changed' AND metadata LIKE '%\"to\":\"running\"%')) \
                 ORDER BY id DESC LIMIT $3",
            )
            .bind(account_id)
            .bind(time::to_db(&since))
            .bind(MAX_ROWS)
            .fetch_all(conn)
            .await?)
        })
        .await?;
    let mut launches: Vec<Launch> = Vec::new();
    let mut running: std::collections::HashMap<i64, Timestamp> = std::collections::HashMap::new();
    // Newest first: the earliest `running` of each Playground wins.
    for row in &rows {
        let id: i64 = row.try_get("entity_id")?;
        let at = super::time_column(row, "occurred_at")?;
        match row.try_get::<String, _>("action")?.as_str() {
            "created" => launches.push(Launch { playground_id: id, created_at: at, to_running: None }),
            _ => {
                running.insert(id, at);
            }
        }
    }
    for launch in &mut launches {
        launch.to_running = running.get(&launch.playground_id).map(|at| *at - launch.created_at);
    }
    launches.reverse();
    Ok(launches)
}

/// Webhook deliveries of the account's endpoints made since `since`, per
/// status (`succeeded`, `failed`, `pending`, `abandoned`).
pub async fn deliveries(store: &Store, account_id: i64, since: Timestamp) -> Result<Vec<(String, i64)>> {
    let rows = super::On::Store(store)
        .read(async |conn| {
            Ok(sqlx::query(
                "SELECT d.status AS status, COUNT(*) AS n FROM webhook_deliveries d \
                 JOIN webhook_endpoints e ON e.id = d.endpoint_id \
                 WHERE e.account_id = $1 AND d.created_at >= $2 GROUP BY d.status ORDER BY d.status",
            )
            .bind(account_id)
            .bind(time::to_db(&since))
            .fetch_all(conn)
            .await?)
        })
        .await?;
    rows.iter().map(|r| Ok((r.try_get::<String, _>("status")?, r.try_get::<i64, _>("n")?))).collect()
}

#[cfg(test)]
#[path = "overview_tests.rs"]
mod tests;
