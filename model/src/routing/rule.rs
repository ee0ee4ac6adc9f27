//! A parser for Traefik routing rules (the v2 and v3 grammar), used to
//! check `svc/path_rule` and to re-print a rule canonically when play
//! composes `Host(`...`) && (<rule>)` for a Playground.
//!
//! Grammar (Traefik parses rules as Go expressions through
//! vulcand/predicate):
//!
//! ```text
//! or      := and ("||" and)*
//! and     := unary ("&&" unary)*
//! unary   := "!" unary | primary
//! primary := "(" or ")" | MATCHER "(" STRING ("," STRING)* ")"
//! STRING  := `raw` | "interpreted with \\ \" \n \t \r \xHH \uHHHH escapes"
//! ```
//!
//! Matcher names are accepted in the case forms Traefik registers: the
//! canonical name (`PathPrefix`), all lowercase (`pathprefix`), all
//! uppercase (`PATHPREFIX`) and capitalised lowercase (`Pathprefix`).
//! `pathPrefix` is not one of them, so it is an unknown matcher.

use std::fmt;

/// Every matcher of Traefik v2 and v3 (HTTP and TCP routers).
pub const MATCHERS: &[&str] = &[
    "ALPN",
    "ClientIP",
    "Header",
    "HeaderRegexp",
    "Headers",
    "HeadersRegexp",
    "Host",
    "HostHeader",
    "HostRegexp",
    "HostSNI",
    "HostSNIRegexp",
    "Method",
    "Path",
    "PathPrefix",
    "PathRegexp",
    "Query",
    "QueryRegexp",
];

/// Deepest nesting of parentheses and `!`.
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// `name` is canonical (`PathPrefix`, whatever case form was written).
    Matcher {
        name: &'static str,
        args: Vec<String>,
    },
    Not(Box<Rule>),
    /// At least two operands, none of them an `And` (flattened).
    And(Vec<Rule>),
    /// At least two operands, none of them an `Or` (flattened).
    Or(Vec<Rule>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// Byte offset in the rule text.
    pub position: usize,
    pub message: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.position)
    }
}

impl std::error::Error for RuleError {}

/// The canonical name for `name` if it is a matcher in a case form Traefik accepts.
pub fn canonical_matcher(name: &str) -> Option<&'static str> {
    MATCHERS.iter().copied().find(|m| {
        let lower = m.to_ascii_lowercase();
        let mut title = lower.clone();
        title[..1].make_ascii_uppercase();
        name == *m || name == lower || name == m.to_ascii_uppercase() || name == title
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    And,
    Or,
    Not,
    Open,
    Close,
    Comma,
    Ident(String),
    Str(String),
}

fn tokenize(text: &str) -> Result<Vec<(usize, Token)>, RuleError> {
    let err = |position: usize, message: &str| RuleError { position, message: message.to_owned() };
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let token = match c {
            c if c.is_whitespace() => continue,
            '&' if chars.next_if(|&(_, n)| n == '&').is_some() => Token::And,
            '|' if chars.next_if(|&(_, n)| n == '|').is_some() => Token::Or,
            '&' | '|' => return Err(err(at, "expected `&&` or `||`")),
            '!' => Token::Not,
            '(' => Token::Open,
            ')' => Token::Close,
            ',' => Token::Comma,
            '`' => {
                let start = at + 1;
                let len = text[start..].find('`').ok_or_else(|| err(at, "unclosed `` ` `` string"))?;
                while chars.next_if(|&(i, _)| i < start + len + 1).is_some() {}
                Token::Str(text[start..start + len].to_owned())
            }
            '"' => Token::Str(quoted(&mut chars, at)?),
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = String::from(c);
                while let Some((_, n)) = chars.next_if(|&(_, n)| n.is_ascii_alphanumeric() || n == '_') {
                    name.push(n);
                }
                Token::Ident(name)
            }
            _ => return Err(err(at, &format!("unexpected character `{c}`"))),
        };
        tokens.push((at, token));
    }
    Ok(tokens)
}

fn quoted(chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>, open: usize) -> Result<String, RuleError> {
    let err = |position: usize, message: &str| RuleError { position, message: message.to_owned() };
    let mut out = String::new();
    loop {
        let Some((at, c)) = chars.next() else {
            return Err(err(open, "unclosed `\"` string"));
        };
        match c {
            '"' => return Ok(out),
            '\n' => return Err(err(at, "newline in `\"` string")),
            '\\' => {
                let Some((_, e)) = chars.next() else {
                    return Err(err(open, "unclosed `\"` string"));
                };
                match e {
                    '\\' => out.push('\\'),
                    '"' => out.push('"'),
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'x' | 'u' => {
                        let digits = if e == 'x' { 2 } else { 4 };
                        let mut code = 0u32;
                        for _ in 0..digits {
                            let d = chars.next().and_then(|(_, h)| h.to_digit(16));
                            code = code * 16 + d.ok_or_else(|| err(at, "bad hexadecimal escape"))?;
                        }
                        out.push(char::from_u32(code).ok_or_else(|| err(at, "escape is not a character"))?);
                    }
                    _ => return Err(err(at, &format!("unsupported escape `\\{e}`"))),
                }
            }
            c => out.push(c),
        }
    }
}

