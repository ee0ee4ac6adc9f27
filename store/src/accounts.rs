//! Accounts and their users. Every API key belongs to a user of an account,
//! and every resource row carries its account.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::shapes::{all, one};
use super::{Conn, OnUnique, Store};
use crate::{Error, Result};
use play_model::model::account::{Account, User};
use play_model::time;

/// The account `play accounts create` makes when none is named, and the one
/// the first-start admin key belongs to.
pub const DEFAULT_ACCOUNT: &str = "default";
/// The user that owns keys created from the command line.
pub const ADMIN_USER: &str = "admin";

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// Creates an account with its admin user.
pub async fn create_account(store: &Store, name: &str) -> Result<(Account, User)> {
    if !valid_name(name) {
        return Err(Error::field("name", "must be 1-64 letters, digits, '-', '_' or '.'"));
    }
    let mut tx = store.write().await?;
    let now = time::now();
    let id: i64 = sqlx::query("INSERT INTO accounts (name, created_at) VALUES ($1, $2) RETURNING id")
        .bind(name)
        .bind(time::to_db(&now))
        .fetch_one(&mut *tx)
        .await
        .on_unique(|| Error::Conflict(format!("account {name:?} exists")))?
        .try_get("id")?;
    let user = insert_user(&mut tx, id, ADMIN_USER).await?;
    store.commit(tx).await?;
    Ok((Account { id, name: name.to_owned(), created_at: now }, user))
}

async fn insert_user(conn: &mut Conn, account_id: i64, name: &str) -> Result<User> {
    let now = time::now();
    let row = sqlx::query("INSERT INTO users (account_id, name, created_at) VALUES ($1, $2, $3) RETURNING id")
        .bind(account_id)
        .bind(name)
        .bind(time::to_db(&now))
        .fetch_one(&mut *conn)
        .await?;
    Ok(User { id: row.try_get("id")?, account_id, name: name.to_owned(), created_at: now })
}

fn account_from_row(row: &AnyRow) -> Result<Account> {
    Ok(columns!(row, Account { id, name, created_at => time }))
}

pub async fn find_account_by_name(store: &Store, name: &str) -> Result<Account> {
    let query = sqlx::query("SELECT id, name, created_at FROM accounts WHERE name = $1").bind(name);
    one(store, query, "account", account_from_row).await
}

/// Switches play's own Git host on or off for account `name` (the
/// operator's per-account setting, used when the host is enabled account
/// by account); the account.
pub async fn set_git_host(store: &Store, name: &str, on: bool) -> Result<Account> {
    let account = find_account_by_name(store, name).await?;
    sqlx::query("UPDATE accounts SET git_host = $1 WHERE id = $2")
        .bind(super::flag(on))
        .bind(account.id)
        .execute(store.pool())
        .await?;
    Ok(account)
}

/// Whether the operator switched play's own Git host on for the account.
pub async fn git_host_enabled(store: &Store, account_id: i64) -> Result<bool> {
    let query = sqlx::query("SELECT git_host FROM accounts WHERE id = $1").bind(account_id);
    let flags = super::shapes::column::<i64>(store, query, "git_host").await?;
    Ok(flags.first().is_some_and(|flag| super::is_set(*flag)))
}

pub async fn list_accounts(store: &Store) -> Result<Vec<Account>> {
    all(store, sqlx::query("SELECT id, name, created_at FROM accounts ORDER BY id"), account_from_row).await
}

/// The account's admin user, created if an older account lacks one.
pub async fn admin_user(store: &Store, account_id: i64) -> Result<User> {
    let mut tx = store.write().await?;
    // Two replicas starting at once both find none: the account's lock
    // makes the second wait and find the first one's user.
    super::shapes::lock_row(&mut tx, "accounts", account_id).await?;
    let row = sqlx::query("SELECT id, name, created_at FROM users WHERE account_id = $1 AND name = $2")
        .bind(account_id)
        .bind(ADMIN_USER)
        .fetch_optional(&mut *tx)
        .await?;
    let user = match row {
        Some(row) => User {
            id: row.try_get("id")?,
            account_id,
            name: row.try_get("name")?,
            created_at: super::time_column(&row, "created_at")?,
        },
        None => insert_user(&mut tx, account_id, ADMIN_USER).await?,
    };
    store.commit(tx).await?;
    Ok(user)
}

/// The named account, created with its admin user when missing.
pub async fn ensure_account(store: &Store, name: &str) -> Result<(Account, User)> {
    match find_account_by_name(store, name).await {
        Ok(account) => {
            let user = admin_user(store, account.id).await?;
            Ok((account, user))
        }
        Err(Error::NotFound(_)) => match create_account(store, name).await {
            // Another process created it between our read and write.
            Err(Error::Conflict(_)) => {
                let account = find_account_by_name(store, name).await?;
                let user = admin_user(store, account.id).await?;
                Ok((account, user))
            }
            other => other,
        },
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    /// Two replicas start at once on an account from before admin users
    /// (PostgreSQL): both found none and both inserted one, and the second
    /// failed on the unique name, so that replica did not start.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn replicas_asking_for_a_missing_admin_user_at_once_share_one() {
        let db = crate::testing::store().await;
        for round in 0..20 {
            let (account, _) = create_account(&db.store, &format!("old-{round}")).await.unwrap();
            sqlx::query("DELETE FROM users WHERE account_id = $1")
                .bind(account.id)
                .execute(db.store.pool())
                .await
                .unwrap();
            let mut asking = tokio::task::JoinSet::new();
            for _ in 0..4 {
                let store = db.store.clone();
                asking.spawn(async move { admin_user(&store, account.id).await });
            }
            let mut ids = std::collections::BTreeSet::new();
            while let Some(done) = asking.join_next().await {
                ids.insert(done.unwrap().unwrap().id);
            }
            assert_eq!(ids.len(), 1, "round {round}: {ids:?}");
        }
    }
}
