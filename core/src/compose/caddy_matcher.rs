//! PLACEHOLDER replaced by the matcher branch.
use serde_json::{Map, Value, json};

use super::rule::Rule;

pub fn to_caddy(rule: &Rule) -> Result<Map<String, Value>, String> {
    let Rule::Matcher { name, args } = rule else { return Err("unsupported".into()) };
    let pattern = match *name {
        "Path" => format!("^{}$", regex::escape(&args[0])),
        "PathPrefix" => format!("^{}", regex::escape(&args[0])),
        "PathRegexp" => args[0].clone(),
        _ => return Err("unsupported".into()),
    };
    let mut m = Map::new();
    m.insert("path_regexp".into(), json!({"pattern": pattern}));
    Ok(m)
}
