//! `svc/<key>` service labels and their value rules (spec: "Compose
//! template extension").
//!
//! Values are checked as strings: in the map form a YAML `true` or `8080`
//! reads as `"true"` / `"8080"`, exactly like the list form
//! `svc/expose=8080`, so both forms obey the same rules. An empty value is
//! accepted for every typed label; a value holding a template reference is
//! checked at compile time, once it has its real value.

use indexmap::IndexMap;

use crate::compose::ctx::Ctx;
use crate::compose::path::Path;
use crate::routing::PathRule;

pub const LABEL_PREFIX: &str = "svc/";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelKind {
    /// Letters, digits, `_ . / -`.
    Path,
    /// `true` or `false`.
    Bool,
    /// 1..=65535, optionally prefixed `internal:` or `external:`.
    Expose,
    /// Empty, `@`, or a DNS label.
    Subdomain,
    /// A Traefik rule narrowing by path (see [`PathRule::check`]).
    PathRule,
    /// Starts with `/`.
    HealthcheckPath,
    /// An absolute container path of [`LabelKind::Path`] characters, not
    /// `/` itself, without `.` or `..` components: where a volume mounts.
    MountPath,
    /// Digits followed by `ms`, `s` or `m`.
    Duration,
    /// An integer >= 1.
    PositiveInt,
    /// Comma-separated `KEY=value`.
    BuildArgs,
    /// Any text.
    Free,
}

/// Every label of the spec's table, without the `svc/` prefix.
pub const LABELS: &[(&str, LabelKind)] = &[
    ("dockerfile", LabelKind::Path),
    ("repo_url", LabelKind::Free),
    ("source_mount", LabelKind::MountPath),
    ("branch", LabelKind::Free),
    ("subdomain", LabelKind::Subdomain),
    ("path_rule", LabelKind::PathRule),
    ("expose", LabelKind::Expose),
    ("start_command", LabelKind::Free),
    ("env_file", LabelKind::Path),
    ("production", LabelKind::Bool),
    ("zerodowntime", LabelKind::Bool),
    ("build_target", LabelKind::Free),
    ("build_args", LabelKind::BuildArgs),
    ("job_watch", LabelKind::Bool),
    ("healthcheck_path", LabelKind::HealthcheckPath),
    ("healthcheck_interval", LabelKind::Duration),
    ("healthcheck_timeout", LabelKind::Duration),
    ("healthcheck_retries", LabelKind::PositiveInt),
    ("healthcheck_start_period", LabelKind::Duration),
];

pub fn label_kind(key: &str) -> Option<LabelKind> {
    LABELS.iter().find(|(k, _)| *k == key).map(|(_, kind)| *kind)
}

/// A DNS label is at most 63 characters; longer subdomains cannot route.
const MAX_SUBDOMAIN: usize = 63;

fn port_number(digits: &str) -> bool {
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && digits.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p))
}

/// The port and visibility of an `svc/expose` value (`8080`,
/// `internal:8080`); `None` when the value is not valid.
pub fn parse_expose(value: &str) -> Option<(u16, &'static str)> {
    let (visibility, digits) = match value.split_once(':') {
        Some(("internal", d)) => ("internal", d),
        Some(("external", d)) => ("external", d),
        Some(_) => return None,
        None => ("external", value),
    };
    port_number(digits).then(|| digits.parse().ok()).flatten().map(|p| (p, visibility))
}

/// Checks a literal (reference-free) value of a label of `kind`.
pub fn check_label_value(kind: LabelKind, value: &str) -> Result<(), String> {
    check_label(kind, value).map(|_| ())
}

