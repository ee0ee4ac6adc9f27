//! Translates a `svc/path_rule` ([`Rule`], Traefik's grammar) into one Caddy
//! matcher set for the edge.
//!
//! Invariants:
//! - The result is one matcher set (the object that goes in a route's
//!   `match` list) and never has a `host` key: the edge adds
//!   `"host": [fqdn]` to the same set, and Caddy ANDs the matchers of a set,
//!   so whatever the rule holds (`||`, `!`, `HostHeader`) a request must
//!   match the host first. Nothing here can widen the host.
//! - A single matcher becomes a native Caddy matcher (`path_regexp`,
//!   `header`, `header_regexp`); `&&`, `||` and `!` become one `expression`
//!   (CEL) matcher calling the same matchers as CEL functions.
//! - Tenant text reaches Caddy as a JSON string (serde_json escapes it) or
//!   inside a CEL string literal written by [`cel_string`], which is plain
//!   printable ASCII with every quote, backslash, brace and non-printable
//!   character escaped: no input can end the literal, and Caddy, which
//!   rewrites `{name}` in an expression into a placeholder call before CEL
//!   parses it, finds no brace to rewrite.
//! - Every regular expression passes [`go_regexp::check`], so Caddy (Go's
//!   `regexp`) compiles it; the expression stays within cel-go's default
//!   size and nesting limits. Whatever Caddy would refuse is an `Err` here,
//!   so validation refuses it and a Caddy config load never does: a load is
//!   all or nothing and would stop every route of the Playroom.
//!
//! Semantics (Traefik's, where Caddy's own matchers differ):
//! - `Path` and `PathPrefix` are case-sensitive; `PathPrefix` is a plain
//!   string prefix (`/api` matches `/apiv2`). Both become anchored
//!   `path_regexp` patterns, never Caddy's `path` matcher (case-insensitive,
//!   `*` a wildcard). Traefik v2 placeholders are honoured: `{name}` matches
//!   `[^/]+`, `{name:re}` matches `re`, as gorilla/mux builds them.
//! - `PathRegexp` is the pattern as written (Go's `regexp` in both, unanchored).
//! - Several arguments to one matcher are alternatives (Traefik v2).
//! - `Header` is an exact value match (Caddy's `header` when the value holds
//!   no `*` or brace, which Caddy reads as a wildcard or a placeholder; an
//!   escaped anchored `header_regexp` otherwise); `HeaderRegexp` is
//!   `header_regexp`; `HostHeader` checks the Host as Traefik does (ASCII
//!   case-insensitive, port ignored, one trailing dot tolerated).
//! - Caddy matches the cleaned path (`//a/../b` is `/b`), as Traefik v3 does
//!   with `sanitizePath` on, its default; it decodes every escape, where
//!   Traefik keeps reserved ones such as `%2F` encoded.

mod go_regexp;

use serde_json::{Map, Value, json};

use super::rule::Rule;

/// Deepest `!`/`&&`/`||` nesting translated (the rule parser stops at 64).
/// The cel-go of Caddy 2.6.2 (0.12) counts every grammar level it visits
/// against a limit of 250, about seven per parenthesis: it refuses
/// alternating `&&`/`||` nested 38 deep around a `header` call (measured
/// with Caddy 2.6.2; newer cel-go counts fewer levels). 32 leaves a margin.
pub const MAX_DEPTH: usize = 32;

/// Longest CEL expression produced, in bytes (all ASCII). cel-go's default
/// limit is 100,000 code points.
const MAX_EXPRESSION: usize = 50_000;

/// Regexp name prefix, so captures land in `{http.regexp.path_rule*}`
/// placeholders that nothing else writes. Names are deterministic (a counter
/// in rule order) so a config diff is empty when the rule is unchanged.
const NAME: &str = "path_rule";

