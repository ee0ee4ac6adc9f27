//! Writes a loaded Compose tree as block-style YAML, for the compiled
//! output of a launch.
//!
//! serde_yaml's writer was half of a launch's compile (issue #33: libyaml's
//! emitter analyses every scalar, and serde_yaml checks each string by
//! trying to read it back as a number). This writer is plain and strict:
//! a string is written plain only when it is made of characters that cannot
//! start or mean YAML syntax and is not a word YAML reads as something else
//! (`yes`, `null`, `inf`, ...), and double-quoted otherwise.
//!
//! Invariant (`emit_tests.rs`, and `template_tests.rs` through compile):
//! the bounded loader reads the text back as the tree it was written from.
//! Anything this writer does not handle (tagged values, keys that are not
//! scalars) is written by serde_yaml instead, so the invariant never rests
//! on a case this writer guesses.

use std::fmt::Write as _;

use serde_yaml::{Mapping, Number, Value};

/// `value` as YAML; `None` when only serde_yaml can write it.
pub(crate) fn to_yaml(value: &Value) -> Option<String> {
    let mut out = String::with_capacity(4096);
    match value {
        Value::Mapping(m) if !m.is_empty() => mapping(&mut out, m, 0)?,
        Value::Sequence(s) if !s.is_empty() => sequence(&mut out, s, 0)?,
        other => {
            scalar(&mut out, other)?;
            out.push('\n');
        }
    }
    Some(out)
}

fn indent(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// The entries of `m` at column `at`; the first one's indent is already
/// written when `first_inline` (a mapping that is a sequence item).
fn mapping_entries(out: &mut String, m: &Mapping, at: usize, first_inline: bool) -> Option<()> {
    for (i, (key, value)) in m.iter().enumerate() {
        if i > 0 || !first_inline {
            indent(out, at);
        }
        match key {
            Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => scalar(out, key)?,
            _ => return None,
        }
        out.push(':');
        nested(out, value, at)?;
    }
    Some(())
}

fn mapping(out: &mut String, m: &Mapping, at: usize) -> Option<()> {
    mapping_entries(out, m, at, false)
}

fn sequence(out: &mut String, items: &[Value], at: usize) -> Option<()> {
    for item in items {
        indent(out, at);
        out.push('-');
        match item {
            Value::Mapping(m) if !m.is_empty() => {
                out.push(' ');
                mapping_entries(out, m, at + 2, true)?;
            }
            _ => nested(out, item, at)?,
        }
    }
    Some(())
}

/// What follows a key's `:` or an item's `-` at column `at`: a scalar on
/// the same line, or a collection on the next lines, two columns in.
fn nested(out: &mut String, value: &Value, at: usize) -> Option<()> {
    match value {
        Value::Mapping(m) if !m.is_empty() => {
            out.push('\n');
            mapping(out, m, at + 2)
        }
        Value::Sequence(s) if !s.is_empty() => {
            out.push('\n');
            sequence(out, s, at + 2)
        }
        other => {
            out.push(' ');
            scalar(out, other)?;
            out.push('\n');
            Some(())
        }
    }
}

fn scalar(out: &mut String, value: &Value) -> Option<()> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => number(out, n)?,
        Value::String(s) if is_plain(s) => out.push_str(s),
        Value::String(s) => quoted(out, s),
        Value::Mapping(m) if m.is_empty() => out.push_str("{}"),
        Value::Sequence(s) if s.is_empty() => out.push_str("[]"),
        Value::Mapping(_) | Value::Sequence(_) | Value::Tagged(_) => return None,
    }
    Some(())
}

fn number(out: &mut String, n: &Number) -> Option<()> {
    if n.is_i64() || n.is_u64() {
        let _ = write!(out, "{n}");
        return Some(());
    }
    let f = n.as_f64()?;
    if f.is_nan() {
        out.push_str(".nan");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { ".inf" } else { "-.inf" });
    } else {
        // `{:?}` keeps a fraction or an exponent (`1.0`, `1e300`), so the
        // text reads back as a float, not an integer.
        let _ = write!(out, "{f:?}");
    }
    Some(())
}

/// Words a YAML 1.1 reader (serde_yaml, compose-go) takes for booleans,
/// null or special floats when written plain, compared in lower case.
const NOT_STRINGS: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null", "inf", "infinity", "nan"];

/// Whether `s` reads back as this string when written plain: it starts with
/// a letter, `/` or `_`; holds only letters, digits, spaces and
/// `_ . / @ + = -`, and `:` not followed by a space or the end; has no
/// space at its end nor two in a row; and is not one of [`NOT_STRINGS`].
fn is_plain(s: &str) -> bool {
    let bytes = s.as_bytes();
    let Some(&first) = bytes.first() else { return false };
    if !(first.is_ascii_alphabetic() || first == b'/' || first == b'_') || bytes.last() == Some(&b' ') {
        return false;
    }
    for (i, &b) in bytes.iter().enumerate() {
        let next = bytes.get(i + 1).copied();
        let ok = match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'/' | b'@' | b'+' | b'=' | b'-' => true,
            b':' => next.is_some_and(|n| n != b' '),
            b' ' => next.is_some_and(|n| n != b' ' && n != b'#'),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    s.len() > 8 || !NOT_STRINGS.iter().any(|w| w.eq_ignore_ascii_case(s))
}

/// `s` double-quoted, with every character YAML could misread escaped.
fn quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            // Controls, DEL, the C1 range (NEL among them), the Unicode
            // line and paragraph separators and the byte order mark.
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
#[path = "emit_tests.rs"]
mod tests;
