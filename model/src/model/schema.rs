//! A database's schema version against a binary's (issue #53, item 4; the
//! store reads it, `play_store::schema`).

/// One migration of this binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    pub version: i64,
    pub description: String,
}

/// A database's schema as a binary sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    /// The last migration this binary knows.
    pub binary: i64,
    /// The last migration the database records as applied; `None` for a
    /// database play never migrated.
    pub database: Option<i64>,
    /// This binary's migrations the database does not hold yet, in order.
    pub pending: Vec<Migration>,
}

impl Schema {
    /// The database's version when it is newer than this binary's: such
    /// a database must not be run by this binary (no migration goes back).
    pub fn newer(&self) -> Option<i64> {
        self.database.filter(|database| *database > self.binary)
    }
}
