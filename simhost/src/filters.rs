//! The engine's `filters` query parameter: a JSON object from a filter name
//! to its terms, either `{"label": ["a=b"]}` (what bollard sends) or the
//! older `{"label": {"a=b": true}}`.
//!
//! Semantics as the engine's: terms of one `label` filter must *all* hold
//! (`key` = the label exists, `key=value` = it has that value); terms of any
//! other filter are alternatives (one must match); a filter not given
//! matches everything. `name` matches a substring of the name (the engine
//! takes a regular expression; play sends exact names).

use std::collections::HashMap;

use serde_json::Value;

use crate::{Error, Result};

#[derive(Debug, Clone, Default)]
pub struct Filters(HashMap<String, Vec<String>>);

impl Filters {
    /// Parses the query's `filters` value; none or empty is "match all".
    pub fn parse(raw: Option<&str>) -> Result<Filters> {
        let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else { return Ok(Filters::default()) };
        let bad = |e: String| Error::BadRequest(format!("invalid filter: {e}"));
        let value: HashMap<String, Value> = serde_json::from_str(raw).map_err(|e| bad(e.to_string()))?;
        let mut filters = HashMap::new();
        for (key, terms) in value {
            let terms = match terms {
                Value::Array(items) => items.into_iter().filter_map(|t| t.as_str().map(str::to_owned)).collect(),
                Value::Object(map) => {
                    map.into_iter().filter(|(_, on)| on == &Value::Bool(true)).map(|(t, _)| t).collect()
                }
                other => return Err(bad(format!("`{key}` is {other}, not a list of terms"))),
            };
            filters.insert(key, terms);
        }
        Ok(Filters(filters))
    }

    /// A filter of label terms only (for callers inside the process).
    pub fn labels(terms: &[&str]) -> Filters {
        Filters(HashMap::from([("label".to_owned(), terms.iter().map(|t| (*t).to_owned()).collect())]))
    }

    /// The terms of `key`, if that filter was given.
    pub fn terms(&self, key: &str) -> Option<&[String]> {
        self.0.get(key).map(Vec::as_slice)
    }

    /// Whether every `label` term holds for `labels`.
    pub fn labels_match(&self, labels: &HashMap<String, String>) -> bool {
        self.terms("label").unwrap_or_default().iter().all(|term| match term.split_once('=') {
            Some((k, v)) => labels.get(k).is_some_and(|have| have == v),
            None => labels.contains_key(term),
        })
    }

    /// Whether `key` was not given or one of its terms equals `value`.
    pub fn one_of(&self, key: &str, value: &str) -> bool {
        self.terms(key).is_none_or(|terms| terms.iter().any(|t| t == value))
    }

    /// Whether `name` was not given or one of its terms is part of `value`.
    pub fn name_matches(&self, value: &str) -> bool {
        let value = value.trim_start_matches('/');
        self.terms("name").is_none_or(|terms| terms.iter().any(|t| value.contains(t.trim_start_matches('/'))))
    }

    /// Whether `id` was not given or one of its terms is a prefix of `id`.
    pub fn id_matches(&self, id: &str) -> bool {
        self.terms("id").is_none_or(|terms| terms.iter().any(|t| id.starts_with(t.as_str())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn label_terms_must_all_hold_and_a_bare_key_asks_for_presence() {
        let f = Filters::parse(Some(r#"{"label":["a=1","b"]}"#)).unwrap();
        assert!(f.labels_match(&labels(&[("a", "1"), ("b", "x")])));
        assert!(!f.labels_match(&labels(&[("a", "1")])));
        assert!(!f.labels_match(&labels(&[("a", "2"), ("b", "x")])));
    }

    #[test]
    fn the_map_form_and_missing_filters_are_read_too() {
        let f = Filters::parse(Some(r#"{"status":{"running":true}}"#)).unwrap();
        assert!(f.one_of("status", "running"));
        assert!(!f.one_of("status", "exited"));
        assert!(Filters::parse(None).unwrap().one_of("status", "exited"));
        assert!(Filters::parse(Some("[1]")).is_err());
    }

    #[test]
    fn names_match_by_substring_without_the_leading_slash() {
        let f = Filters::parse(Some(r#"{"name":["/web-1"]}"#)).unwrap();
        assert!(f.name_matches("/proj-web-1"));
        assert!(!f.name_matches("/proj-db-1"));
    }
}