struct Parser {
    tokens: Vec<(usize, Token)>,
    pos: usize,
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|(_, t)| t)
    }

    fn at(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.end, |(at, _)| *at)
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, RuleError> {
        Err(RuleError { position: self.at(), message: message.into() })
    }

    fn expect(&mut self, token: &Token, what: &str) -> Result<(), RuleError> {
        if self.peek() == Some(token) {
            self.pos += 1;
            Ok(())
        } else {
            self.fail(format!("expected {what}"))
        }
    }

    fn or(&mut self, depth: usize) -> Result<Rule, RuleError> {
        let mut operands = vec![self.and(depth)?];
        while self.peek() == Some(&Token::Or) {
            self.pos += 1;
            operands.push(self.and(depth)?);
        }
        Ok(flatten(operands, true))
    }

    fn and(&mut self, depth: usize) -> Result<Rule, RuleError> {
        let mut operands = vec![self.unary(depth)?];
        while self.peek() == Some(&Token::And) {
            self.pos += 1;
            operands.push(self.unary(depth)?);
        }
        Ok(flatten(operands, false))
    }

    fn unary(&mut self, depth: usize) -> Result<Rule, RuleError> {
        if depth >= MAX_DEPTH {
            return self.fail(format!("rule nested more than {MAX_DEPTH} deep"));
        }
        match self.peek() {
            Some(Token::Not) => {
                self.pos += 1;
                Ok(Rule::Not(Box::new(self.unary(depth + 1)?)))
            }
            Some(Token::Open) => {
                self.pos += 1;
                let inner = self.or(depth + 1)?;
                self.expect(&Token::Close, "`)`")?;
                Ok(inner)
            }
            Some(Token::Ident(name)) => {
                let Some(canonical) = canonical_matcher(name) else {
                    return self.fail(format!("unknown matcher `{name}`"));
                };
                self.pos += 1;
                self.expect(&Token::Open, &format!("`(` after `{canonical}`"))?;
                let mut args = Vec::new();
                loop {
                    match self.peek() {
                        Some(Token::Str(s)) => {
                            args.push(s.clone());
                            self.pos += 1;
                        }
                        _ => {
                            return self.fail(format!(
                                "expected a string argument of `{canonical}` in backticks or double quotes"
                            ));
                        }
                    }
                    match self.peek() {
                        Some(Token::Comma) => self.pos += 1,
                        Some(Token::Close) => {
                            self.pos += 1;
                            break;
                        }
                        _ => return self.fail("expected `,` or `)`"),
                    }
                }
                Ok(Rule::Matcher { name: canonical, args })
            }
            Some(_) => self.fail("expected a matcher, `!` or `(`"),
            None => self.fail("unexpected end of rule"),
        }
    }
}

fn flatten(operands: Vec<Rule>, or: bool) -> Rule {
    if operands.len() == 1 {
        return operands.into_iter().next().unwrap_or(Rule::Or(Vec::new()));
    }
    let mut flat = Vec::with_capacity(operands.len());
    for operand in operands {
        match operand {
            Rule::Or(inner) if or => flat.extend(inner),
            Rule::And(inner) if !or => flat.extend(inner),
            other => flat.push(other),
        }
    }
    if or { Rule::Or(flat) } else { Rule::And(flat) }
}

/// Parses a routing rule.
pub fn parse(text: &str) -> Result<Rule, RuleError> {
    let tokens = tokenize(text)?;
    let mut parser = Parser { tokens, pos: 0, end: text.len() };
    let rule = parser.or(0)?;
    if parser.pos < parser.tokens.len() {
        return parser.fail("unexpected text after the rule");
    }
    Ok(rule)
}

impl Rule {
    /// Canonical names of every matcher in the rule, in order.
    pub fn matchers(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        self.visit(&mut |rule| {
            if let Rule::Matcher { name, .. } = rule {
                out.push(*name);
            }
        });
        out
    }

    /// Calls `f` on every node, depth first.
    pub fn visit(&self, f: &mut dyn FnMut(&Rule)) {
        f(self);
        match self {
            Rule::Matcher { .. } => {}
            Rule::Not(inner) => inner.visit(f),
            Rule::And(items) | Rule::Or(items) => items.iter().for_each(|i| i.visit(f)),
        }
    }
}

fn write_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    if !s.contains('`') && !s.chars().any(char::is_control) {
        return write!(f, "`{s}`");
    }
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            c if c.is_control() => write!(f, "\\u{:04x}", c as u32)?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

impl fmt::Display for Rule {
    /// Canonical form: canonical matcher names, backtick strings where
    /// possible, single spaces around operators, parentheses only where
    /// precedence needs them. `parse(rule.to_string()) == rule`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Matcher { name, args } => {
                write!(f, "{name}(")?;
                for (i, arg) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_string(f, arg)?;
                }
                f.write_str(")")
            }
            Rule::Not(inner) => match **inner {
                Rule::And(_) | Rule::Or(_) => write!(f, "!({inner})"),
                _ => write!(f, "!{inner}"),
            },
            Rule::And(items) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" && ")?;
                    }
                    match item {
                        Rule::Or(_) => write!(f, "({item})")?,
                        _ => write!(f, "{item}")?,
                    }
                }
                Ok(())
            }
            Rule::Or(items) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" || ")?;
                    }
                    write!(f, "{item}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
#[path = "rule_tests.rs"]
mod tests;
