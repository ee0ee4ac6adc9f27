//! What `GET /api/playgrounds` asks for (issue #52, item 7): filters,
//! combined with AND, and a page. The store turns a [`ListQuery`] into one
//! SQL query, filtered and ordered there, so a page of an account with
//! thousands of Playgrounds costs what the page holds.
//!
//! Invariants: a query is checked before it reaches the store
//! ([`ListQuery::parse`]): ids are positive, a name prefix is 1-100
//! characters, a page is 1-based and holds 1-[`MAX_PER_PAGE`] items.

use std::collections::BTreeMap;

use super::state::PlaygroundStatus;
use crate::FieldErrors;
use crate::error::push_field_error;

/// The most items a page holds.
pub const MAX_PER_PAGE: u32 = 500;
/// A page's size when `page` is given without `per_page`.
pub const DEFAULT_PER_PAGE: u32 = 100;
/// The longest name prefix, in characters (a name's own bound).
pub const MAX_PREFIX_CHARS: usize = 100;

/// The query parameters `GET /api/playgrounds` takes, as the parser
/// names them.
pub const PARAMETERS: &[&str] = &["status", "playspec_id", "playroom_id", "name", "trigger_id", "page", "per_page"];

/// See the [module documentation](self).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListQuery {
    pub status: Option<PlaygroundStatus>,
    pub playspec_id: Option<i64>,
    pub playroom_id: Option<i64>,
    /// Names that start with this, compared as written (case matters).
    pub name_prefix: Option<String>,
    /// Playgrounds a trigger keeps (its targets' Playgrounds).
    pub trigger_id: Option<i64>,
    /// `None`: every Playground that matches, as the contract's list.
    pub page: Option<Page>,
    /// Names that contain this, ignoring ASCII case: the dashboard's
    /// search box (the API takes a prefix).
    pub name_contains: Option<String>,
    /// Newest first (the dashboard); the API lists in id order.
    pub newest_first: bool,
}

/// One page of a list, in id order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// 1-based.
    pub number: u32,
    pub per_page: u32,
}

impl Page {
    /// How many items come before this page.
    pub fn offset(&self) -> u64 {
        u64::from(self.number - 1) * u64::from(self.per_page)
    }
}

impl ListQuery {
    /// The query of the parameters `params` (name -> value), every problem
    /// named by its parameter (`query.<name>`); a parameter the list does
    /// not take is one too, so a misspelt filter is never silently ignored.
    pub fn parse(params: &BTreeMap<String, String>) -> Result<ListQuery, FieldErrors> {
        let mut errors = FieldErrors::new();
        let mut query = ListQuery::default();
        for name in params.keys().filter(|k| !PARAMETERS.contains(&k.as_str())) {
            push_field_error(
                &mut errors,
                format!("query.{name}"),
                format!("is not a filter; use {}", PARAMETERS.join(", ")),
            );
        }
        let id = |name: &str, errors: &mut FieldErrors| -> Option<i64> {
            let text = params.get(name)?;
            match text.parse::<i64>() {
                Ok(id) if id > 0 => Some(id),
                _ => {
                    push_field_error(errors, format!("query.{name}"), "must be a positive integer id");
                    None
                }
            }
        };
        query.playspec_id = id("playspec_id", &mut errors);
        query.playroom_id = id("playroom_id", &mut errors);
        query.trigger_id = id("trigger_id", &mut errors);
        if let Some(text) = params.get("status") {
            match text.parse::<PlaygroundStatus>() {
                Ok(status) => query.status = Some(status),
                Err(_) => {
                    let words: Vec<&str> = PlaygroundStatus::ALL.iter().map(|s| s.as_str()).collect();
                    push_field_error(&mut errors, "query.status", format!("must be one of {}", words.join(", ")));
                }
            }
        }
        if let Some(prefix) = params.get("name") {
            let count = prefix.chars().count();
            if count == 0 || count > MAX_PREFIX_CHARS || prefix.chars().any(char::is_control) {
                push_field_error(&mut errors, "query.name", "must be a name prefix of 1-100 characters");
            } else {
                query.name_prefix = Some(prefix.clone());
            }
        }
        let number = |name: &str, max: u32, errors: &mut FieldErrors| -> Option<u32> {
            let text = params.get(name)?;
            match text.parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => Some(n),
                _ => {
                    push_field_error(errors, format!("query.{name}"), format!("must be an integer from 1 to {max}"));
                    None
                }
            }
        };
        let page = number("page", u32::MAX / MAX_PER_PAGE, &mut errors);
        let per_page = number("per_page", MAX_PER_PAGE, &mut errors);
        if page.is_some() || per_page.is_some() {
            query.page = Some(Page { number: page.unwrap_or(1), per_page: per_page.unwrap_or(DEFAULT_PER_PAGE) });
        }
        if errors.is_empty() { Ok(query) } else { Err(errors) }
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn filters_and_a_page_are_read() {
        let q = ListQuery::parse(&params(&[
            ("status", "running"),
            ("playspec_id", "3"),
            ("playroom_id", "4"),
            ("name", "pr-"),
            ("trigger_id", "5"),
            ("page", "2"),
        ]))
        .unwrap();
        assert_eq!(q.status, Some(PlaygroundStatus::Running));
        assert_eq!((q.playspec_id, q.playroom_id, q.trigger_id), (Some(3), Some(4), Some(5)));
        assert_eq!(q.name_prefix.as_deref(), Some("pr-"));
        assert_eq!(q.page, Some(Page { number: 2, per_page: DEFAULT_PER_PAGE }));
        assert_eq!(q.page.unwrap().offset(), 100);
        assert_eq!(ListQuery::parse(&params(&[])).unwrap(), ListQuery::default(), "no page: the whole list");
        let q = ListQuery::parse(&params(&[("per_page", "10")])).unwrap();
        assert_eq!(q.page, Some(Page { number: 1, per_page: 10 }));
    }

    #[test]
    fn every_bad_parameter_is_named() {
        let bad = params(&[
            ("status", "asleep"),
            ("playspec_id", "-1"),
            ("playroom_id", "x"),
            ("name", ""),
            ("trigger_id", "0"),
            ("page", "0"),
            ("per_page", "501"),
            ("stauts", "running"),
        ]);
        let errors = ListQuery::parse(&bad).unwrap_err();
        let mut keys: Vec<&str> = errors.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "query.name",
                "query.page",
                "query.per_page",
                "query.playroom_id",
                "query.playspec_id",
                "query.status",
                "query.stauts",
                "query.trigger_id"
            ]
        );
        let huge = params(&[("page", "99999999999")]);
        assert!(ListQuery::parse(&huge).unwrap_err().contains_key("query.page"));
    }
}
