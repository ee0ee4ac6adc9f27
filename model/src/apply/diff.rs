//! A structural diff of two JSON values: one entry per changed leaf,
//! addressed by a dotted path (`spec.env_overrides.MODE`). Objects are
//! compared key by key; lists and scalars as wholes, so a changed list is
//! one entry with both lists (a Compose file is one string: the client
//! renders a line diff of it).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One changed value: `old` is `None` for an added key, `new` for a
/// removed one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffEntry {
    pub path: String,
    pub old: Option<Value>,
    pub new: Option<Value>,
}

/// The changes from `old` to `new` under `prefix`, in key order.
pub fn diff(prefix: &str, old: Option<&Value>, new: Option<&Value>) -> Vec<DiffEntry> {
    let mut out = Vec::new();
    walk(prefix, old, new, &mut out);
    out
}

fn walk(path: &str, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<DiffEntry>) {
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                walk(&format!("{path}.{key}"), a.get(key), b.get(key), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(DiffEntry { path: path.to_owned(), old: a.cloned(), new: b.cloned() }),
    }
}
