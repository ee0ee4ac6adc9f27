//! `validate_compose`: the whole check of one Compose document.
//!
//! Order: size limit -> bounded YAML load (syntax, aliases, depth, merge
//! keys) -> root shape -> interpolation of every value -> typed model ->
//! bounds on what the model expands to -> reserved names ->
//! cross-references (services, networks, volumes, secrets, configs,
//! dependency cycles) -> `svc/` labels -> policy. Every stage reports with
//! paths; later stages still run on what could be parsed so one pass shows
//! as many problems as possible.

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use super::ctx::{Ctx, untag};
use super::interpolate::{InterpolationError, interpolate, needs_interpolation};
use super::load::{key_string, load};
use super::locate::Locator;
use super::model::{ComposeFile, VolumeType, parse_model};
use super::path::Path;
use super::policy::{self, Policy};
use super::svc::labels::check_service_labels;
use super::{Issue, MAX_COMPOSE_BYTES, ServiceSummary, ValidationReport};
use super::{limits, reserved};

/// What a check produced; `model` is present whenever the document was a
/// mapping with services, even if later stages found errors.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) model: Option<ComposeFile>,
    pub(crate) errors: Vec<Issue>,
    pub(crate) warnings: Vec<Issue>,
}

#[derive(Clone, Copy)]
pub(crate) struct Options<'a> {
    pub(crate) policy: &'a Policy,
    pub(crate) lookup: &'a dyn Fn(&str) -> Option<String>,
    /// Template mode: see `Ctx::is_deferred`.
    pub(crate) template: bool,
    /// Blueprint mode (a Playspec): a `${V:?message}` with `V` unset is a
    /// warning, because each Playground supplies `V` in its
    /// `env_overrides`; the reference is kept as written.
    pub(crate) blueprint: bool,
    /// Refuse the names play reserves for its own objects ([`reserved`]).
    /// Off only for documents play renders itself (`/compose`), which name
    /// those objects on purpose.
    pub(crate) reserved: bool,
}

fn no_variables(_: &str) -> Option<String> {
    None
}

fn whole(message: impl Into<String>, line: Option<usize>) -> Issue {
    Issue { path: String::new(), message: message.into(), line }
}

fn failed(issue: Issue) -> Checked {
    Checked { model: None, errors: vec![issue], warnings: Vec::new() }
}

/// Size, emptiness and YAML loading: the bounded loader every entry point
/// starts with (exported as `compose::parse_yaml`, for the engine's benchmark).
pub fn load_text(text: &str) -> Result<Value, Issue> {
    if text.len() > MAX_COMPOSE_BYTES {
        return Err(whole(format!("document is {} bytes; the limit is {MAX_COMPOSE_BYTES} bytes", text.len()), None));
    }
    if text.trim().is_empty() {
        return Err(whole("document is empty", None));
    }
    match load(text) {
        Ok(Value::Null) => Err(whole("document is empty", None)),
        Ok(value) => Ok(value),
        Err(e) => Err(whole(format!("invalid YAML: {}", e.message), e.line)),
    }
}

pub(crate) fn check_text(text: &str, options: Options<'_>) -> Checked {
    match load_text(text) {
        Ok(value) => check_value(text, value, options),
        Err(issue) => failed(issue),
    }
}

/// Checks an already loaded document; `text` is only used to locate lines.
pub(crate) fn check_value(text: &str, mut value: Value, options: Options<'_>) -> Checked {
    let locator = Locator::new(text);
    let mut ctx = Ctx::new(&locator, options.template);
    let root_path = Path::root();
    let Value::Mapping(root) = untag_owned(&mut value) else {
        return failed(whole("the document must be a mapping with a `services` key", Some(1)));
    };
    interpolate_tree(&mut ctx, root, &root_path, &Lookup { vars: options.lookup, blueprint: options.blueprint });
    let services_path = root_path.key("services");
    match root.get("services").map(untag) {
        Some(Value::Mapping(m)) if !m.is_empty() => {}
        Some(Value::Mapping(_) | Value::Null) => {
            ctx.error(&services_path, "`services` must define at least one service");
            return Checked { model: None, errors: ctx.errors, warnings: ctx.warnings };
        }
        Some(_) => {
            ctx.error(&services_path, "`services` must be a mapping of service names to definitions");
            return Checked { model: None, errors: ctx.errors, warnings: ctx.warnings };
        }
        None => {
            ctx.error(&root_path, "`services` is required");
            return Checked { model: None, errors: ctx.errors, warnings: ctx.warnings };
        }
    }
    let mut model = parse_model(&mut ctx, root);
    limits::check(&model, &mut ctx);
    if options.reserved {
        reserved::check(&model, &mut ctx);
    }
    cross_check(&mut ctx, &model);
    for (name, service) in &mut model.services {
        let at = services_path.key(name.clone());
        let list_form = matches!(
            root.get("services")
                .and_then(|s| untag(s).get(name.as_str()))
                .and_then(|s| untag(s).get("labels"))
                .map(untag),
            Some(Value::Sequence(_))
        );
        service.path_rule =
            check_service_labels(&mut ctx, &at.key("labels"), &service.labels, list_form, service.is_exposed());
    }
    policy::apply(options.policy, &model, &mut ctx);
    Checked { model: Some(model), errors: ctx.errors, warnings: ctx.warnings }
}

