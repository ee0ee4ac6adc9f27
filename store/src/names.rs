//! Objects an account addresses by name: the id a name stands for, for
//! references by name (server-side apply resolves `playroom: box` and
//! finds the Playspec its object names).
//!
//! Invariant: a lookup is scoped by account, so another account's object
//! of the same name reads as absent, exactly like a missing one.

use super::On;
use super::shapes::maybe_one;
use crate::Result;

/// A kind of object an account names, each unique by name in the account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    Playroom,
    Playspec,
    Playzone,
}

impl Named {
    /// The lookup, a constant per kind (never tenant input). A deleted
    /// Playroom keeps its row until its hosts are cleaned and purged; it
    /// no longer answers to its name.
    fn sql(self) -> &'static str {
        match self {
            Named::Playroom => "SELECT id FROM playrooms WHERE account_id = $1 AND name = $2 AND deleted_at IS NULL",
            Named::Playspec => "SELECT id FROM playspecs WHERE account_id = $1 AND name = $2",
            Named::Playzone => "SELECT id FROM playzones WHERE account_id = $1 AND name = $2",
        }
    }
}

/// The id of the account's `named` object called `name`, if any.
pub async fn id_of(on: impl Into<On<'_>>, named: Named, account_id: i64, name: &str) -> Result<Option<i64>> {
    let query = sqlx::query(named.sql()).bind(account_id).bind(name);
    maybe_one(on, query, |row| Ok(sqlx::Row::try_get::<i64, _>(row, "id")?)).await
}
