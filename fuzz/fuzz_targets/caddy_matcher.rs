//! The Caddy matcher translation (`play_model::routing::caddy_matcher`) of
//! every routing rule the parser accepts, path rules or not, and
//! `cel_string` on arbitrary text.
//!
//! Invariants (the module's own, checked on its output):
//! - no panic;
//! - a translation is one matcher set with exactly one key, never `host`:
//!   `path_regexp`, `header`, `header_regexp` or `expression`;
//! - a CEL expression is at most 50,000 bytes of printable ASCII; every
//!   string literal in it reads back (as CEL's lexer reads it) without a
//!   brace; outside the literals a `{` only opens a map literal (`{'`), so
//!   Caddy finds no placeholder to rewrite; and the expression has exactly
//!   the rule's boolean structure (`!`, `&&`, `||` with CEL's precedence),
//!   one matcher call per rule matcher, in order, with regexp names
//!   `path_rule_0`, `path_rule_1`, ...;
//! - semantics where the rule is plain text: `Path(p)` matches `p` and not
//!   `p` plus more, `PathPrefix(p)` matches `p` and `p` plus more,
//!   `Header(f, v)` matches `v`, `HostHeader(h)` matches `h` in any ASCII
//!   case, with a port, with a trailing dot;
//! - `cel_string(s)` is printable ASCII without braces and reads back as `s`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use play_model::routing::caddy_matcher::{cel_string, to_caddy};
use play_model::routing::rule::{parse, Rule};
use regex::RegexBuilder;
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let literal = cel_string(text);
    assert!(literal.bytes().all(|b| (b' '..=b'~').contains(&b)), "{literal}");
    assert!(!literal.contains(['{', '}']), "{literal}");
    let mut lexer = Lexer::new(&literal);
    assert_eq!(lexer.string().as_deref(), Some(text), "{literal}");
    assert_eq!(lexer.at, literal.len(), "{literal}");

    let Ok(rule) = parse(text) else { return };
    let Ok(set) = to_caddy(&rule) else { return };
    assert_eq!(set.len(), 1, "{set:?}");
    assert!(!set.contains_key("host"), "{set:?}");
    match &rule {
        Rule::Matcher { name, args } => native(name, args, &set),
        _ => {
            let expression = set.get("expression").and_then(Value::as_str).expect("an expression");
            expression_matches(&rule, expression);
        }
    }
});

/// A single matcher's native Caddy matcher, and its meaning where the
/// rule is plain text.
fn native(name: &str, args: &[String], set: &Map<String, Value>) {
    let (key, value) = set.iter().next().expect("one key");
    let pattern = match key.as_str() {
        "path_regexp" => {
            assert_eq!(value["name"], "path_rule", "{set:?}");
            value["pattern"].as_str().expect("a pattern")
        }
        "header" => {
            assert_eq!(name, "Header", "{set:?}");
            let (field, value) = (&args[0], &args[1]);
            assert!(!value.contains(['*', '{', '}']), "{set:?}");
            assert_eq!(set["header"][field.as_str()], serde_json::json!([value]), "{set:?}");
            return;
        }
        "header_regexp" => {
            let (_, inner) = value.as_object().and_then(|m| m.iter().next()).expect("one header");
            assert_eq!(inner["name"], "path_rule", "{set:?}");
            inner["pattern"].as_str().expect("a pattern")
        }
        other => panic!("unexpected matcher {other} for {name}: {set:?}"),
    };
    let regex = RegexBuilder::new(pattern).size_limit(1 << 22).build().unwrap_or_else(|e| panic!("{pattern}: {e}"));
    let plain = |a: &String| !a.contains(['{', '}']);
    match name {
        "Path" => {
            for arg in args.iter().filter(|a| plain(a)) {
                assert!(regex.is_match(arg), "{pattern} vs {arg:?}");
                let longer = format!("{arg}\u{1}");
                if args.iter().all(|a| plain(a) && *a != longer) {
                    assert!(!regex.is_match(&longer), "{pattern} vs {longer:?}");
                }
            }
        }
        "PathPrefix" => {
            for arg in args.iter().filter(|a| plain(a)) {
                assert!(regex.is_match(arg), "{pattern} vs {arg:?}");
                assert!(regex.is_match(&format!("{arg}/more")), "{pattern} vs {arg:?}/more");
            }
        }
        "Header" => assert!(regex.is_match(&args[1]), "{pattern} vs {:?}", args[1]),
        "HostHeader" => {
            for host in args {
                for form in [host.clone(), host.to_ascii_uppercase(), format!("{host}:8443")] {
                    assert!(regex.is_match(&form), "{pattern} vs {form:?}");
                }
                if !host.ends_with('.') {
                    assert!(regex.is_match(&format!("{host}.")), "{pattern} vs {host:?}.");
                }
                // Unless another argument names it.
                let norm =
                    |h: &str| h.to_ascii_lowercase().strip_suffix('.').map_or(h.to_ascii_lowercase(), str::to_owned);
                let longer = format!("a{host}");
                if args.iter().all(|a| norm(a) != norm(&longer)) {
                    assert!(!regex.is_match(&longer), "{pattern} vs {longer:?}");
                }
            }
        }
        _ => {}
    }
}

