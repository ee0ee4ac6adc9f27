//! Per-account quotas: how many of each resource an account may hold.
//!
//! Limits come from configuration (`QuotaLimits`, defaults below) and may be
//! overridden per account in `account_quotas`. A check runs inside the write
//! transaction that creates the object; on PostgreSQL it first locks the
//! account row, so two concurrent creations cannot both pass at the limit
//! (SQLite's `BEGIN IMMEDIATE` serialises writers already).

use sqlx::Row;

use super::Conn;
use crate::{Error, Result};
use play_model::model::quota::{QuotaLimits, Resource};

/// Fails with `QuotaExceeded` when the account already holds its limit of
/// `resource`. Call inside the creating transaction.
pub async fn check(conn: &mut Conn, account_id: i64, resource: Resource, limits: &QuotaLimits) -> Result<()> {
    super::shapes::lock_row(conn, "accounts", account_id).await?;
    let limit = match sqlx::query("SELECT max_count FROM account_quotas WHERE account_id = $1 AND resource = $2")
        .bind(account_id)
        .bind(resource.as_str())
        .fetch_optional(&mut *conn)
        .await?
    {
        Some(row) => row.try_get::<i64, _>("max_count")?,
        None => limits.limit(resource),
    };
    // Counted up to the limit only: whether it is reached is all the check
    // needs, so an account far below a generous limit costs its rows, and
    // one at a small limit no more than the limit.
    let sql = format!("SELECT COUNT(*) AS n FROM ({} LIMIT $2) held", held_sql(resource));
    let count: i64 = sqlx::query(&sql).bind(account_id).bind(limit).fetch_one(&mut *conn).await?.try_get("n")?;
    if count >= limit {
        return Err(Error::QuotaExceeded { resource: resource.as_str().to_owned(), limit });
    }
    Ok(())
}

/// Sets an account's own limit for a resource, overriding the default.
pub async fn set_account_limit(store: &super::Store, account_id: i64, resource: Resource, limit: i64) -> Result<()> {
    let mut tx = store.write().await?;
    sqlx::query("DELETE FROM account_quotas WHERE account_id = $1 AND resource = $2")
        .bind(account_id)
        .bind(resource.as_str())
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO account_quotas (account_id, resource, max_count) VALUES ($1, $2, $3)")
        .bind(account_id)
        .bind(resource.as_str())
        .bind(limit)
        .execute(&mut *tx)
        .await?;
    store.commit(tx).await?;
    Ok(())
}

/// Selects a row for each of the account's (`$1`) objects that use up its
/// quota. A finished job whose host objects are gone holds nothing and
/// does not count.
fn held_sql(resource: Resource) -> &'static str {
    match resource {
        Resource::ApiKeys => "SELECT 1 FROM api_keys WHERE account_id = $1",
        Resource::Playrooms => "SELECT 1 FROM playrooms WHERE account_id = $1 AND deleted_at IS NULL",
        Resource::Playspecs => "SELECT 1 FROM playspecs WHERE account_id = $1",
        Resource::Playgrounds => {
            concat!("SELECT 1 FROM playgrounds g WHERE g.account_id = $1 AND ", super::job_results::holds_host!())
        }
        Resource::ImportTemplates => "SELECT 1 FROM import_templates WHERE account_id = $1",
        Resource::WebhookEndpoints => "SELECT 1 FROM webhook_endpoints WHERE account_id = $1",
        Resource::Playzones => "SELECT 1 FROM playzones WHERE account_id = $1",
        // Names held by creates in flight count (`repository_reservations`).
        Resource::Repositories => {
            "SELECT 1 FROM repositories WHERE account_id = $1 \
             UNION ALL SELECT 1 FROM repository_reservations WHERE account_id = $1"
        }
        Resource::Triggers => "SELECT 1 FROM triggers WHERE account_id = $1 AND config IS NOT NULL",
        Resource::Schedules => "SELECT 1 FROM schedules WHERE account_id = $1 AND config IS NOT NULL",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_and_fall_back_to_defaults() {
        let limits = QuotaLimits::parse("api_keys=3").unwrap();
        assert_eq!(limits.limit(Resource::ApiKeys), 3);
        assert_eq!(QuotaLimits::default().limit(Resource::ApiKeys), 100);
        assert!(QuotaLimits::parse("nope=1").is_err());
        assert!(QuotaLimits::parse("api_keys=-1").is_err());
        assert!(QuotaLimits::parse("api_keys").is_err());
    }
}
