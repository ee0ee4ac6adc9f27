//! How a row's columns are read and written: flags as integers, JSON,
//! timestamps and state words read strictly (a value play never writes is
//! [`Error::Corrupt`] naming the table, row and column, never a default),
//! and unique-constraint violations mapped to the caller's error, on
//! either backend (the invariants of the crate's documentation).

use std::str::FromStr;

use crate::{Error, Result};

/// The integer form of a flag.
pub fn flag(value: bool) -> i64 {
    i64::from(value)
}

/// A flag read back from its integer form.
pub fn is_set(value: i64) -> bool {
    value != 0
}

/// Reads the JSON column `column` of a row of `table` (id `id`) strictly:
/// text that does not parse as `T` is [`Error::Corrupt`], never a default
/// (see the module invariants).
pub(crate) fn json_column<T: serde::de::DeserializeOwned>(
    row: &sqlx::any::AnyRow,
    table: &'static str,
    id: i64,
    column: &'static str,
) -> Result<T> {
    use sqlx::Row as _;
    let text: String = row.try_get(column)?;
    parse_json(&text, table, id, column)
}

/// Parses stored JSON `text` of `table.column` (row `id`) strictly, as
/// [`json_column`] does.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    text: &str,
    table: &'static str,
    id: i64,
    column: &'static str,
) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt { table, id, column, reason: e.to_string() })
}

/// Reads the timestamp column `column` of a row (fixed-width RFC 3339
/// text, see the module invariants).
pub(crate) fn time_column(row: &sqlx::any::AnyRow, column: &str) -> Result<play_model::time::Timestamp> {
    use sqlx::Row as _;
    Ok(play_model::time::from_db(&row.try_get::<String, _>(column)?)?)
}

/// [`time_column`] of a column that may be NULL.
pub(crate) fn opt_time_column(row: &sqlx::any::AnyRow, column: &str) -> Result<Option<play_model::time::Timestamp>> {
    use sqlx::Row as _;
    Ok(play_model::time::opt_from_db(row.try_get(column)?)?)
}

/// Reads the text column `column` of a row of `table` (id `id`) as one of
/// the fixed words of `T` (a state such as
/// [`PlaygroundStatus`](play_model::playground::PlaygroundStatus)) strictly: a
/// word play never writes is [`Error::Corrupt`], as for [`json_column`].
pub(crate) fn text_column<T>(row: &sqlx::any::AnyRow, table: &'static str, id: i64, column: &'static str) -> Result<T>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    use sqlx::Row as _;
    let text: String = row.try_get(column)?;
    parse_text(&text, table, id, column)
}

/// [`text_column`] of a column that may be NULL.
pub(crate) fn opt_text_column<T>(
    row: &sqlx::any::AnyRow,
    table: &'static str,
    id: i64,
    column: &'static str,
) -> Result<Option<T>>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    use sqlx::Row as _;
    let text: Option<String> = row.try_get(column)?;
    text.map(|t| parse_text(&t, table, id, column)).transpose()
}

fn parse_text<T>(text: &str, table: &'static str, id: i64, column: &'static str) -> Result<T>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|e: T::Err| Error::Corrupt { table, id, column, reason: e.to_string() })
}

/// Maps a unique-constraint violation to the caller's error (a name already
/// taken, say); any other database error passes through unchanged.
pub trait OnUnique<T> {
    fn on_unique(self, conflict: impl FnOnce() -> Error) -> Result<T>;
}

impl<T> OnUnique<T> for std::result::Result<T, sqlx::Error> {
    fn on_unique(self, conflict: impl FnOnce() -> Error) -> Result<T> {
        self.map_err(|e| if is_unique_violation(&e) { conflict() } else { e.into() })
    }
}

/// Whether a database error is a unique-constraint violation, on either
/// backend.
pub fn is_unique_violation(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => {
            db.code().is_some_and(|c| c == "23505" || c == "2067" || c == "1555")
                || db.message().contains("UNIQUE constraint failed")
        }
        _ => false,
    }
}
