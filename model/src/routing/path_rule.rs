//! `svc/path_rule`: a Traefik rule (parsed by [`super::rule`]) that narrows
//! a route by path, and that the edge can serve ([`super::caddy_matcher`]).
//! Kept apart from the parser so the parser and the translation do not
//! import each other.

use std::fmt;

use serde_json::{Map, Value};

use super::caddy_matcher::to_caddy;
use super::rule::{Rule, parse};

/// Matchers a `svc/path_rule` may not use: play sets the host itself, and
/// the rule only narrows by path.
pub const PATH_RULE_FORBIDDEN: &[&str] = &[
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
    "Query",
    "QueryRegexp",
];

/// A `svc/path_rule` that passed [`PathRule::check`]: the parsed rule and
/// the Caddy matcher set serving it, made together and only there.
///
/// Invariants: holding one means the rule was checked (there is no other
/// constructor), and [`PathRule::caddy_matcher`] is [`to_caddy`] of
/// [`PathRule::rule`], without a `host` key. Validation makes it once per
/// document (the Compose model carries it), and routes and the edge use it
/// as it is: the rule text is never parsed, nor translated, again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRule {
    rule: Rule,
    matcher: Map<String, Value>,
}

impl PathRule {
    /// Checks a non-empty `svc/path_rule`: it parses, holds a `Path`,
    /// `PathPrefix` or `PathRegexp` matcher and no host, header, method,
    /// query or client matcher; paths start with `/`; every `PathRegexp`
    /// compiles; and the edge can serve it ([`to_caddy`] translates it), so
    /// a rule Caddy cannot load is refused at validation, never when routes
    /// are applied.
    pub fn check(text: &str) -> Result<PathRule, String> {
        let rule = checked_rule(text)?;
        let matcher = to_caddy(&rule).map_err(|e| format!("cannot be served by the edge: {e}"))?;
        Ok(PathRule { rule, matcher })
    }

    /// The rule as parsed.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The Caddy matcher set serving the rule, without a host: the edge adds
    /// the route's host beside it, so the rule can only narrow the host.
    pub fn caddy_matcher(&self) -> &Map<String, Value> {
        &self.matcher
    }
}

/// The canonical text of the rule (as [`Rule`] prints it).
impl fmt::Display for PathRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.rule.fmt(f)
    }
}

/// The checks of [`PathRule::check`] that come before the translation.
fn checked_rule(text: &str) -> Result<Rule, String> {
    let rule = parse(text).map_err(|e| format!("is not a valid routing rule: {e}"))?;
    let mut problems = Vec::new();
    let mut has_path = false;
    rule.visit(&mut |node| {
        let Rule::Matcher { name, args } = node else { return };
        if PATH_RULE_FORBIDDEN.contains(name) {
            problems.push(format!(
                "must not use the {name} matcher (play sets the host; a path rule narrows by path only)"
            ));
            return;
        }
        has_path = true;
        for arg in args {
            if *name == "PathRegexp" {
                if let Err(e) = super::regex_cache::compiled(arg) {
                    problems.push(format!("PathRegexp `{arg}` is not a valid regular expression: {e}"));
                }
            } else if !arg.starts_with('/') {
                problems.push(format!("{name} `{arg}` must start with `/`"));
            }
        }
    });
    if !has_path {
        problems.push("needs a Path, PathPrefix or PathRegexp matcher".to_owned());
    }
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    Ok(rule)
}