fn untag_owned(value: &mut Value) -> &mut Value {
    match value {
        Value::Tagged(tagged) => untag_owned(&mut tagged.value),
        other => other,
    }
}

/// Where interpolation reads variables, and whether unset required ones are
/// left for each Playground (blueprint mode).
struct Lookup<'a> {
    vars: &'a dyn Fn(&str) -> Option<String>,
    blueprint: bool,
}

/// Interpolates every string value in place (keys are never touched).
fn interpolate_tree(ctx: &mut Ctx<'_>, mapping: &mut Mapping, path: &Path, lookup: &Lookup<'_>) {
    for (key, value) in mapping.iter_mut() {
        let at = path.key(key_string(key).unwrap_or_default());
        interpolate_value(ctx, value, &at, lookup);
    }
}

fn interpolate_value(ctx: &mut Ctx<'_>, value: &mut Value, path: &Path, lookup: &Lookup<'_>) {
    match value {
        Value::String(s) if needs_interpolation(s) => match interpolate(s, lookup.vars) {
            Ok(result) => {
                for name in result.missing {
                    ctx.warn(path, format!("variable `{name}` is not set; an empty string is used"));
                }
                *s = result.value;
            }
            Err(InterpolationError::Required { variable, .. }) if lookup.blueprint => ctx.warn(
                path,
                format!("variable `{variable}` is required: every Playground must set it in `env_overrides`"),
            ),
            Err(err @ InterpolationError::Required { .. }) => ctx.error(path, err.to_string()),
            Err(err @ InterpolationError::Invalid(_)) => ctx.error(path, err.to_string()),
        },
        Value::Mapping(m) => interpolate_tree(ctx, m, path, lookup),
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                interpolate_value(ctx, item, &path.index(i), lookup);
            }
        }
        Value::Tagged(tagged) => interpolate_value(ctx, &mut tagged.value, path, lookup),
        Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// References between parts of the file, as Compose checks them.
fn cross_check(ctx: &mut Ctx<'_>, file: &ComposeFile) {
    let services = Path::root().key("services");
    for (name, service) in &file.services {
        let at = services.key(name.clone());
        if !reserved::valid_key(name) {
            ctx.error(&at, format!("service name `{name}` must start with a letter or digit and contain only letters, digits, `_`, `.` and `-`"));
        }
        if service.image.is_none() && service.build.is_none() {
            ctx.error(&at, "a service needs `image` or `build`");
        }
        if service.extends.is_some() {
            ctx.error(
                &at.key("extends"),
                "`extends` is not supported; inline the service or use a YAML anchor and merge key",
            );
        }
        for dependency in service.depends_on.keys() {
            if dependency == name {
                ctx.error(&at.key("depends_on").key(dependency.clone()), "a service cannot depend on itself");
            } else if !file.services.contains_key(dependency) {
                ctx.error(
                    &at.key("depends_on").key(dependency.clone()),
                    format!("depends on undefined service `{dependency}`"),
                );
            }
        }
        for network in service.networks.keys() {
            if network != "default" && !file.networks.contains_key(network) {
                ctx.error(
                    &at.key("networks").key(network.clone()),
                    format!("network `{network}` is not defined under top-level `networks`"),
                );
            }
        }
        if let Some(mode) = &service.network_mode {
            if !service.networks.is_empty() {
                ctx.error(&at.key("network_mode"), "`network_mode` and `networks` cannot both be set");
            }
            if let Some(other) = mode.strip_prefix("service:")
                && !file.services.contains_key(other)
            {
                ctx.error(&at.key("network_mode"), format!("refers to undefined service `{other}`"));
            }
        }
        for (i, volume) in service.volumes.iter().enumerate() {
            if volume.kind == VolumeType::Volume
                && let Some(source) = &volume.source
                && !file.volumes.contains_key(source)
                && !ctx.is_deferred(source)
            {
                ctx.error(
                    &at.key("volumes").index(i),
                    format!("volume `{source}` is not defined under top-level `volumes`"),
                );
            }
        }
        for (kind, names, defined) in
            [("secrets", &service.secrets, &file.secrets), ("configs", &service.configs, &file.configs)]
        {
            for (i, used) in names.iter().enumerate() {
                if !defined.contains_key(&used.source) {
                    let secret = &used.source;
                    ctx.error(&at.key(kind).index(i), format!("`{secret}` is not defined under top-level `{kind}`"));
                }
            }
        }
    }
    dependency_cycles(ctx, file);
}