/// [`check_label_value`], keeping what the check parsed: the [`PathRule`]
/// of a non-empty `svc/path_rule`. The one place a path rule is parsed.
fn check_label(kind: LabelKind, value: &str) -> Result<Option<PathRule>, String> {
    if value.is_empty() {
        return Ok(None);
    }
    let ok = match kind {
        LabelKind::Free => true,
        LabelKind::Path => value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-')),
        LabelKind::Bool => matches!(value, "true" | "false"),
        LabelKind::Expose => parse_expose(value).is_some(),
        LabelKind::Subdomain => {
            let b = value.as_bytes();
            let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            value == "@"
                || (value.len() <= MAX_SUBDOMAIN
                    && b.first().is_some_and(edge)
                    && b.last().is_some_and(edge)
                    && b.iter().all(|c| edge(c) || *c == b'-'))
        }
        LabelKind::PathRule => return PathRule::check(value).map(Some),
        LabelKind::HealthcheckPath => value.starts_with('/'),
        LabelKind::MountPath => {
            let parts: Vec<&str> = value.split('/').skip(1).filter(|p| !p.is_empty()).collect();
            value.starts_with('/')
                && !parts.is_empty()
                && parts.iter().all(|p| *p != "." && *p != "..")
                && check_label_value(LabelKind::Path, value).is_ok()
        }
        LabelKind::Duration => {
            let digits = value.bytes().take_while(u8::is_ascii_digit).count();
            digits > 0 && matches!(&value[digits..], "ms" | "s" | "m")
        }
        LabelKind::PositiveInt => {
            value.bytes().all(|b| b.is_ascii_digit()) && value.parse::<u64>().is_ok_and(|n| n >= 1)
        }
        LabelKind::BuildArgs => value.split(',').all(|pair| {
            pair.trim().split_once('=').is_some_and(|(key, _)| {
                let mut k = key.bytes();
                k.next().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
                    && k.all(|c| c.is_ascii_alphanumeric() || c == b'_')
            })
        }),
    };
    if ok {
        return Ok(None);
    }
    Err(match kind {
        LabelKind::Path => "must be a path of letters, digits, `_`, `.`, `/` and `-`".to_owned(),
        LabelKind::Bool => "must be true or false".to_owned(),
        LabelKind::Expose => {
            "must be a port from 1 to 65535, optionally prefixed `internal:` or `external:`".to_owned()
        }
        LabelKind::Subdomain => format!(
            "must be `@` or lowercase letters, digits and `-` that start and end with a letter or digit (at most {MAX_SUBDOMAIN})"
        ),
        LabelKind::HealthcheckPath => "must start with `/`".to_owned(),
        LabelKind::MountPath => {
            "must be an absolute container path (not `/`, no `.` or `..`) of letters, digits, `_`, `.`, `/` and `-`"
                .to_owned()
        }
        LabelKind::Duration => "must be digits followed by `ms`, `s` or `m` (like `10s`)".to_owned(),
        LabelKind::PositiveInt => "must be an integer of at least 1".to_owned(),
        LabelKind::BuildArgs => "must be comma-separated `KEY=value` pairs".to_owned(),
        LabelKind::Free | LabelKind::PathRule => String::new(),
    })
}

/// Checks the `svc/` labels of one service. In the map form an unknown
/// `svc/` key is an error (the spec's rule); in the list form, where the
/// spec is silent, it is a warning. Returns the service's `svc/path_rule`
/// when it is set and valid, for the typed model to carry.
pub(crate) fn check_service_labels(
    ctx: &mut Ctx<'_>,
    labels_path: &Path,
    labels: &IndexMap<String, String>,
    list_form: bool,
    exposed: bool,
) -> Option<PathRule> {
    let mut path_rule = None;
    for (key, value) in labels {
        let Some(label) = key.strip_prefix(LABEL_PREFIX) else {
            continue;
        };
        let at = labels_path.key(key.clone());
        match label_kind(label) {
            None if list_form => ctx.warn(&at, format!("unknown template label `{key}` is ignored")),
            None => ctx.error(&at, format!("unknown template label `{key}`")),
            Some(_) if ctx.is_deferred(value) => {}
            Some(kind) => match check_label(kind, value) {
                Ok(parsed) => path_rule = parsed.or(path_rule),
                Err(message) => ctx.error(&at, message),
            },
        }
    }
    if !exposed {
        for label in ["svc/path_rule", "svc/subdomain"] {
            if labels.get(label).is_some_and(|v| !v.is_empty()) {
                ctx.error(&labels_path.key(label), "needs an exposed service (set `svc/expose` or publish a port)");
            }
        }
    }
    path_rule
}

#[cfg(test)]
#[path = "labels_tests.rs"]
mod tests;
