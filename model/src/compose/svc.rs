//! The `svc` template extension: the namespace, `svc/` labels, template
//! references, and [`validate_template`], the check `create_version` runs.

pub mod labels;
pub mod namespace;
pub mod production;
pub mod refs;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;
use serde_yaml::{Mapping, Value};

pub use labels::{LABEL_PREFIX, LABELS, LabelKind, check_label_value, label_kind, parse_expose};
pub use namespace::{Metadata, SCHEMA_VERSION, ScheduleConfig, TriggerConfig, VariableDef};
pub use refs::RefKind;

use super::ctx::{Ctx, untag};
use super::load::key_string;
use super::locate::Locator;
use super::path::Path;
use super::policy::Policy;
use super::text_cache::TextCache;
use super::validate::{Options, check_value, load_text};
use super::{Issue, issues_to_field_errors};
use crate::FieldErrors;

/// The `FieldErrors` key of problems with the body as a whole.
pub const BODY_KEY: &str = "template_body";

/// What a valid template declares.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateInfo {
    pub version: u32,
    pub variables: IndexMap<String, VariableDef>,
    pub metadata: Metadata,
    pub job_mode: bool,
    pub muti_config: Option<serde_json::Value>,
    pub schedule_config: Option<ScheduleConfig>,
    pub trigger_config: Option<TriggerConfig>,
    /// `svc.sleep_after`, the default of the Playspecs it launches
    /// (`docs/sleep.md`).
    pub sleep_after: crate::playground::sleep::SleepAfter,
    /// Service names in document order.
    pub services: Vec<String>,
    pub warnings: Vec<Issue>,
}

/// Where each variable is referenced: name -> kinds -> first path.
type Usage = BTreeMap<String, BTreeMap<RefKind, Path>>;

/// The loaded template: the body without its namespace, and the namespace.
#[derive(Debug)]
pub(crate) struct Analyzed {
    pub(crate) root: Mapping,
    pub(crate) namespace: namespace::Namespace,
    /// How each variable is referenced (`$$var__`, `$$random__`).
    pub(crate) usage: BTreeMap<String, BTreeSet<RefKind>>,
    pub(crate) errors: Vec<Issue>,
    pub(crate) warnings: Vec<Issue>,
}

/// Every template body analysed, kept (`text_cache`).
static ANALYSES: TextCache<Analyzed> = TextCache::new();

/// The analysis of `body`, from the kept ones when this process has seen
/// it: what every launch of a version compiles from.
pub(crate) fn analyzed(body: &str) -> Result<Arc<Analyzed>, FieldErrors> {
    ANALYSES.get_or_try(body, || analyze(body))
}

/// Loads a body, parses its namespace and checks that references and
/// declarations match. Shared by validation and compile.
pub(crate) fn analyze(body: &str) -> Result<Analyzed, FieldErrors> {
    let value = load_text(body).map_err(|issue| issues_to_field_errors(&[issue], BODY_KEY))?;
    let Value::Mapping(mut root) = value else {
        return Err(issues_to_field_errors(
            &[Issue {
                path: String::new(),
                message: "the body must be a mapping with a `services` key".to_owned(),
                line: Some(1),
            }],
            BODY_KEY,
        ));
    };
    let locator = Locator::new(body);
    let mut ctx = Ctx::new(&locator, true);
    let svc = namespace::take_namespace(&mut root);
    let namespace = namespace::parse_namespace(&mut ctx, svc.as_ref());
    let mut usage = Usage::new();
    collect_mapping(&mut ctx, &root, &Path::root(), &mut usage);
    for (name, kinds) in &usage {
        if !namespace.variables.contains_key(name) {
            for (kind, at) in kinds {
                let written = match kind {
                    RefKind::Var => "var",
                    RefKind::Random => "random",
                };
                ctx.error(at, format!("`$${written}__{name}` refers to a variable not declared under `svc.variables`"));
            }
        }
    }
    for name in namespace.variables.keys() {
        if !usage.contains_key(name) {
            ctx.error(&Path::root().key("svc").key("variables").key(name.clone()), "is declared but never used");
        }
    }
    let usage = usage.into_iter().map(|(name, kinds)| (name, kinds.into_keys().collect())).collect();
    Ok(Analyzed { root, namespace, usage, errors: ctx.errors, warnings: ctx.warnings })
}

fn collect_mapping(ctx: &mut Ctx<'_>, mapping: &Mapping, path: &Path, usage: &mut Usage) {
    for (key, value) in mapping {
        let key_text = key_string(key).unwrap_or_default();
        let at = path.key(key_text.clone());
        if !refs::scan(&key_text).is_empty() {
            ctx.error(&at, "template references are only allowed in values, not in keys");
        }
        collect(ctx, value, &at, usage);
    }
}

fn collect(ctx: &mut Ctx<'_>, value: &Value, path: &Path, usage: &mut Usage) {
    match untag(value) {
        Value::String(s) => {
            for r in refs::scan(s) {
                usage.entry(r.name.to_owned()).or_default().entry(r.kind).or_insert_with(|| path.clone());
            }
        }
        Value::Mapping(m) => collect_mapping(ctx, m, path, usage),
        Value::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                collect(ctx, item, &path.index(i), usage);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Tagged(_) => {}
    }
}

fn no_variables(_: &str) -> Option<String> {
    None
}

/// Validates a template body (`create_version`): YAML with a `services`
/// map; the `svc` namespace; `svc/` labels (values holding references are
/// checked at compile); every reference declared and every declaration
/// used; and the body, namespace removed, must be valid Compose. The
/// untrusted policy is not applied here: it depends on the Playroom, so
/// [`compile`](super::template::compile) applies it.
pub fn validate_template(body: &str) -> Result<TemplateInfo, FieldErrors> {
    // Kept for the launches of the version about to be created.
    let analysis = analyzed(body)?;
    let Analyzed { root, namespace, errors, warnings, .. } = &*analysis;
    let (namespace, mut warnings) = (namespace.clone(), warnings.clone());
    let options =
        Options { policy: &Policy::TRUSTED, lookup: &no_variables, template: true, blueprint: false, reserved: true };
    let checked = check_value(body, Value::Mapping(root.clone()), options);
    let mut all_errors = errors.clone();
    all_errors.extend(checked.errors);
    if !all_errors.is_empty() {
        return Err(issues_to_field_errors(&all_errors, BODY_KEY));
    }
    warnings.extend(checked.warnings);
    Ok(TemplateInfo {
        version: namespace.version,
        variables: namespace.variables,
        metadata: namespace.metadata,
        job_mode: namespace.job_mode,
        muti_config: namespace.muti_config,
        schedule_config: namespace.schedule_config,
        trigger_config: namespace.trigger_config,
        sleep_after: namespace.sleep_after,
        services: checked.model.map(|m| m.services.keys().cloned().collect()).unwrap_or_default(),
        warnings,
    })
}

#[cfg(test)]
#[path = "svc_tests.rs"]
mod tests;
