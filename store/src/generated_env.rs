//! The values play generates for a Playground's `$$secret(N)`
//! placeholders (a built service's env file, `.env.example` style).
//!
//! Invariants:
//! - one value per Playground and variable name, so two services whose
//!   env files ask for `DB_PASSWORD` get the same password;
//! - a value is made once and kept across rollouts and hard restarts (a
//!   database volume that persists was initialised with it); it is
//!   replaced only when the env file asks for another length;
//! - values are sealed with the installation's secret box, bound to the
//!   Playground and the name, and leave this module only opened for the
//!   desired state: never in a log line, an event or an error;
//! - generation is idempotent under concurrency: a name is inserted with
//!   `ON CONFLICT DO NOTHING` and a length change is a compare-and-set on
//!   the old length, so two passes that race agree on one value.

use std::collections::BTreeMap;

use rand::Rng as _;
use rand::distributions::Alphanumeric;
use sqlx::Row;

use super::Store;
use crate::Result;
use play_model::secrets::SecretBox;
use play_model::time;

fn context(playground_id: i64, name: &str) -> String {
    format!("playground:{playground_id}:generated_env:{name}")
}

/// `length` random letters and digits from the OS's generator: safe in a
/// URL, a shell and a connection string without quoting.
fn generate(length: usize) -> String {
    rand::rngs::OsRng.sample_iter(&Alphanumeric).take(length).map(char::from).collect()
}

/// Makes sure every name of `wanted` (name -> length) has a value of that
/// length for `playground_id`, generating what is missing.
pub async fn ensure(
    store: &Store,
    secrets: &SecretBox,
    playground_id: i64,
    wanted: &BTreeMap<String, usize>,
) -> Result<()> {
    if wanted.is_empty() {
        return Ok(());
    }
    let have = lengths(store, playground_id).await?;
    let now = time::to_db(&time::now());
    for (name, &length) in wanted {
        let sealed = || secrets.seal(&generate(length), &context(playground_id, name));
        let stored = i64::try_from(length).unwrap_or(i64::MAX);
        match have.get(name) {
            Some(&old) if old == stored => {}
            Some(&old) => {
                sqlx::query(
                    "UPDATE playground_generated_env SET length = $1, sealed_value = $2, created_at = $3 \
                     WHERE playground_id = $4 AND name = $5 AND length = $6",
                )
                .bind(stored)
                .bind(sealed()?)
                .bind(&now)
                .bind(playground_id)
                .bind(name)
                .bind(old)
                .execute(store.pool())
                .await?;
            }
            None => {
                sqlx::query(
                    "INSERT INTO playground_generated_env (playground_id, name, length, sealed_value, created_at) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (playground_id, name) DO NOTHING",
                )
                .bind(playground_id)
                .bind(name)
                .bind(stored)
                .bind(sealed()?)
                .bind(&now)
                .execute(store.pool())
                .await?;
            }
        }
    }
    Ok(())
}

async fn lengths(store: &Store, playground_id: i64) -> Result<BTreeMap<String, i64>> {
    let rows = sqlx::query("SELECT name, length FROM playground_generated_env WHERE playground_id = $1")
        .bind(playground_id)
        .fetch_all(store.pool())
        .await?;
    rows.iter().map(|r| Ok((r.try_get("name")?, r.try_get("length")?))).collect()
}

/// The Playground's generated values, opened, by name.
pub async fn values(store: &Store, secrets: &SecretBox, playground_id: i64) -> Result<BTreeMap<String, String>> {
    let rows = sqlx::query("SELECT name, sealed_value FROM playground_generated_env WHERE playground_id = $1")
        .bind(playground_id)
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|r| {
            let name: String = r.try_get("name")?;
            let value = secrets.open(&r.try_get::<String, _>("sealed_value")?, &context(playground_id, &name))?;
            Ok((name, value))
        })
        .collect()
}

#[cfg(test)]
#[path = "generated_env_tests.rs"]
mod tests;