/// One Caddy matcher: what a single Traefik matcher (with all its
/// arguments) becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Check {
    PathRegexp(String),
    /// An exact value, free of `*`, `{` and `}`.
    Header {
        field: String,
        value: String,
    },
    HeaderRegexp {
        field: String,
        pattern: String,
    },
}

/// The Caddy matcher set serving `rule`, or why the edge cannot serve it.
pub fn to_caddy(rule: &Rule) -> Result<Map<String, Value>, String> {
    if let Rule::Matcher { name, args } = rule {
        let mut set = Map::new();
        match check(name, args)? {
            Check::PathRegexp(pattern) => set.insert("path_regexp".into(), json!({"name": NAME, "pattern": pattern})),
            Check::Header { field, value } => set.insert("header".into(), json!({ field: [value] })),
            Check::HeaderRegexp { field, pattern } => {
                set.insert("header_regexp".into(), json!({ field: {"name": NAME, "pattern": pattern} }))
            }
        };
        return Ok(set);
    }
    if depth(rule) > MAX_DEPTH {
        return Err(format!("is nested more than {MAX_DEPTH} deep"));
    }
    let mut next = 0;
    let expression = cel(rule, &mut next)?;
    if expression.len() > MAX_EXPRESSION {
        return Err(format!(
            "is too long for the edge ({} bytes of expression, at most {MAX_EXPRESSION})",
            expression.len()
        ));
    }
    let mut set = Map::new();
    set.insert("expression".into(), Value::String(expression));
    Ok(set)
}

