//! Per-account quotas: how many of each resource an account may hold.
//!
//! Limits come from configuration (`QuotaLimits`, defaults below) and may be
//! overridden per account in `account_quotas`. A check runs inside the write
//! transaction that creates the object; on PostgreSQL it first locks the
//! account row, so two concurrent creations cannot both pass at the limit
//! (SQLite's `BEGIN IMMEDIATE` serialises writers already).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use sqlx::Row;

use super::{Backend, Conn};
use crate::{Error, Result};

/// A countable resource. Each maps to the table holding it; resources are
/// added here as their tables arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    ApiKeys,
    Playrooms,
    Playspecs,
    Playgrounds,
    ImportTemplates,
    WebhookEndpoints,
    Playzones,
}

impl Resource {
    pub const ALL: &'static [Resource] = &[
        Resource::ApiKeys,
        Resource::Playrooms,
        Resource::Playspecs,
        Resource::Playgrounds,
        Resource::ImportTemplates,
        Resource::WebhookEndpoints,
        Resource::Playzones,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Resource::ApiKeys => "api_keys",
            Resource::Playrooms => "playrooms",
            Resource::Playspecs => "playspecs",
            Resource::Playgrounds => "playgrounds",
            Resource::ImportTemplates => "import_templates",
            Resource::WebhookEndpoints => "webhook_endpoints",
            Resource::Playzones => "playzones",
        }
    }

    /// Counts the account's (`$1`) objects that use up its quota. A
    /// finished job whose host objects are gone holds nothing and does not
    /// count.
    fn count_sql(self) -> &'static str {
        match self {
            Resource::ApiKeys => "SELECT COUNT(*) AS n FROM api_keys WHERE account_id = $1",
            Resource::Playrooms => "SELECT COUNT(*) AS n FROM playrooms WHERE account_id = $1 AND deleted_at IS NULL",
            Resource::Playspecs => "SELECT COUNT(*) AS n FROM playspecs WHERE account_id = $1",
            Resource::Playgrounds => concat!(
                "SELECT COUNT(*) AS n FROM playgrounds g WHERE g.account_id = $1 AND ",
                super::job_results::holds_host!()
            ),
            Resource::ImportTemplates => "SELECT COUNT(*) AS n FROM import_templates WHERE account_id = $1",
            Resource::WebhookEndpoints => "SELECT COUNT(*) AS n FROM webhook_endpoints WHERE account_id = $1",
            Resource::Playzones => "SELECT COUNT(*) AS n FROM playzones WHERE account_id = $1",
        }
    }

    pub fn default_limit(self) -> i64 {
        match self {
            Resource::ApiKeys => 100,
            Resource::Playrooms => 20,
            Resource::Playspecs => 200,
            Resource::Playgrounds => 20,
            Resource::ImportTemplates => 100,
            Resource::WebhookEndpoints => 20,
            Resource::Playzones => 100,
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Resource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Resource::ALL.iter().copied().find(|r| r.as_str() == s).ok_or_else(|| format!("unknown quota resource {s:?}"))
    }
}

/// The configured default limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuotaLimits(BTreeMap<Resource, i64>);

impl QuotaLimits {
    pub fn limit(&self, resource: Resource) -> i64 {
        self.0.get(&resource).copied().unwrap_or_else(|| resource.default_limit())
    }

    pub fn set(&mut self, resource: Resource, limit: i64) {
        self.0.insert(resource, limit);
    }

    /// Parses `api_keys=50,playgrounds=10`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut limits = QuotaLimits::default();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item.split_once('=').ok_or_else(|| format!("expected RESOURCE=N, got {item:?}"))?;
            let resource: Resource = name.trim().parse()?;
            let limit: i64 = value.trim().parse().map_err(|_| format!("{name}: {value:?} is not a whole number"))?;
            if limit < 0 {
                return Err(format!("{name}: a limit cannot be negative"));
            }
            limits.set(resource, limit);
        }
        Ok(limits)
    }
}

/// Fails with `QuotaExceeded` when the account already holds its limit of
/// `resource`. Call inside the creating transaction.
pub async fn check(
    conn: &mut Conn,
    backend: Backend,
    account_id: i64,
    resource: Resource,
    limits: &QuotaLimits,
) -> Result<()> {
    if backend == Backend::Postgres {
        sqlx::query("SELECT id FROM accounts WHERE id = $1 FOR UPDATE").bind(account_id).execute(&mut *conn).await?;
    }
    let limit = match sqlx::query("SELECT max_count FROM account_quotas WHERE account_id = $1 AND resource = $2")
        .bind(account_id)
        .bind(resource.as_str())
        .fetch_optional(&mut *conn)
        .await?
    {
        Some(row) => row.try_get::<i64, _>("max_count")?,
        None => limits.limit(resource),
    };
    let count: i64 = sqlx::query(resource.count_sql()).bind(account_id).fetch_one(&mut *conn).await?.try_get("n")?;
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
    tx.commit().await?;
    Ok(())
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
