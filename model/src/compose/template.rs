//! Template compile: a template body and launch variables -> Compose YAML.
//!
//! Rules (decided here, documented in `docs/compose.md`):
//! - A variable's value is, in order: the provided value; the declared
//!   default; for a `random: true` variable, a generated value; otherwise
//!   missing. A missing `required` variable is an error (`variables.NAME`);
//!   a missing optional one becomes an empty string. An empty provided
//!   string counts as missing for `required`.
//! - `$$random__NAME` is always generated: 16 lowercase hex characters from
//!   the caller's RNG, one value per NAME per compile. A `random: true`
//!   variable referenced as `$$var__NAME` without a provided value or
//!   default gets that same generated value.
//! - Every non-empty final value, generated ones included, must match the
//!   variable's `/regex/`.
//! - Provided names that are not declared are refused.
//! - Substitution walks parsed YAML values (never raw text, so a value
//!   cannot inject YAML structure), in one pass (a value holding
//!   `$$var__OTHER` is not expanded again), and writes each `$` of a value
//!   as `$$` so Compose interpolation gives the value back unchanged.
//! - The `svc` namespace is removed, and the output must pass
//!   [`validate_compose`](super::validate_compose) under the caller's policy; its errors come back
//!   field-addressed (without lines, which would point into the compiled
//!   text, not the template).

use std::collections::BTreeMap;

use rand::Rng;
use serde_yaml::{Mapping, Value};

use super::emit;
use super::svc::{self, Analyzed, BODY_KEY, RefKind, refs};
use super::validate::validate_loaded;
use super::{Issue, Policy, issues_to_field_errors};
use crate::FieldErrors;
use crate::error::push_field_error;

#[derive(Debug, Clone)]
pub struct Compiled {
    /// Plain Compose YAML (no `svc` namespace, anchors and merges resolved).
    pub compose_yaml: String,
    /// Values generated in this compile, by variable name.
    pub generated: BTreeMap<String, String>,
    /// The value substituted for each variable referenced as `$$var__NAME`.
    pub variables_used: BTreeMap<String, String>,
    /// Warnings of the compiled Compose (unknown keys, unset `${V}`).
    pub warnings: Vec<Issue>,
}

/// 16 lowercase hexadecimal characters (64 random bits).
pub fn random_value<R: Rng + ?Sized>(rng: &mut R) -> String {
    let bytes: [u8; 8] = rng.r#gen();
    hex::encode(bytes)
}

fn provided_text(value: &serde_json::Value) -> Result<Option<String>, &'static str> {
    match value {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::String(s) => Ok(Some(s.clone())),
        serde_json::Value::Number(n) => Ok(Some(n.to_string())),
        serde_json::Value::Bool(b) => Ok(Some(b.to_string())),
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => Err("must be a string, number or boolean"),
    }
}

/// Compiles `body` with the `provided` launch variables.
pub fn compile<R: Rng + ?Sized>(
    body: &str,
    provided: &BTreeMap<String, serde_json::Value>,
    rng: &mut R,
    policy: &Policy,
) -> Result<Compiled, FieldErrors> {
    // The version's analysis, made when it was created (or the first time
    // this process compiles it): only the substitution below is per launch.
    let analysis = svc::analyzed(body)?;
    let Analyzed { root, namespace, usage, errors, .. } = &*analysis;
    let mut field_errors = issues_to_field_errors(errors, BODY_KEY);
    for name in provided.keys() {
        if !namespace.variables.contains_key(name) {
            push_field_error(&mut field_errors, format!("variables.{name}"), "is not a variable of this template");
        }
    }
    let mut generated = BTreeMap::new();
    for (name, kinds) in usage {
        if kinds.contains(&RefKind::Random) {
            generated.insert(name.clone(), random_value(rng));
        }
    }
    let mut values = BTreeMap::new();
    for (name, def) in &namespace.variables {
        if !usage.get(name).is_some_and(|k| k.contains(&RefKind::Var)) {
            continue;
        }
        let key = format!("variables.{name}");
        let given = match provided.get(name).map(provided_text).transpose() {
            Ok(v) => v.flatten(),
            Err(message) => {
                push_field_error(&mut field_errors, key, message);
                continue;
            }
        };
        let value = match given.filter(|v| !v.is_empty() || !def.required).or_else(|| def.default.clone()) {
            Some(v) => v,
            None if def.random => generated.entry(name.clone()).or_insert_with(|| random_value(rng)).clone(),
            None if def.required => {
                push_field_error(&mut field_errors, key, "is required");
                continue;
            }
            None => String::new(),
        };
        values.insert(name.clone(), value);
    }
    for (name, value) in values.iter().chain(generated.iter()) {
        let Some(def) = namespace.variables.get(name) else {
            continue;
        };
        if !value.is_empty() && !def.accepts(value) {
            let pattern = def.validation.as_deref().unwrap_or_default();
            push_field_error(&mut field_errors, format!("variables.{name}"), format!("does not match {pattern}"));
        }
    }
    if !field_errors.is_empty() {
        return Err(field_errors);
    }
    let escape = |v: &str| v.replace('$', "$$");
    let lookup = |kind: RefKind, name: &str| -> String {
        let value = match kind {
            RefKind::Var => values.get(name),
            RefKind::Random => generated.get(name),
        };
        value.map(|v| escape(v)).unwrap_or_default()
    };
    let mut root = root.clone();
    substitute_mapping(&mut root, &lookup);
    let tree = Value::Mapping(root);
    // Written by the engine's own writer; by serde_yaml only for what that
    // one leaves to it (tags, complex keys).
    let written = match emit::to_yaml(&tree) {
        Some(text) => Ok(text),
        None => serde_yaml::to_string(&tree).map_err(|e| e.to_string()),
    };
    let compose_yaml = written.map_err(|e| {
        issues_to_field_errors(
            &[Issue { path: String::new(), message: format!("cannot write YAML: {e}"), line: None }],
            BODY_KEY,
        )
    })?;
    // The tree is what `compose_yaml` reads back as (both writers write what
    // the loader reads: `emit_tests.rs` and
    // `the_compiled_tree_validates_as_its_text` hold them to it), so it is
    // validated as is instead of parsing the text again.
    let report = validate_loaded(&compose_yaml, tree, policy);
    if !report.valid {
        let errors: Vec<Issue> = report.errors.into_iter().map(|i| Issue { line: None, ..i }).collect();
        return Err(issues_to_field_errors(&errors, BODY_KEY));
    }
    Ok(Compiled { compose_yaml, generated, variables_used: values, warnings: report.warnings })
}

fn substitute_mapping(mapping: &mut Mapping, lookup: &dyn Fn(RefKind, &str) -> String) {
    for (_, value) in mapping.iter_mut() {
        substitute_value(value, lookup);
    }
}

fn substitute_value(value: &mut Value, lookup: &dyn Fn(RefKind, &str) -> String) {
    match value {
        Value::String(s) => {
            if s.contains("$$") {
                *s = refs::substitute(s, lookup);
            }
        }
        Value::Mapping(m) => substitute_mapping(m, lookup),
        Value::Sequence(items) => items.iter_mut().for_each(|item| substitute_value(item, lookup)),
        Value::Tagged(tagged) => substitute_value(&mut tagged.value, lookup),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
#[path = "template_tests.rs"]
mod tests;