fn depth(rule: &Rule) -> usize {
    match rule {
        Rule::Matcher { .. } => 0,
        Rule::Not(inner) => 1 + depth(inner),
        Rule::And(items) | Rule::Or(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
    }
}

/// The Caddy matcher for one Traefik matcher.
fn check(name: &str, args: &[String]) -> Result<Check, String> {
    if args.is_empty() {
        return Err(format!("uses {name} without an argument"));
    }
    match name {
        "Path" => Ok(Check::PathRegexp(format!("^{}$", templates(name, args)?))),
        "PathPrefix" => Ok(Check::PathRegexp(format!("^{}", templates(name, args)?))),
        "PathRegexp" => {
            // Each alone first: `a)|(b` is invalid alone but not once grouped.
            for arg in args {
                go_regexp::check(arg).map_err(|e| format!("PathRegexp {e}"))?;
            }
            let pattern = match args {
                [one] => one.clone(),
                _ => args.iter().map(|a| format!("(?:{a})")).collect::<Vec<_>>().join("|"),
            };
            go_regexp::check(&pattern).map_err(|e| format!("PathRegexp {e}"))?;
            Ok(Check::PathRegexp(pattern))
        }
        "Header" => {
            let (field, value) = field_and_value(name, args)?;
            if value.contains(['*', '{', '}']) {
                let pattern = format!("^{}$", regex::escape(value));
                return Ok(Check::HeaderRegexp { field, pattern });
            }
            Ok(Check::Header { field, value: value.to_owned() })
        }
        "HeaderRegexp" => {
            let (field, pattern) = field_and_value(name, args)?;
            go_regexp::check(pattern).map_err(|e| format!("HeaderRegexp {e}"))?;
            Ok(Check::HeaderRegexp { field, pattern: pattern.to_owned() })
        }
        "HostHeader" => host_header(args),
        "QueryRegexp" => Err("uses QueryRegexp, which the edge cannot serve: Caddy has no matcher that tests \
             every value of a query parameter against a regular expression"
            .to_owned()),
        "ALPN" => Err("uses ALPN, which matches TLS connections of TCP routers, not HTTP requests".to_owned()),
        "Host" | "HostRegexp" => Err(format!("uses {name}: play sets the host of every route")),
        "HostSNI" | "HostSNIRegexp" => Err(format!("uses {name}, which matches TCP routers, not HTTP requests")),
        _ => Err(format!("uses {name}, which a path rule may not use")),
    }
}

/// The pattern, without anchors, matching any of the Path/PathPrefix
/// templates `args`, each built as gorilla/mux (Traefik v2) builds it:
/// literal text quoted, `{name}` as `[^/]+`, `{name:re}` as `re`.
/// Placeholder patterns are wrapped in `(?:...)` where mux uses a named
/// group: the same match, and no name can repeat across alternatives.
fn templates(name: &str, args: &[String]) -> Result<String, String> {
    let mut bodies = Vec::with_capacity(args.len());
    for tpl in args {
        bodies.push(template(tpl).map_err(|e| format!("{name} `{tpl}` {e}"))?);
    }
    let pattern = match bodies.as_slice() {
        [one] => one.clone(),
        _ => format!("(?:{})", bodies.join("|")),
    };
    go_regexp::check(&pattern).map_err(|e| format!("{name} {e}"))?;
    Ok(pattern)
}

fn template(tpl: &str) -> Result<String, String> {
    if !tpl.starts_with('/') {
        return Err("must start with `/`".to_owned());
    }
    let mut body = String::new();
    let mut end = 0;
    for (start, stop) in brace_indices(tpl)? {
        body.push_str(&regex::escape(&tpl[end..start]));
        let inner = &tpl[start + 1..stop - 1];
        let (var, pattern) = inner.split_once(':').unwrap_or((inner, "[^/]+"));
        if var.is_empty() || pattern.is_empty() {
            return Err(format!("has a placeholder `{}` without a name or a pattern", &tpl[start..stop]));
        }
        let groups = go_regexp::check(pattern).map_err(|e| format!("has a placeholder pattern {e}"))?;
        if groups > 0 {
            return Err(format!(
                "has a placeholder pattern `{pattern}` with a capturing group; Traefik accepts only \
                 non-capturing groups there: `(?:...)`"
            ));
        }
        body.push_str(&format!("(?:{pattern})"));
        end = stop;
    }
    body.push_str(&regex::escape(&tpl[end..]));
    Ok(body)
}

/// Start and end (exclusive) byte offsets of every outermost `{...}`, as
/// gorilla/mux finds them: braces nest (`{id:[0-9]{2}}`), classes do not
/// hide them, and an unbalanced brace is an error.
fn brace_indices(tpl: &str) -> Result<Vec<(usize, usize)>, String> {
    let mut level = 0usize;
    let mut start = 0;
    let mut spans = Vec::new();
    for (i, b) in tpl.bytes().enumerate() {
        match b {
            b'{' => {
                if level == 0 {
                    start = i;
                }
                level += 1;
            }
            b'}' => {
                level = level.checked_sub(1).ok_or("has unbalanced braces")?;
                if level == 0 {
                    spans.push((start, i + 1));
                }
            }
            _ => {}
        }
    }
    match level {
        0 => Ok(spans),
        _ => Err("has unbalanced braces".to_owned()),
    }
}

fn field_and_value<'a>(name: &str, args: &'a [String]) -> Result<(String, &'a str), String> {
    let [field, value] = args else {
        return Err(format!("{name} takes a header name and a value, not {} arguments", args.len()));
    };
    // Go's server takes Host and Transfer-Encoding out of the header map,
    // so Traefik never matches them; Caddy reads them from the request.
    if field.eq_ignore_ascii_case("host") || field.eq_ignore_ascii_case("transfer-encoding") {
        return Err(format!(
            "{name}(`{field}`, ...) never matches in Traefik (Go takes {field} out of the request's headers)"
        ));
    }
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if field.is_empty() || !field.bytes().all(token) {
        return Err(format!("{name} `{field}` is not a header name"));
    }
    Ok((field.clone(), value.as_str()))
}

