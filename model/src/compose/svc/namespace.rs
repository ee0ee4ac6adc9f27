//! The top-level `svc` namespace of a template body: schema version,
//! variable definitions, metadata and the job/schedule/trigger settings.
//!
//! The namespace is a typed schema, so it is strict: unknown keys are errors
//! (a misspelt `requried: true` must not silently do nothing), booleans are
//! YAML booleans, and `muti_config` is the one free-form object.

use indexmap::IndexMap;
use regex::Regex;
use serde::Serialize;
use serde_yaml::{Mapping, Value};

use crate::compose::ctx::{Ctx, scalar_string, untag};
use crate::compose::path::Path;

/// The only schema version of the `svc` namespace. `svc.version` may be
/// omitted (it means 1) or set to `1` / `"1"`.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, Serialize)]
pub struct VariableDef {
    /// Display name.
    pub name: Option<String>,
    pub required: bool,
    pub random: bool,
    /// The default as text (numbers and booleans in YAML spelling); null is no default.
    pub default: Option<String>,
    /// The `/regex/` as written.
    pub validation: Option<String>,
    pub path: Option<String>,
    pub paths: Vec<String>,
    #[serde(skip)]
    pub(crate) regex: Option<Regex>,
}

impl VariableDef {
    /// True when `value` passes the declared `/regex/` (searched, not
    /// anchored: write `^...$` to match the whole value).
    pub fn accepts(&self, value: &str) -> bool {
        self.regex.as_ref().is_none_or(|r| r.is_match(value))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ScheduleConfig {
    pub enabled: bool,
    pub cron: Option<String>,
    pub marquee_id: Option<u64>,
    /// play's additions (issue #30, `docs/templates.md`): an IANA time
    /// zone (default UTC), what a run does while the previous one runs
    /// (`forbid`, `allow`, `replace`; default `forbid`), and how late a
    /// missed time may still start (default 600 seconds).
    pub time_zone: Option<String>,
    pub concurrency_policy: Option<String>,
    pub starting_deadline_seconds: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TriggerConfig {
    pub enabled: bool,
    /// `push` or `pull_request`.
    pub event_type: Option<String>,
    pub repo_url: Option<String>,
    pub branch: Option<String>,
    pub prop_id: Option<u64>,
    pub marquee_id: Option<u64>,
    /// Deploy pull requests whose head is in a fork (default: no).
    pub allow_forks: bool,
    /// The most Playgrounds the trigger keeps at once
    /// (`crate::trigger::DEFAULT_MAX_PLAYGROUNDS` without one).
    pub max_playgrounds: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metadata {
    pub description: Option<String>,
    pub category: Option<String>,
    pub source_defaults: Option<bool>,
    pub job_mode: Option<bool>,
    pub muti_config: Option<serde_json::Value>,
    pub schedule_config: Option<ScheduleConfig>,
    pub trigger_config: Option<TriggerConfig>,
}

/// The parsed namespace.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Namespace {
    pub version: u32,
    /// In document order (the order a launch form shows them).
    pub variables: IndexMap<String, VariableDef>,
    pub metadata: Metadata,
    /// `svc.job_mode`, else `svc.metadata.job_mode`, else false.
    pub job_mode: bool,
    /// Top-level setting, else the one under `metadata`.
    pub muti_config: Option<serde_json::Value>,
    pub schedule_config: Option<ScheduleConfig>,
    pub trigger_config: Option<TriggerConfig>,
    /// `svc.sleep_after`: the default `sleep_after` of the Playspecs it
    /// launches, in seconds (0: never; `None`: the installation's).
    pub sleep_after: crate::playground::sleep::SleepAfter,
}

fn valid_variable_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn valid_path(path: &str) -> bool {
    !path.is_empty()
        && path.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'[' | b']' | b'-'))
}

fn strict_bool(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<bool> {
    match untag(value) {
        Value::Bool(b) => Some(*b),
        _ => {
            ctx.error(path, "must be a boolean (true or false)");
            None
        }
    }
}

fn strict_string(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<String> {
    match untag(value) {
        Value::String(s) => Some(s.clone()),
        _ => {
            ctx.error(path, "must be a string");
            None
        }
    }
}

/// An id: an integer >= 1, or a digit string (without a leading zero when
/// `no_leading_zero`).
fn id(ctx: &mut Ctx<'_>, value: &Value, path: &Path, no_leading_zero: bool) -> Option<u64> {
    let parsed = match untag(value) {
        Value::Number(n) => n.as_u64().filter(|n| *n >= 1),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            if no_leading_zero && s.starts_with('0') { None } else { s.parse().ok() }
        }
        _ => None,
    };
    if parsed.is_none() {
        let rule = if no_leading_zero { "a digit string without a leading zero" } else { "a digit string" };
        ctx.error(path, format!("must be an integer of at least 1 or {rule}"));
    }
    parsed
}

fn entries<'v>(ctx: &mut Ctx<'_>, value: &'v Value, path: &Path) -> Vec<(String, &'v Value)> {
    match untag(value) {
        Value::Mapping(m) => ctx.entries(m, path),
        _ => {
            ctx.error(path, "must be a mapping");
            Vec::new()
        }
    }
}

fn parse_schedule(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> ScheduleConfig {
    let mut config = ScheduleConfig::default();
    for (key, v) in entries(ctx, value, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "enabled" => config.enabled = strict_bool(ctx, v, &at).unwrap_or(false),
            "cron" => config.cron = strict_string(ctx, v, &at),
            "marquee_id" => config.marquee_id = id(ctx, v, &at, true),
            "time_zone" => config.time_zone = strict_string(ctx, v, &at),
            "concurrency_policy" => config.concurrency_policy = strict_string(ctx, v, &at),
            "starting_deadline_seconds" => config.starting_deadline_seconds = seconds(ctx, v, &at),
            k => ctx.error(&at, format!("unknown schedule_config key `{k}`")),
        }
    }
    if config.enabled && config.cron.as_deref().is_none_or(|c| c.trim().is_empty()) {
        ctx.error(&path.key("cron"), "an enabled schedule needs a cron expression");
    }
    if let Err((key, message)) = schedule_spec(&config) {
        ctx.error(&path.key(key), message);
    }
    config
}

/// The schedule `config` describes, checked (`crate::schedule`); `Ok(None)`
/// without a cron pattern.
pub fn schedule_spec(config: &ScheduleConfig) -> Result<Option<crate::schedule::Spec>, (&'static str, String)> {
    let Some(pattern) = config.cron.as_deref().filter(|c| !c.trim().is_empty()) else { return Ok(None) };
    let policy = match config.concurrency_policy.as_deref() {
        Some(text) => text.parse().map_err(|m| ("concurrency_policy", m))?,
        None => crate::schedule::Policy::default(),
    };
    let deadline =
        config.starting_deadline_seconds.map(|s| chrono::Duration::seconds(i64::try_from(s).unwrap_or(i64::MAX)));
    crate::schedule::Spec::new(pattern, config.time_zone.as_deref(), policy, deadline, crate::time::now()).map(Some)
}

/// A whole number of seconds, at most a day.
fn seconds(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<u64> {
    match untag(value) {
        Value::Number(n) if n.as_u64().is_some_and(|n| n <= 86_400) => n.as_u64(),
        _ => {
            ctx.error(path, "must be a whole number of seconds from 0 to 86400");
            None
        }
    }
}

fn parse_trigger(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> TriggerConfig {
    let mut config = TriggerConfig::default();
    for (key, v) in entries(ctx, value, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "enabled" => config.enabled = strict_bool(ctx, v, &at).unwrap_or(false),
            "event_type" => {
                config.event_type = strict_string(ctx, v, &at);
                if let Some(event) = config.event_type.as_deref().filter(|e| !matches!(*e, "push" | "pull_request")) {
                    ctx.error(&at, format!("event_type `{event}` must be push or pull_request"));
                }
            }
            "repo_url" => config.repo_url = strict_string(ctx, v, &at),
            "branch" => {
                config.branch = strict_string(ctx, v, &at);
                if let Some(Err(message)) = config.branch.as_deref().map(crate::trigger::check_branch_pattern) {
                    ctx.error(&at, message);
                }
            }
            "allow_forks" => config.allow_forks = strict_bool(ctx, v, &at).unwrap_or(false),
            "max_playgrounds" => match untag(v) {
                Value::Number(n) if n.as_u64().is_some_and(|n| (1..=crate::trigger::MAX_PLAYGROUNDS).contains(&n)) => {
                    config.max_playgrounds = n.as_u64();
                }
                _ => ctx.error(&at, format!("must be a whole number from 1 to {}", crate::trigger::MAX_PLAYGROUNDS)),
            },
            "prop_id" => config.prop_id = id(ctx, v, &at, false),
            "marquee_id" => config.marquee_id = id(ctx, v, &at, false),
            k => ctx.error(&at, format!("unknown trigger_config key `{k}`")),
        }
    }
    config
}

fn object(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<serde_json::Value> {
    if !matches!(untag(value), Value::Mapping(_)) {
        ctx.error(path, "must be a mapping");
        return None;
    }
    match serde_json::to_value(value) {
        Ok(json) => Some(json),
        Err(e) => {
            ctx.error(path, format!("cannot be represented as JSON: {e}"));
            None
        }
    }
}

fn parse_metadata(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Metadata {
    let mut metadata = Metadata::default();
    for (key, v) in entries(ctx, value, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "description" => metadata.description = strict_string(ctx, v, &at),
            "category" => metadata.category = strict_string(ctx, v, &at),
            "source_defaults" => metadata.source_defaults = strict_bool(ctx, v, &at),
            "job_mode" => metadata.job_mode = strict_bool(ctx, v, &at),
            "muti_config" => metadata.muti_config = object(ctx, v, &at),
            "schedule_config" => metadata.schedule_config = Some(parse_schedule(ctx, v, &at)),
            "trigger_config" => metadata.trigger_config = Some(parse_trigger(ctx, v, &at)),
            k => ctx.error(&at, format!("unknown metadata key `{k}`")),
        }
    }
    metadata
}

fn parse_variable(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> VariableDef {
    let mut def = VariableDef::default();
    if matches!(untag(value), Value::Null) {
        return def;
    }
    for (key, v) in entries(ctx, value, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "name" => {
                def.name = strict_string(ctx, v, &at);
                if def.name.as_deref() == Some("") {
                    ctx.error(&at, "must not be empty");
                }
            }
            "required" => def.required = strict_bool(ctx, v, &at).unwrap_or(false),
            "random" => def.random = strict_bool(ctx, v, &at).unwrap_or(false),
            "default" => match scalar_string(v) {
                Ok(text) => def.default = text,
                Err(()) => ctx.error(&at, "must be a string, number, boolean or null"),
            },
            "validation" => {
                let Some(text) = strict_string(ctx, v, &at) else {
                    continue;
                };
                if !text.is_empty() {
                    match text.strip_prefix('/').and_then(|t| t.strip_suffix('/')) {
                        Some(pattern) if text.len() >= 2 => match crate::routing::regex_cache::compiled(pattern) {
                            Ok(regex) => def.regex = Some(regex),
                            Err(e) => ctx.error(&at, format!("is not a valid regular expression: {e}")),
                        },
                        _ => ctx
                            .error(&at, "must be empty or a regular expression enclosed in slashes, like `/^[a-z]+$/`"),
                    }
                }
                def.validation = Some(text).filter(|t| !t.is_empty());
            }
            "path" => {
                def.path = strict_string(ctx, v, &at);
                if def.path.as_deref().is_some_and(|p| !valid_path(p)) {
                    ctx.error(&at, "must use only letters, digits, `_`, `.`, `/`, `[`, `]` and `-`");
                }
            }
            "paths" => {
                let items: Vec<(Path, &Value)> = match untag(v) {
                    Value::Sequence(items) => items.iter().enumerate().map(|(i, item)| (at.index(i), item)).collect(),
                    other => vec![(at.clone(), other)],
                };
                for (item_at, item) in items {
                    if let Some(p) = strict_string(ctx, item, &item_at) {
                        if valid_path(&p) {
                            def.paths.push(p);
                        } else {
                            ctx.error(&item_at, "must use only letters, digits, `_`, `.`, `/`, `[`, `]` and `-`");
                        }
                    }
                }
            }
            k => ctx.error(&at, format!("unknown variable key `{k}`")),
        }
    }
    if def.required && def.random {
        ctx.warn(path, "`required` has no effect on a `random` variable, which is generated when not provided");
    }
    def
}

/// Parses the namespace; problems go to `ctx` under `svc.`.
pub(crate) fn parse_namespace(ctx: &mut Ctx<'_>, svc: Option<&Value>) -> Namespace {
    let mut ns = Namespace { version: SCHEMA_VERSION, ..Namespace::default() };
    let base = Path::root().key("svc");
    let Some(svc) = svc else { return ns };
    if matches!(untag(svc), Value::Null) {
        return ns;
    }
    let mut job_mode = None;
    for (key, v) in entries(ctx, svc, &base) {
        let at = base.key(key.clone());
        match key.as_str() {
            "version" => match scalar_string(v) {
                Ok(Some(text)) if text == SCHEMA_VERSION.to_string() => {}
                _ => ctx.error(&at, format!("unsupported schema version; the only version is {SCHEMA_VERSION}")),
            },
            "variables" => {
                let Value::Mapping(vars) = untag(v) else {
                    ctx.error(&at, "must be a mapping of variable names to definitions");
                    continue;
                };
                for (name, def) in ctx.entries(vars, &at) {
                    let var_at = at.key(name.clone());
                    if !valid_variable_name(&name) {
                        ctx.error(&var_at, "variable names use only letters, digits and `_`");
                    }
                    let def = parse_variable(ctx, def, &var_at);
                    ns.variables.insert(name, def);
                }
            }
            "metadata" => ns.metadata = parse_metadata(ctx, v, &at),
            "job_mode" => job_mode = strict_bool(ctx, v, &at),
            "muti_config" => ns.muti_config = object(ctx, v, &at),
            "schedule_config" => ns.schedule_config = Some(parse_schedule(ctx, v, &at)),
            "trigger_config" => ns.trigger_config = Some(parse_trigger(ctx, v, &at)),
            "sleep_after" => {
                ns.sleep_after = strict_string(ctx, v, &at)
                    .and_then(|text| {
                        crate::playground::sleep::parse_after(&text).map_err(|message| ctx.error(&at, message)).ok()
                    })
                    .unwrap_or_default();
            }
            k => ctx.error(&at, format!("unknown key `{k}` in the svc namespace")),
        }
    }
    if let (Some(top), Some(meta)) = (job_mode, ns.metadata.job_mode)
        && top != meta
    {
        ctx.error(&base.key("job_mode"), "disagrees with `svc.metadata.job_mode`");
    }
    ns.job_mode = job_mode.or(ns.metadata.job_mode).unwrap_or(false);
    if ns.job_mode && ns.sleep_after.sleeps() {
        ctx.error(&base.key("sleep_after"), "a job-mode template never sleeps");
    }
    ns.muti_config = ns.muti_config.take().or_else(|| ns.metadata.muti_config.clone());
    ns.schedule_config = ns.schedule_config.take().or_else(|| ns.metadata.schedule_config.clone());
    ns.trigger_config = ns.trigger_config.take().or_else(|| ns.metadata.trigger_config.clone());
    ns
}

/// Removes and returns the `svc` key of a template root.
pub(crate) fn take_namespace(root: &mut Mapping) -> Option<Value> {
    root.shift_remove("svc")
}
