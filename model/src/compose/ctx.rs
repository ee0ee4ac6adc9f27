//! The checking context shared by the model parser, the validator, the
//! policy and the label rules: collects issues with their paths and lines,
//! and converts loosely typed YAML scalars the way Compose does after
//! interpolation (where every substituted value is a string).

use std::time::Duration;

use indexmap::IndexMap;
use serde_yaml::{Mapping, Value};

use super::Issue;
use super::load::key_string;
use super::locate::Locator;
use super::path::Path;

pub(crate) struct Ctx<'a> {
    pub(crate) errors: Vec<Issue>,
    pub(crate) warnings: Vec<Issue>,
    locator: &'a Locator<'a>,
    /// Template mode: a string holding a template reference (`$var__X`
    /// after Compose interpolation of `$$var__X`) cannot be checked until
    /// compile, so typed checks skip it. Compile checks the real value.
    deferred: bool,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx").field("errors", &self.errors.len()).finish_non_exhaustive()
    }
}

/// True when `text` holds `$var__X` or `$random__X`: a template reference
/// as it reads after Compose interpolation turned `$$` into `$`.
fn has_interpolated_reference(text: &str) -> bool {
    ["$var__", "$random__"].iter().any(|prefix| {
        text.match_indices(prefix).any(|(at, _)| {
            text.as_bytes().get(at + prefix.len()).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        })
    })
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(locator: &'a Locator<'a>, deferred: bool) -> Self {
        Ctx { errors: Vec::new(), warnings: Vec::new(), locator, deferred }
    }

    fn issue(&self, path: &Path, message: String) -> Issue {
        Issue { path: path.to_string(), message, line: self.locator.find(path) }
    }

    pub(crate) fn error(&mut self, path: &Path, message: impl Into<String>) {
        let issue = self.issue(path, message.into());
        self.errors.push(issue);
    }

    pub(crate) fn warn(&mut self, path: &Path, message: impl Into<String>) {
        let issue = self.issue(path, message.into());
        self.warnings.push(issue);
    }

    /// True in template mode when `text` holds a template reference.
    pub(crate) fn is_deferred(&self, text: &str) -> bool {
        self.deferred && has_interpolated_reference(text)
    }

    pub(crate) fn mapping<'v>(&mut self, value: &'v Value, path: &Path) -> Option<&'v Mapping> {
        match untag(value) {
            Value::Mapping(m) => Some(m),
            Value::Null => None,
            _ => {
                self.error(path, "must be a mapping");
                None
            }
        }
    }

    /// Iterates a mapping's entries with string keys; other keys are errors.
    pub(crate) fn entries<'v>(&mut self, mapping: &'v Mapping, path: &Path) -> Vec<(String, &'v Value)> {
        let mut out = Vec::with_capacity(mapping.len());
        for (key, value) in mapping {
            match key_string(key) {
                Some(k) => out.push((k, value)),
                None => self.error(path, "keys must be strings"),
            }
        }
        out
    }

    /// A scalar as text: strings as written, numbers and booleans in their
    /// YAML spelling. Null is `None` without an error.
    pub(crate) fn string(&mut self, value: &Value, path: &Path) -> Option<String> {
        match scalar_string(value) {
            Ok(s) => s,
            Err(()) => {
                self.error(path, "must be a string");
                None
            }
        }
    }

    pub(crate) fn bool(&mut self, value: &Value, path: &Path) -> Option<bool> {
        match untag(value) {
            Value::Bool(b) => Some(*b),
            Value::Null => None,
            Value::String(s) if self.is_deferred(s) => None,
            Value::String(s) => match s.as_str() {
                // The spellings Go's strconv.ParseBool accepts, as compose-go does.
                "true" | "True" | "TRUE" | "t" | "T" | "1" => Some(true),
                "false" | "False" | "FALSE" | "f" | "F" | "0" => Some(false),
                _ => {
                    self.error(path, format!("must be a boolean (true or false), not `{s}`"));
                    None
                }
            },
            _ => {
                self.error(path, "must be a boolean (true or false)");
                None
            }
        }
    }

    pub(crate) fn uint(&mut self, value: &Value, path: &Path) -> Option<u64> {
        match untag(value) {
            Value::Number(n) if n.as_u64().is_some() => n.as_u64(),
            Value::Null => None,
            Value::String(s) if self.is_deferred(s) => None,
            Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => match s.parse() {
                Ok(n) => Some(n),
                Err(_) => {
                    self.error(path, "is too large");
                    None
                }
            },
            _ => {
                self.error(path, "must be a non-negative integer");
                None
            }
        }
    }

    pub(crate) fn float(&mut self, value: &Value, path: &Path) -> Option<f64> {
        match untag(value) {
            Value::Number(n) => n.as_f64(),
            Value::Null => None,
            Value::String(s) if self.is_deferred(s) => None,
            Value::String(s) => match s.trim().parse::<f64>() {
                Ok(f) if f.is_finite() => Some(f),
                _ => {
                    self.error(path, format!("must be a number, not `{s}`"));
                    None
                }
            },
            _ => {
                self.error(path, "must be a number");
                None
            }
        }
    }

    pub(crate) fn duration(&mut self, value: &Value, path: &Path) -> Option<Duration> {
        let text = self.string(value, path)?;
        if self.is_deferred(&text) {
            return None;
        }
        match super::model::scalar::parse_duration(&text) {
            Ok(d) => Some(d),
            Err(message) => {
                self.error(path, message);
                None
            }
        }
    }

    /// A string or a list of scalars (`cap_add`, `profiles`, `dns`, ...).
    pub(crate) fn string_list(&mut self, value: &Value, path: &Path) -> Vec<String> {
        match untag(value) {
            Value::Sequence(items) => {
                items.iter().enumerate().filter_map(|(i, item)| self.string(item, &path.index(i))).collect()
            }
            Value::Null => Vec::new(),
            other => self.string(other, path).into_iter().collect(),
        }
    }

    /// A `KEY=value` list or a `KEY: value` map (`environment`, `labels`,
    /// `build.args`). List entries without `=` and null map values are `None`.
    pub(crate) fn list_or_map(&mut self, value: &Value, path: &Path) -> IndexMap<String, Option<String>> {
        let mut out = IndexMap::new();
        match untag(value) {
            Value::Sequence(items) => {
                for (i, item) in items.iter().enumerate() {
                    let item_path = path.index(i);
                    let Some(entry) = self.string(item, &item_path) else {
                        continue;
                    };
                    let (key, val) = match entry.split_once('=') {
                        Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
                        None => (entry, None),
                    };
                    if key.is_empty() {
                        self.error(&item_path, "entry has an empty name");
                    } else if out.insert(key.clone(), val).is_some() {
                        self.error(&item_path, format!("`{key}` is set twice"));
                    }
                }
            }
            Value::Mapping(mapping) => {
                for (key, val) in self.entries(mapping, path) {
                    let text = self.string(val, &path.key(key.clone()));
                    out.insert(key, text);
                }
            }
            Value::Null => {}
            _ => self.error(path, "must be a list of `KEY=value` strings or a mapping"),
        }
        out
    }
}

pub(crate) fn untag(value: &Value) -> &Value {
    match value {
        Value::Tagged(tagged) => untag(&tagged.value),
        other => other,
    }
}

/// `Ok(None)` for null, `Err` for sequences and mappings.
pub(crate) fn scalar_string(value: &Value) -> Result<Option<String>, ()> {
    match untag(value) {
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Bool(b) => Ok(Some(b.to_string())),
        Value::Null => Ok(None),
        _ => Err(()),
    }
}
