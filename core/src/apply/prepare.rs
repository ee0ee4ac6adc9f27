//! The CPU-heavy checks of an apply, run before its write transaction
//! opens (issue #27, item 8).
//!
//! An apply validates every object inside one transaction, so that the set
//! is written all or nothing. On SQLite that transaction holds the
//! database's only write lock, and a dry run (which needs read scopes only)
//! holds it too, since it writes and rolls back. Parsing and classifying
//! the Compose file of every Playspec and validating every template body
//! is most of an apply's time (a set may carry hundreds of them, each up to
//! the Compose size limit), and none of it needs the store: it is a pure
//! function of the object's own text. So it runs here first, on the CPU
//! pool, with no transaction open, and the per-kind steps inside the
//! transaction take its results ([`Prepared`]); what is left under the lock
//! is reading and writing rows. A read-only key can no longer hold every
//! tenant's writes for the time it takes to validate a large set.

use std::collections::HashMap;
use std::sync::Arc;

use play_model::FieldErrors;
use play_model::apply::Kind;
use play_model::compose::svc::{self, TemplateInfo};

use super::Env;
use super::Object;

use crate::input::playspecs::Classified;

/// The results of the pure checks, by the text they were made from.
#[derive(Debug, Default)]
pub struct Prepared {
    compose: HashMap<Arc<str>, Classified>,
    templates: HashMap<Arc<str>, Result<TemplateInfo, FieldErrors>>,
}

impl Prepared {
    /// The classification of the Compose text `yaml`, when it was prepared.
    pub fn compose(&self, yaml: &str) -> Option<Classified> {
        self.compose.get(yaml).cloned()
    }

    /// The validation of the template body `body`, when it was prepared.
    pub fn template(&self, body: &str) -> Option<Result<TemplateInfo, FieldErrors>> {
        self.templates.get(body).cloned()
    }
}

/// How many texts one CPU job checks: a large set is many short jobs, so
/// other requests' CPU work takes turns with it in the pool's fair queue
/// instead of waiting for the whole set (issue #49, item 13).
const TEXTS_PER_JOB: usize = 8;

/// Runs the pure checks of `objects` on the CPU pool (each distinct text
/// once), [`TEXTS_PER_JOB`] at a time. Texts of the wrong type or size are
/// left to the per-kind steps, which refuse them with their own messages.
pub async fn prepare(env: &Env<'_>, objects: &[Object]) -> crate::Result<Prepared> {
    let text = |object: &Object, key: &str| object.spec.get(key).and_then(|v| v.as_str()).map(Arc::<str>::from);
    let mut yamls: Vec<Arc<str>> = objects
        .iter()
        .filter(|o| o.kind == Kind::Playspec)
        .filter_map(|o| text(o, "base_compose_yaml"))
        .filter(|y| y.len() <= play_model::compose::MAX_COMPOSE_BYTES)
        .collect();
    let mut bodies: Vec<Arc<str>> = objects
        .iter()
        .filter(|o| o.kind == Kind::ImportTemplate)
        .filter_map(|o| text(o, "template_body"))
        .filter(|b| b.len() <= play_model::compose::MAX_COMPOSE_BYTES)
        .collect();
    yamls.sort();
    yamls.dedup();
    bodies.sort();
    bodies.dedup();
    let mut prepared = Prepared::default();
    for chunk in yamls.chunks(TEXTS_PER_JOB) {
        let chunk = chunk.to_vec();
        let checked = env
            .cpu
            .run(move || {
                chunk
                    .into_iter()
                    .map(|yaml| {
                        let mut errors = FieldErrors::new();
                        let services = crate::input::playspecs::classify(&yaml, &mut errors);
                        (yaml, (errors, services))
                    })
                    .collect::<Vec<_>>()
            })
            .await?;
        prepared.compose.extend(checked);
    }
    for chunk in bodies.chunks(TEXTS_PER_JOB) {
        let chunk = chunk.to_vec();
        let checked = env
            .cpu
            .run(move || {
                chunk.into_iter().map(|body| (body.clone(), svc::validate_template(&body))).collect::<Vec<_>>()
            })
            .await?;
        prepared.templates.extend(checked);
    }
    Ok(prepared)
}