/// Traefik v2's Host check (HostHeader is an alias of Host there) on the
/// `Host` header: the request host, lowercased and without its port, equals
/// an argument lowercased, allowing a trailing dot on either side.
fn host_header(args: &[String]) -> Result<Check, String> {
    let mut alternatives = Vec::new();
    for host in args {
        if host.is_empty() || !host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')) {
            return Err(format!("HostHeader `{host}` is not a host name (letters, digits, `.`, `-`, `_`)"));
        }
        let host = host.to_ascii_lowercase();
        alternatives.push(caseless(&host));
        alternatives.push(format!("{}\\.", caseless(&host)));
        if let Some(bare) = host.strip_suffix('.') {
            alternatives.push(caseless(bare));
        }
    }
    let pattern = format!("^(?:{})(?::[^:]*)?$", alternatives.join("|"));
    Ok(Check::HeaderRegexp { field: "Host".to_owned(), pattern })
}

/// A pattern matching `text` with ASCII letters in either case. Not `(?i)`:
/// Go folds `k` with the Kelvin sign and `s` with `ſ`, Traefik's lowercasing
/// does not.
fn caseless(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphabetic() {
            out.push('[');
            out.push(c.to_ascii_lowercase());
            out.push(c.to_ascii_uppercase());
            out.push(']');
        } else {
            out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
        }
    }
    out
}

/// The CEL expression for `rule`; `next` numbers the regexp names.
fn cel(rule: &Rule, next: &mut usize) -> Result<String, String> {
    Ok(match rule {
        Rule::Matcher { name, args } => {
            let mut name_regexp = || {
                *next += 1;
                format!("'{NAME}_{}'", *next - 1)
            };
            match check(name, args)? {
                Check::PathRegexp(pattern) => format!("path_regexp({}, {})", name_regexp(), cel_string(&pattern)),
                Check::Header { field, value } => {
                    format!("header({{{}: [{}]}})", cel_string(&field), cel_string(&value))
                }
                Check::HeaderRegexp { field, pattern } => {
                    format!("header_regexp({}, {}, {})", name_regexp(), cel_string(&field), cel_string(&pattern))
                }
            }
        }
        Rule::Not(inner) => format!("!{}", operand(inner, next)?),
        Rule::And(items) | Rule::Or(items) if items.is_empty() => return Err("has an empty `&&` or `||`".to_owned()),
        Rule::And(items) => items.iter().map(|i| operand(i, next)).collect::<Result<Vec<_>, _>>()?.join(" && "),
        Rule::Or(items) => items.iter().map(|i| operand(i, next)).collect::<Result<Vec<_>, _>>()?.join(" || "),
    })
}

/// `rule` as an operand of `!`, `&&` or `||`: parenthesised unless it is a
/// call or a negation, which bind tighter than any operator.
fn operand(rule: &Rule, next: &mut usize) -> Result<String, String> {
    let text = cel(rule, next)?;
    Ok(match rule {
        Rule::Matcher { .. } | Rule::Not(_) => text,
        Rule::And(_) | Rule::Or(_) => format!("({text})"),
    })
}

/// A single-quoted CEL string literal whose value is `text`.
///
/// The literal is printable ASCII: `\` `'` `"` are backslash-escaped, and
/// `{`, `}` and every character outside `' '..='~'` (newlines, controls,
/// non-ASCII) become `\uXXXX` or `\UXXXXXXXX`, so nothing a tenant writes
/// can close the literal, and the braces Caddy would rewrite as placeholders
/// never appear in the expression text.
pub fn cel_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '{' | '}' => push_unicode(&mut out, c),
            ' '..='~' => out.push(c),
            _ => push_unicode(&mut out, c),
        }
    }
    out.push('\'');
    out
}

fn push_unicode(out: &mut String, c: char) {
    let code = u32::from(c);
    match code {
        0..=0xFFFF => out.push_str(&format!("\\u{code:04x}")),
        _ => out.push_str(&format!("\\U{code:08x}")),
    }
}

#[cfg(test)]
#[path = "caddy_matcher_tests.rs"]
mod tests;
