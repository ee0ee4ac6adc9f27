//! The Compose and template engine: everything between a user's YAML and a
//! typed, policy-checked Compose model, with no I/O.
//!
//! Pipeline (see `docs/compose.md`):
//! template body -> [`svc::validate_template`] / [`template::compile`]
//! (`$$var__` / `$$random__` substitution, `svc` namespace removed) ->
//! [`validate_compose`] (bounded YAML load, merge keys, Compose
//! interpolation, typed [`model`], semantic checks, [`policy`]) ->
//! [`classify`] (Playspec service definitions).
//!
//! Every problem is an [`Issue`] addressed by a dotted path
//! (`services.web.ports[0]`) and, where the source text allows, a line.

pub mod classify;
mod ctx;
mod emit;
pub mod image_ref;
pub mod interpolate;
pub mod limits;
mod load;
mod locate;
pub mod model;
mod path;
pub mod policy;
pub mod project_files;
pub mod reserved;
pub mod svc;
pub mod template;
mod text_cache;
mod validate;

pub use classify::{Exposure, ServiceDefinition, ServiceType, classify};
pub use load::{MAX_DEPTH, MAX_EXPANDED_BYTES, MAX_NODES};
pub use locate::line_of;
pub use policy::Policy;
pub use template::{Compiled, compile};
pub use validate::load_text as parse_yaml;
pub use validate::{
    parse_blueprint, parse_compose, parse_compose_with, parse_rendered, validate_blueprint, validate_compose,
    validate_compose_with,
};

use serde::Serialize;

/// The largest Compose document (or template body) accepted, in bytes.
/// Checked before any parsing so an oversized body costs nothing.
pub const MAX_COMPOSE_BYTES: usize = 512 * 1024;

/// One problem found in a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// Dotted address of the offending value: `services.web.labels.svc/expose`,
    /// `services.web.ports[1]`; empty for whole-document problems.
    pub path: String,
    pub message: String,
    /// 1-based line in the submitted text, when the parser or the locator
    /// could find it.
    pub line: Option<usize>,
}

/// The answer of `POST /api/playspecs/validate_compose`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidationReport {
    /// True exactly when `errors` is empty.
    pub valid: bool,
    pub services: Vec<ServiceSummary>,
    pub errors: Vec<Issue>,
    pub warnings: Vec<Issue>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServiceSummary {
    pub name: String,
    /// Published ports in canonical short syntax: `127.0.0.1:8080:80`,
    /// `5353:53/udp`, `3000` (container port only).
    pub ports: Vec<String>,
}

/// Turns issues into the API's field-addressed `details`. The line, when
/// known, is appended to the message because `FieldErrors` has no slot for it.
pub fn issues_to_field_errors(issues: &[Issue], whole_document_key: &str) -> crate::FieldErrors {
    let mut errors = crate::FieldErrors::new();
    for issue in issues {
        let key = if issue.path.is_empty() { whole_document_key } else { issue.path.as_str() };
        let message = match issue.line {
            Some(line) => format!("{} (line {line})", issue.message),
            None => issue.message.clone(),
        };
        crate::error::push_field_error(&mut errors, key, message);
    }
    errors
}