/// Kahn's algorithm over `depends_on`; services left over are in or behind a cycle.
fn dependency_cycles(ctx: &mut Ctx<'_>, file: &ComposeFile) {
    let mut pending: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, service) in &file.services {
        let deps = service.depends_on.keys().filter(|d| *d != name && file.services.contains_key(*d)).count();
        pending.insert(name, deps);
    }
    let mut ready: Vec<&str> = pending.iter().filter(|(_, n)| **n == 0).map(|(s, _)| *s).collect();
    while let Some(done) = ready.pop() {
        pending.remove(done);
        for (name, service) in &file.services {
            if service.depends_on.contains_key(done)
                && name != done
                && let Some(count) = pending.get_mut(name.as_str())
            {
                *count -= 1;
                if *count == 0 {
                    ready.push(name);
                }
            }
        }
    }
    if !pending.is_empty() {
        let names: Vec<&str> = pending.keys().copied().collect();
        for name in &names {
            let at = Path::root().key("services").key(*name).key("depends_on");
            ctx.error(&at, format!("dependency cycle among services {}", names.join(", ")));
        }
    }
}

fn report(checked: Checked) -> ValidationReport {
    let services = checked
        .model
        .as_ref()
        .map(|m| {
            m.services
                .iter()
                .map(|(name, s)| ServiceSummary {
                    name: name.clone(),
                    ports: s.ports.iter().map(|p| p.short()).collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    ValidationReport { valid: checked.errors.is_empty(), services, errors: checked.errors, warnings: checked.warnings }
}

/// Validates a Compose document with no variables set: a missing `${V}` is
/// a warning (Compose substitutes an empty string), a missing `${V:?err}` an
/// error.
pub fn validate_compose(yaml: &str, policy: &Policy) -> ValidationReport {
    validate_compose_with(yaml, policy, &no_variables)
}

/// Validates a Compose document, reading interpolation variables through
/// `lookup` (a Playground's env overrides, for example).
pub fn validate_compose_with(yaml: &str, policy: &Policy, lookup: &dyn Fn(&str) -> Option<String>) -> ValidationReport {
    report(check_text(yaml, Options { policy, lookup, template: false, blueprint: false, reserved: true }))
}

/// [`validate_compose`] of a document already loaded as `value`, which
/// `text` is the YAML of (it is measured against [`MAX_COMPOSE_BYTES`] and
/// used to locate lines): what a compiled template is checked with, so that
/// the text written from the tree is not parsed again.
pub(crate) fn validate_loaded(text: &str, value: Value, policy: &Policy) -> ValidationReport {
    if text.len() > MAX_COMPOSE_BYTES {
        let issue = whole(format!("document is {} bytes; the limit is {MAX_COMPOSE_BYTES} bytes", text.len()), None);
        return report(failed(issue));
    }
    report(check_value(
        text,
        value,
        Options { policy, lookup: &no_variables, template: false, blueprint: false, reserved: true },
    ))
}

/// Validates a Playspec's Compose (a blueprint): like [`validate_compose`],
/// but a `${V:?message}` left unset is a warning, since each Playground sets
/// `V` in its `env_overrides` (and is refused at create if it does not).
pub fn validate_blueprint(yaml: &str, policy: &Policy) -> ValidationReport {
    report(check_text(
        yaml,
        Options { policy, lookup: &no_variables, template: false, blueprint: true, reserved: true },
    ))
}

/// [`validate_blueprint`] returning the typed model when the document is
/// valid (an unset required reference is kept as written).
pub fn parse_blueprint(yaml: &str, policy: &Policy) -> (ValidationReport, Option<ComposeFile>) {
    let checked =
        check_text(yaml, Options { policy, lookup: &no_variables, template: false, blueprint: true, reserved: true });
    let model = if checked.errors.is_empty() { checked.model.clone() } else { None };
    (report(checked), model)
}

/// Validates and returns the typed model when the document is valid.
pub fn parse_compose(yaml: &str, policy: &Policy) -> (ValidationReport, Option<ComposeFile>) {
    parse_compose_with(yaml, policy, &no_variables)
}

/// [`parse_compose`] with interpolation variables read through `lookup`.
pub fn parse_compose_with(
    yaml: &str,
    policy: &Policy,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> (ValidationReport, Option<ComposeFile>) {
    let checked = check_text(yaml, Options { policy, lookup, template: false, blueprint: false, reserved: true });
    let model = if checked.errors.is_empty() { checked.model.clone() } else { None };
    (report(checked), model)
}

/// Parses a document play rendered itself (the `/compose` view), which
/// names play's own objects and the host's real networks on purpose:
/// trusted policy, reserved names allowed. Never for tenant input.
pub fn parse_rendered(yaml: &str) -> (ValidationReport, Option<ComposeFile>) {
    let options =
        Options { policy: &Policy::TRUSTED, lookup: &no_variables, template: false, blueprint: false, reserved: false };
    let checked = check_text(yaml, options);
    let model = if checked.errors.is_empty() { checked.model.clone() } else { None };
    (report(checked), model)
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
