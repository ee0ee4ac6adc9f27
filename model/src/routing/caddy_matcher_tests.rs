use serde_json::json;

use super::*;
use crate::routing::path_rule::PathRule;
use crate::routing::rule::parse;

fn translate(text: &str) -> Result<Value, String> {
    let rule = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    to_caddy(&rule).map(Value::Object)
}

fn path_regexp(pattern: &str) -> Value {
    json!({"path_regexp": {"name": "path_rule", "pattern": pattern}})
}

fn expression(cel: &str) -> Value {
    json!({ "expression": cel })
}

/// Every rule shape `PathRule::check` accepts, and its matcher set.
#[test]
fn path_rules_translate() {
    let cases: &[(&str, Value)] = &[
        // Path: exact, case-sensitive, regex-quoted.
        ("Path(`/`)", path_regexp("^/$")),
        ("Path(`/a.b`)", path_regexp(r"^/a\.b$")),
        ("Path(`/my-app/v1+x*`)", path_regexp(r"^/my\-app/v1\+x\*$")),
        // PathPrefix: a plain prefix (`/api` also matches `/apiv2`).
        ("PathPrefix(`/api`)", path_regexp("^/api")),
        ("PathPrefix(`/`)", path_regexp("^/")),
        ("PathPrefix(`/a(b)|c`)", path_regexp(r"^/a\(b\)\|c")),
        // PathRegexp: as written.
        ("PathRegexp(`^/v[0-9]+/`)", path_regexp("^/v[0-9]+/")),
        ("PathRegexp(`\\.(css|js)$`)", path_regexp(r"\.(css|js)$")),
        ("PathRegexp(`(?i)^/Docs`)", path_regexp("(?i)^/Docs")),
        // Several arguments: alternatives.
        ("Path(`/a`, `/b`)", path_regexp("^(?:/a|/b)$")),
        ("PathPrefix(`/a`, `/b.c`)", path_regexp(r"^(?:/a|/b\.c)")),
        ("PathRegexp(`^/a`, `b$`)", path_regexp("(?:^/a)|(?:b$)")),
        // Traefik v2 placeholders.
        ("Path(`/users/{id}`)", path_regexp("^/users/(?:[^/]+)$")),
        ("Path(`/users/{id:[0-9]+}`)", path_regexp("^/users/(?:[0-9]+)$")),
        ("Path(`/d/{y:[0-9]{4}}/{slug}.html`)", path_regexp(r"^/d/(?:[0-9]{4})/(?:[^/]+)\.html$")),
        ("PathPrefix(`/t/{tenant:[a-z]+}/`)", path_regexp("^/t/(?:[a-z]+)/")),
        ("Path(`/{a:x|y}z`)", path_regexp("^/(?:x|y)z$")),
        ("Path(`/{a:(?:x)}`, `/b/{c}`)", path_regexp("^(?:/(?:(?:x))|/b/(?:[^/]+))$")),
        // Case forms Traefik accepts.
        ("pathprefix(`/x`)", path_regexp("^/x")),
        ("PATH(`/x`)", path_regexp("^/x$")),
        ("Pathregexp(`^/x`)", path_regexp("^/x")),
        // Double-quoted strings and their escapes.
        (r#"Path("/a\"b")"#, path_regexp("^/a\"b$")),
        (r#"Path("/tab\there")"#, path_regexp("^/tab\there$")),
        (r#"PathRegexp("^/\\d+$")"#, path_regexp(r"^/\d+$")),
        (r#"Path("/\u00e9t\xe9")"#, path_regexp("^/été$")),
        // Operators: one CEL expression.
        (
            "PathPrefix(`/api`) && !PathPrefix(`/api/admin`)",
            expression("path_regexp('path_rule_0', '^/api') && !path_regexp('path_rule_1', '^/api/admin')"),
        ),
        (
            "Path(`/a`) || PathPrefix(`/b`)",
            expression("path_regexp('path_rule_0', '^/a$') || path_regexp('path_rule_1', '^/b')"),
        ),
        ("!Path(`/x`)", expression("!path_regexp('path_rule_0', '^/x$')")),
        ("!!Path(`/x`)", expression("!!path_regexp('path_rule_0', '^/x$')")),
        (
            "(Path(`/a`) || Path(`/b`)) && !(PathPrefix(`/c`) && PathRegexp(`d$`))",
            expression(
                "(path_regexp('path_rule_0', '^/a$') || path_regexp('path_rule_1', '^/b$')) && \
                 !(path_regexp('path_rule_2', '^/c') && path_regexp('path_rule_3', 'd$'))",
            ),
        ),
        (
            "Path(`/a`) || Path(`/b`) && !Path(`/c`)",
            expression(
                "path_regexp('path_rule_0', '^/a$') || \
                 (path_regexp('path_rule_1', '^/b$') && !path_regexp('path_rule_2', '^/c$'))",
            ),
        ),
        (
            "PathPrefix(`/{v:v[0-9]}`, `/x`) && PathRegexp(`[']`)",
            expression("path_regexp('path_rule_0', '^(?:/(?:v[0-9])|/x)') && path_regexp('path_rule_1', '[\\']')"),
        ),
        // A CEL string literal never holds a brace, a quote or a newline as is.
        (
            "PathRegexp(\"^/\\\\{ab}\\n'\\\"\") && !Path(`/`)",
            expression(
                "path_regexp('path_rule_0', '^/\\\\\\u007bab\\u007d\\u000a\\'\\\"') && !path_regexp('path_rule_1', '^/$')",
            ),
        ),
    ];
    for (text, expected) in cases {
        assert!(PathRule::check(text).is_ok(), "{text}: {:?}", PathRule::check(text));
        assert_eq!(translate(text).as_ref(), Ok(expected), "{text}");
    }
}

/// Matchers `PathRule::check` refuses today but the spec allows in a path
/// rule; the edge can serve them.
#[test]
fn header_and_host_header_translate() {
    let cases: &[(&str, Value)] = &[
        ("Header(`X-Env`, `staging`)", json!({"header": {"X-Env": ["staging"]}})),
        ("header(`x-env`, ``)", json!({"header": {"x-env": [""]}})),
        ("Header(`X-A`, `a\\b`)", json!({"header": {"X-A": ["a\\b"]}})),
        // `*` is a wildcard and `{...}` a placeholder in Caddy's header matcher.
        ("Header(`X-A`, `*`)", json!({"header_regexp": {"X-A": {"name": "path_rule", "pattern": r"^\*$"}}})),
        (
            "Header(`X-A`, `{http.request.host}`)",
            json!({"header_regexp": {"X-A": {"name": "path_rule", "pattern": r"^\{http\.request\.host\}$"}}}),
        ),
        (
            "HeaderRegexp(`X-A`, `^v[12]$`)",
            json!({"header_regexp": {"X-A": {"name": "path_rule", "pattern": "^v[12]$"}}}),
        ),
        (
            "HostHeader(`Shop.Example.com`)",
            json!({"header_regexp": {"Host": {"name": "path_rule",
                "pattern": r"^(?:[sS][hH][oO][pP]\.[eE][xX][aA][mM][pP][lL][eE]\.[cC][oO][mM]|[sS][hH][oO][pP]\.[eE][xX][aA][mM][pP][lL][eE]\.[cC][oO][mM]\.)(?::[^:]*)?$"}}}),
        ),
        (
            "HostHeader(`a.`, `b1`)",
            json!({"header_regexp": {"Host": {"name": "path_rule",
                "pattern": r"^(?:[aA]\.|[aA]\.\.|[aA]|[bB]1|[bB]1\.)(?::[^:]*)?$"}}}),
        ),
        (
            "PathPrefix(`/api`) && Header(`X-Env`, `staging`) && !HeaderRegexp(`Accept`, `json`)",
            expression(
                "path_regexp('path_rule_0', '^/api') && header({'X-Env': ['staging']}) && \
                 !header_regexp('path_rule_1', 'Accept', 'json')",
            ),
        ),
        (
            "Path(`/h`) && Header(`X`, `') || true || ('{a}`)",
            expression(
                "path_regexp('path_rule_0', '^/h$') && \
                 header_regexp('path_rule_1', 'X', '^\\'\\\\) \\\\|\\\\| true \\\\|\\\\| \\\\(\\'\\\\\\u007ba\\\\\\u007d$')",
            ),
        ),
        (
            "Path(`/h`) && Header(`X`, `'])}) || true || header({'X': ['`)",
            expression(
                "path_regexp('path_rule_0', '^/h$') && header_regexp('path_rule_1', 'X', \
                 '^\\'\\\\]\\\\)\\\\\\u007d\\\\) \\\\|\\\\| true \\\\|\\\\| header\\\\(\\\\\\u007b\\'X\\': \\\\[\\'$')",
            ),
        ),
        (
            "Path(`/h`) && Header(`X`, `it's`)",
            expression("path_regexp('path_rule_0', '^/h$') && header({'X': ['it\\'s']})"),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(translate(text).as_ref(), Ok(expected), "{text}");
    }
}

#[test]
fn untranslatable_rules_are_refused_with_the_reason() {
    let cases = [
        // gorilla/mux (Traefik v2) refuses these templates too.
        ("Path(`/a{`)", "unbalanced braces"),
        ("Path(`/a}`)", "unbalanced braces"),
        ("PathPrefix(`/{}`)", "without a name or a pattern"),
        ("Path(`/{:x}`)", "without a name or a pattern"),
        ("Path(`/{x:}`)", "without a name or a pattern"),
        ("Path(`/{x:(a|b)}`)", "capturing group"),
        ("Path(`/{x:[}`)", "not a valid regular expression"),
        ("Path(`/{x:[}]}`)", "unbalanced braces"),
        ("Path(`a`)", "must start with `/`"),
        // Rust reads these, Go's regexp refuses or reads them otherwise.
        ("PathRegexp(`(?x)a b`)", "flag `x`"),
        ("PathRegexp(`(?u)a`)", "flag `u`"),
        ("PathRegexp(`(?R)a`)", "flag `R`"),
        ("PathRegexp(`\\u0041`)", "escape `\\u0041`"),
        ("PathRegexp(`\\U00000041`)", "escape"),
        ("PathRegexp(`\\u{41}`)", "escape"),
        ("PathRegexp(`(?<n>a)`)", "(?P<n>"),
        ("PathRegexp(`[a[b]]`)", "nests the class"),
        ("PathRegexp(`[a-z&&[^aeiou]]`)", "class operation"),
        ("PathRegexp(`[a--b]`)", "class operation"),
        ("PathRegexp(`a**`)", "stacks repetitions"),
        ("PathRegexp(`a{2}{3}`)", "stacks repetitions"),
        ("PathRegexp(`a{1001}`)", "more than 1000"),
        ("PathRegexp(`\\b{start}a`)", "literal text"),
        ("PathRegexp(`\\<a`)", "literal text"),
        ("PathRegexp(`\\p{greek}`)", "Unicode class `greek`"),
        ("PathRegexp(`\\p{Letter}`)", "Unicode class `Letter`"),
        ("PathRegexp(`\\p{sc=Greek}`)", "Unicode class"),
        ("PathRegexp(`(?P<a.b>x)`)", "names a group"),
        ("PathRegexp(`(?=a)`)", "not a valid regular expression"),
        ("PathRegexp(`a`, `b)|(c`)", "not a valid regular expression"),
        ("Path(`/{id:\\u0041}`)", "escape"),
        // Matchers the edge cannot or may not serve.
        ("Path(`/`) && QueryRegexp(`a`, `b`)", "QueryRegexp"),
        ("Path(`/`) && ALPN(`h2`)", "TCP routers"),
        ("Path(`/`) || Host(`x.example.com`)", "play sets the host"),
        ("Path(`/`) || HostRegexp(`.*`)", "play sets the host"),
        ("Path(`/`) && HostSNI(`*`)", "TCP routers"),
        ("Path(`/`) && Method(`GET`)", "Method"),
        ("Path(`/`) && Headers(`X`, `y`)", "Headers"),
        ("Path(`/`) && ClientIP(`10.0.0.0/8`)", "ClientIP"),
        ("Path(`/`) && Query(`a=b`)", "Query"),
        ("Header(`X`)", "header name and a value"),
        ("Header(`X`, `a`, `b`)", "header name and a value"),
        ("Header(`Host`, `x`)", "never matches in Traefik"),
        ("HeaderRegexp(`transfer-encoding`, `chunked`)", "never matches in Traefik"),
        ("Header(`Bad Name`, `x`)", "not a header name"),
        ("HeaderRegexp(`X`, `(?x)a`)", "flag `x`"),
        ("HostHeader(`*.example.com`)", "not a host name"),
        ("HostHeader(``)", "not a host name"),
    ];
    for (text, expected) in cases {
        let err = translate(text).unwrap_err();
        assert!(err.contains(expected), "{text}: {err}");
    }
}

#[test]
fn go_compatible_regexps_are_accepted() {
    for pattern in [
        r"^/\p{Greek}+$",
        r"\pL\PN\p{Lu}[\p{Han}\d]",
        r"(?P<year>[0-9]{4})/(?i:x)(?s)(?m)(?U)a*?b{1000}",
        r"[[:alpha:]][[:^digit:]]\x41\x{1F600}\.\/\-\a\f\t\n\r\v\A\z\b\B",
        r"[\]a-]|[^]]|(?:a*)*|a{0,5}|()",
    ] {
        assert!(go_regexp::check(pattern).is_ok(), "{pattern}: {:?}", go_regexp::check(pattern));
    }
    assert_eq!(go_regexp::check("(a)(?P<b>c)(?:d)"), Ok(2));
}

#[test]
fn hand_built_rules_are_bounded() {
    let leaf = Rule::Matcher { name: "Path", args: vec!["/a".to_owned()] };
    let mut deep = leaf.clone();
    for _ in 0..=MAX_DEPTH {
        deep = Rule::Not(Box::new(deep));
    }
    assert!(to_caddy(&deep).unwrap_err().contains("nested"));
    assert!(to_caddy(&Rule::And(Vec::new())).unwrap_err().contains("empty"));
    assert!(to_caddy(&Rule::Matcher { name: "PathPrefix", args: Vec::new() }).unwrap_err().contains("without"));
    let long = Rule::Or(vec![
        leaf,
        Rule::Matcher { name: "Path", args: vec![format!("/{}", "\u{e9}".repeat(MAX_EXPRESSION / 6))] },
    ]);
    assert!(to_caddy(&long).unwrap_err().contains("too long"));
}

/// Alternating `||` and `&&` around `Path(/d) && !Path(/x)`, so nothing
/// flattens: a rule `levels + 2` deep.
fn alternating(levels: usize) -> String {
    let mut rule = "Path(`/d`) && !Path(`/x`)".to_owned();
    for level in 0..levels {
        rule = match level % 2 {
            0 => format!("({rule}) || Path(`/never`)"),
            _ => format!("({rule}) && PathPrefix(`/`)"),
        };
    }
    rule
}

#[test]
fn rules_nested_deeper_than_cel_go_parses_are_refused() {
    assert!(PathRule::check(&alternating(MAX_DEPTH - 2)).is_ok());
    let err = PathRule::check(&alternating(MAX_DEPTH - 1)).unwrap_err();
    assert!(err.contains("cannot be served by the edge: is nested more than 32 deep"), "{err}");
}

#[test]
fn the_output_never_names_the_host_key() {
    for text in ["Path(`/`)", "HostHeader(`x`)", "Path(`/`) || HostHeader(`x`)", "Header(`X`, `y`)"] {
        let set = translate(text).unwrap();
        assert!(set.get("host").is_none(), "{text}: {set}");
        assert_eq!(set.as_object().map(Map::len), Some(1), "{text}: {set}");
    }
}

/// Reads back a literal written by [`cel_string`] as CEL's lexer does for
/// the escapes it uses; `None` when the literal would end early or holds
/// anything else.
fn cel_unquote(literal: &str) -> Option<String> {
    let inner = literal.strip_prefix('\'')?.strip_suffix('\'')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '\n' | '\r' => return None,
            '\\' => match chars.next()? {
                e @ ('\\' | '\'' | '"') => out.push(e),
                e @ ('u' | 'U') => {
                    let digits: String = chars.by_ref().take(if e == 'u' { 4 } else { 8 }).collect();
                    out.push(char::from_u32(u32::from_str_radix(&digits, 16).ok()?)?);
                }
                _ => return None,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

#[test]
fn cel_strings_hold_hostile_text() {
    let attacks = [
        "",
        "plain /path-1",
        "'",
        "\"",
        "\\",
        "\\'",
        "'); true || ('",
        "') || true || path_regexp('",
        "\\\\' || true || '",
        "\"\"\" || true || \"\"\"",
        "line\nbreak\r\n",
        "nul\0byte\u{7}\u{1b}[0m\u{7f}",
        "{http.request.host}",
        "\\{http.request.host}",
        "{a}{b}}{",
        "caddyPlaceholder(request, \"x\")",
        "é ☃ 😀 \u{2028}\u{2029}\u{feff}",
        "`backtick` ?",
    ];
    for text in attacks {
        let literal = cel_string(text);
        assert!(literal.bytes().all(|b| (b' '..=b'~').contains(&b)), "{text:?}: {literal}");
        assert!(!literal.contains(['{', '}']), "{text:?}: {literal}");
        assert_eq!(cel_unquote(&literal).as_deref(), Some(text), "{text:?}: {literal}");
    }
    assert_eq!(cel_string("a'b\"c\\d{e}\n"), r#"'a\'b\"c\\d\u007be\u007d\u000a'"#);
    assert_eq!(cel_string("😀"), r"'\U0001f600'");
}
