//! Output for people and for scripts. `-o json` prints the API's own JSON
//! (pretty, one document), so scripts read the fields the API documents;
//! `-o yaml` is the same data as YAML; tables are for people and may
//! change.

use chrono::{DateTime, Utc};
use clap::ValueEnum;
use serde_json::Value;

/// `-o` of `get` and `describe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    /// The table with more columns.
    Wide,
    Json,
    Yaml,
}

/// `-o` of commands whose output is a report (`apply`, `diff`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
}

pub fn json(value: &Value) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(value)?)
}

pub fn yaml(value: &Value) -> anyhow::Result<String> {
    Ok(serde_yaml::to_string(value)?)
}

/// Aligned columns separated by three spaces; the last column is not
/// padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}   ", width = widths[i]));
            }
        }
        out.trim_end().to_owned()
    };
    let mut out = vec![line(headers.to_vec())];
    out.extend(rows.iter().map(|r| line(r.iter().map(String::as_str).collect())));
    out.join("\n")
}

/// A short span: `45s`, `12m`, `3h`, `2d`, `1y`.
pub fn short_duration(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        86_400..31_536_000 => format!("{}d", s / 86_400),
        _ => format!("{}y", s / 31_536_000),
    }
}

fn time(value: &Value) -> Option<DateTime<Utc>> {
    value.as_str()?.parse::<DateTime<Utc>>().ok()
}

/// How long ago the timestamp `value` was (`3h`), or `-`.
pub fn age(value: &Value, now: DateTime<Utc>) -> String {
    time(value).map_or_else(|| "-".to_owned(), |t| short_duration((now - t).num_seconds()))
}

/// How long until the timestamp `value` (`in 7h`, `expired`), or `-`.
pub fn until(value: &Value, now: DateTime<Utc>) -> String {
    match time(value) {
        Some(t) if t > now => format!("in {}", short_duration((t - now).num_seconds())),
        Some(_) => "expired".to_owned(),
        None => "-".to_owned(),
    }
}

/// A JSON scalar as a cell: strings bare, `null` as `-`.
pub fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// A changed value in a diff line: strings quoted when short, multi-line
/// text summarised (the line diff follows it), `<none>` for absent.
pub fn diff_value(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "<none>".to_owned(),
        Some(Value::String(s)) if s.contains('\n') => format!("<{} lines>", s.lines().count()),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tables_align_columns_and_do_not_pad_the_last() {
        let rows = vec![vec!["web".to_owned(), "running".to_owned()], vec!["database".to_owned(), "-".to_owned()]];
        assert_eq!(table(&["NAME", "STATUS"], &rows), "NAME       STATUS\nweb        running\ndatabase   -");
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(short_duration(5), "5s");
        assert_eq!(short_duration(125), "2m");
        assert_eq!(short_duration(3 * 3600 + 5), "3h");
        assert_eq!(short_duration(2 * 86_400), "2d");
        assert_eq!(short_duration(-4), "0s");
    }

    #[test]
    fn ages_and_expiries_read_api_timestamps() {
        let now: DateTime<Utc> = "2026-01-01T12:00:00Z".parse().unwrap();
        assert_eq!(age(&json!("2026-01-01T09:00:00Z"), now), "3h");
        assert_eq!(age(&Value::Null, now), "-");
        assert_eq!(until(&json!("2026-01-01T20:00:00.5Z"), now), "in 8h");
        assert_eq!(until(&json!("2026-01-01T11:00:00Z"), now), "expired");
    }

    #[test]
    fn cells_and_diff_values_are_plain() {
        assert_eq!(cell(&json!("x")), "x");
        assert_eq!(cell(&json!(3)), "3");
        assert_eq!(cell(&json!(["a", "b"])), "a,b");
        assert_eq!(cell(&Value::Null), "-");
        assert_eq!(diff_value(Some(&json!("nginx:1"))), "\"nginx:1\"");
        assert_eq!(diff_value(Some(&json!("a\nb\n"))), "<2 lines>");
        assert_eq!(diff_value(None), "<none>");
    }

    #[test]
    fn json_and_yaml_print_the_same_data() {
        let value = json!({"name": "web", "id": 3});
        let back: Value = serde_json::from_str(&json(&value).unwrap()).unwrap();
        assert_eq!(back, value);
        let back: Value = serde_yaml::from_str(&yaml(&value).unwrap()).unwrap();
        assert_eq!(back, value);
    }
}