/// The boolean structure of a rule, or of an expression read back:
/// matchers become their position.
#[derive(Debug, PartialEq, Eq)]
enum Tree {
    Call(usize),
    Not(Box<Tree>),
    And(Vec<Tree>),
    Or(Vec<Tree>),
}

fn tree(rule: &Rule, next: &mut usize) -> Tree {
    match rule {
        Rule::Matcher { .. } => {
            *next += 1;
            Tree::Call(*next - 1)
        }
        Rule::Not(inner) => Tree::Not(Box::new(tree(inner, next))),
        Rule::And(items) => Tree::And(items.iter().map(|i| tree(i, next)).collect()),
        Rule::Or(items) => Tree::Or(items.iter().map(|i| tree(i, next)).collect()),
    }
}

fn expression_matches(rule: &Rule, expression: &str) {
    assert!(expression.len() <= 50_000, "{} bytes", expression.len());
    assert!(expression.bytes().all(|b| (b' '..=b'~').contains(&b)), "{expression}");
    let mut lexer = Lexer::new(expression);
    let read = lexer.or().unwrap_or_else(|| panic!("cannot read back {expression} at byte {}", lexer.at));
    lexer.space();
    assert_eq!(lexer.at, expression.len(), "text after the expression: {expression}");
    assert_eq!(read, tree(rule, &mut 0), "{expression}");
    assert_eq!(lexer.calls, rule.matchers().len());
}

/// Reads back the CEL subset `cel` writes: `||`, `&&`, `!`, parentheses,
/// and calls `path_regexp('name', 'pattern')`, `header({'field': ['value']})`,
/// `header_regexp('name', 'field', 'pattern')` with single-quoted literals.
struct Lexer<'a> {
    text: &'a [u8],
    at: usize,
    calls: usize,
    names: usize,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Lexer { text: text.as_bytes(), at: 0, calls: 0, names: 0 }
    }

    fn space(&mut self) {
        while self.text.get(self.at) == Some(&b' ') {
            self.at += 1;
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        self.space();
        if self.text[self.at..].starts_with(token.as_bytes()) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Option<Tree> {
        let mut items = vec![self.and()?];
        while self.eat("||") {
            items.push(self.and()?);
        }
        Some(if items.len() == 1 { items.pop()? } else { Tree::Or(items) })
    }

    fn and(&mut self) -> Option<Tree> {
        let mut items = vec![self.unary()?];
        while self.eat("&&") {
            items.push(self.unary()?);
        }
        Some(if items.len() == 1 { items.pop()? } else { Tree::And(items) })
    }

    fn unary(&mut self) -> Option<Tree> {
        if self.eat("!") {
            return Some(Tree::Not(Box::new(self.unary()?)));
        }
        if self.eat("(") {
            let inner = self.or()?;
            // A parenthesised operand is an `&&` or `||`: anything else
            // needs none, and `cel` writes none.
            if !matches!(inner, Tree::And(_) | Tree::Or(_)) || !self.eat(")") {
                return None;
            }
            return Some(inner);
        }
        self.call()
    }

    /// A `path_rule_<n>` name, numbered in rule order.
    fn name(&mut self) -> Option<()> {
        let name = self.string()?;
        (name == format!("path_rule_{}", self.names)).then(|| self.names += 1)
    }

    fn call(&mut self) -> Option<Tree> {
        if self.eat("path_regexp(") {
            self.name()?;
            self.eat(",").then_some(())?;
            self.string()?;
        } else if self.eat("header_regexp(") {
            self.name()?;
            self.eat(",").then_some(())?;
            self.string()?;
            self.eat(",").then_some(())?;
            self.string()?;
        } else if self.eat("header({") {
            self.string()?;
            self.eat(": [").then_some(())?;
            self.string()?;
            self.eat("]}").then_some(())?;
        } else {
            return None;
        }
        self.eat(")").then_some(())?;
        self.calls += 1;
        Some(Tree::Call(self.calls - 1))
    }

    /// A single-quoted literal with the escapes `cel_string` writes, as
    /// CEL's lexer reads it; `None` if it holds a brace, a raw quote or
    /// line break, or another escape.
    fn string(&mut self) -> Option<String> {
        self.space();
        if self.text.get(self.at) != Some(&b'\'') {
            return None;
        }
        self.at += 1;
        let mut out = String::new();
        loop {
            let c = *self.text.get(self.at)?;
            self.at += 1;
            match c {
                b'\'' => return Some(out),
                b'{' | b'}' | b'\n' | b'\r' => return None,
                b'\\' => {
                    let e = *self.text.get(self.at)?;
                    self.at += 1;
                    match e {
                        b'\\' | b'\'' | b'"' => out.push(char::from(e)),
                        b'u' | b'U' => {
                            let n = if e == b'u' { 4 } else { 8 };
                            let digits = std::str::from_utf8(self.text.get(self.at..self.at + n)?).ok()?;
                            if !digits.bytes().all(|d| d.is_ascii_hexdigit()) {
                                return None;
                            }
                            self.at += n;
                            out.push(char::from_u32(u32::from_str_radix(digits, 16).ok()?)?);
                        }
                        _ => return None,
                    }
                }
                c => out.push(char::from(c)),
            }
        }
    }
}
