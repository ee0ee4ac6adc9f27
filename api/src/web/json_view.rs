//! The API's JSON views as HTML, for the pages that show a resource as the
//! API does (Playrooms, Playzones, Playspecs, templates, webhooks): a
//! table of chosen columns for a list, a definition list for a detail.
//! Values are text (maud escapes them); long or multi-line text is a
//! `<pre>`; times are `<time>`.

use maud::{Markup, html};
use serde_json::Value;

use super::layout::{ago, badge};

/// Words shown as a status badge.
const STATUS_FIELDS: &[&str] = &["status", "state"];

/// One value.
pub fn value(field: &str, v: &Value) -> Markup {
    match v {
        Value::Null => html! { span.muted { "—" } },
        Value::Bool(b) => html! { (if *b { "yes" } else { "no" }) },
        Value::Number(n) => html! { (n.to_string()) },
        Value::String(s) if STATUS_FIELDS.contains(&field) => badge(s),
        Value::String(s) => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(at) if s.len() >= 20 => ago(at.with_timezone(&chrono::Utc)),
            _ if s.contains('\n') || s.len() > 160 => html! { pre { (s) } },
            _ => html! { (s) },
        },
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            if items.is_empty() {
                html! { span.muted { "none" } }
            } else {
                html! { @for (n, i) in items.iter().enumerate() { @if n > 0 { ", " } (value("", i)) } }
            }
        }
        Value::Array(items) => html! { ol { @for i in items { li { (value("", i)) } } } },
        Value::Object(map) if map.is_empty() => html! { span.muted { "none" } },
        Value::Object(_) => fields(v, &[]),
    }
}

/// Every field of an object but `skip`, as a definition list.
pub fn fields(v: &Value, skip: &[&str]) -> Markup {
    let Some(map) = v.as_object() else { return value("", v) };
    html! {
        dl {
            @for (k, item) in map.iter().filter(|(k, _)| !skip.contains(&k.as_str())) {
                dt { (k.replace('_', " ")) }
                dd { (value(k, item)) }
            }
        }
    }
}

/// A table of `columns` (field, heading) of `rows`; the first column
/// links to `link(row)` when it gives a path.
pub fn table(id: &str, rows: &[Value], columns: &[(&str, &str)], link: impl Fn(&Value) -> Option<String>) -> Markup {
    html! {
        div.table-box { table id=(id) {
            thead { tr { @for (_, heading) in columns { th scope="col" { (heading) } } } }
            tbody { @for row in rows { tr {
                @for (n, (field, _)) in columns.iter().enumerate() {
                    td.wrap {
                        @match (n, link(row)) {
                            (0, Some(href)) => { a href=(href) { (value(field, &row[*field])) } }
                            _ => { (value(field, &row[*field])) }
                        }
                    }
                }
            } } }
        } }
    }
}

/// A string field's text (empty when it is not a string).
pub fn text_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// A time field (RFC 3339).
pub fn time_of(v: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(v.as_str()?).ok().map(|at| at.with_timezone(&chrono::Utc))
}

/// `text` without terminal escape sequences (a build log's colours), for
/// showing as plain text.
pub fn without_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // Parameters, then one final byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else if matches!(chars.next(), Some('(' | ')')) {
            // A character set: one more byte names it.
            chars.next();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_dropped_and_text_is_kept() {
        assert_eq!(without_escapes("\u{1b}[1;31merror\u{1b}[0m: x\u{1b}(B"), "error: x");
        assert_eq!(without_escapes("plain <b>"), "plain <b>");
    }

    #[test]
    fn values_are_text_and_times_are_times() {
        let html = value("", &Value::String("<script>x</script>".into())).into_string();
        assert_eq!(html, "&lt;script&gt;x&lt;/script&gt;");
        let at = value("created_at", &Value::String("2026-11-27T10:00:00Z".into())).into_string();
        assert!(at.starts_with("<time datetime=\"2026-11-27T10:00:00+00:00\""), "{at}");
        assert!(value("status", &Value::String("running".into())).into_string().contains("badge s-running"));
    }
}
