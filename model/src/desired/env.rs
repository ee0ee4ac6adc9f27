//! `GET /api/playgrounds/{id}/env_metadata`: a Playground's environment
//! variables, each with the layer its value comes from.
//!
//! A container's environment is layered (later wins): a built service's
//! env file from its repository (`default`), the service's Compose
//! `environment:` (`default`), in production mode the production
//! defaults (`production`, `compose::svc::production`), the Playground's
//! `env_overrides` and the
//! service's `services.<name>.env_vars` (`override`), then play's
//! [`SYSTEM_KEYS`] (`system`). For one service the answer is exactly that
//! container's environment; for the whole Playground the `default` layer is
//! the union of the running services' env files and Compose environments,
//! the first service in document order winning where two disagree, and
//! per-service `env_vars` and production defaults are left out (they
//! belong to one service).
//!
//! `generated_keys` lists variables whose values play generated: the
//! `$$secret(N)` placeholders of env files (one value per Playground and
//! name, kept across rollouts), as long as no higher layer replaced them.
//! Template randoms are fixed in the Playspec's YAML when a template is
//! compiled, so they are `default`s here.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Inputs, SYSTEM_KEYS, system_env};
use crate::compose::model::Service;
use crate::compose::svc::production::{PRODUCTION_ENV, is_production};

/// Where a variable's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvSource {
    /// The Playspec's Compose `environment:`.
    Default,
    /// A production default of a service in production mode
    /// (`compose::svc::production::PRODUCTION_ENV`).
    Production,
    /// The Playground's `env_overrides` or the service's `env_vars`.
    Override,
    /// Set by play; cannot be overridden.
    System,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EnvEntry {
    pub value: String,
    pub source: EnvSource,
}

/// The answer of `env_metadata`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EnvMetadata {
    /// Name -> value, every layer applied.
    pub merged: BTreeMap<String, String>,
    pub metadata: BTreeMap<String, EnvEntry>,
    pub system_keys: Vec<String>,
    pub generated_keys: Vec<String>,
}

impl EnvMetadata {
    fn set(&mut self, name: &str, value: &str, source: EnvSource) {
        self.merged.insert(name.to_owned(), value.to_owned());
        self.metadata.insert(name.to_owned(), EnvEntry { value: value.to_owned(), source });
    }
}

/// The environment of `service` (one container), or of the whole
/// Playground when `None`. `Err` names a service that does not run: not in
/// the Compose, or only under a profile.
pub fn env_metadata(inputs: &Inputs<'_>, service: Option<&str>) -> Result<EnvMetadata, String> {
    let Inputs { playground, file, .. } = *inputs;
    let services: Vec<(&str, &Service)> = match service {
        None => file.services.iter().filter(|(_, s)| s.profiles.is_empty()).map(|(n, s)| (n.as_str(), s)).collect(),
        Some(name) => match file.services.get(name) {
            None => return Err(format!("no service {name:?} in the Playspec")),
            Some(s) if !s.profiles.is_empty() => {
                return Err(format!("the service {name:?} does not run: it is under a profile"));
            }
            Some(s) => vec![(name, s)],
        },
    };
    let mut env = EnvMetadata::default();
    let mut generated = std::collections::BTreeSet::new();
    // Document order, first definition winning; in each service its
    // Compose environment over its env file.
    for (name, s) in services.iter().rev() {
        if let Some(env_file) = inputs.env_file(name) {
            for (key, value) in &env_file.values {
                env.set(key, value, EnvSource::Default);
                generated.remove(key);
            }
            generated.extend(env_file.generated.iter().cloned());
        }
        for (key, value) in &s.environment {
            if let Some(value) = value {
                env.set(key, value, EnvSource::Default);
                generated.remove(key);
            }
        }
    }
    if let (Some(_), [(name, s)]) = (service, services.as_slice())
        && is_production(playground.service_settings.get(*name).and_then(|s| s.production), s)
    {
        for (key, value) in PRODUCTION_ENV {
            env.set(key, value, EnvSource::Production);
            generated.remove(key);
        }
    }
    for (name, value) in &playground.env_overrides {
        env.set(name, value, EnvSource::Override);
    }
    if let Some(settings) = service.and_then(|s| playground.service_settings.get(s)) {
        for (name, value) in &settings.env_vars {
            env.set(name, value, EnvSource::Override);
        }
    }
    for (name, value) in system_env(playground) {
        env.set(&name, &value, EnvSource::System);
    }
    env.system_keys = SYSTEM_KEYS.iter().map(|k| (*k).to_owned()).collect();
    // A generated value some higher layer replaced is not what runs.
    env.generated_keys = generated
        .into_iter()
        .filter(|k| {
            env.metadata.get(k).is_some_and(|e| e.source == EnvSource::Default)
                && !playground.env_overrides.contains_key(k)
        })
        .collect();
    Ok(env)
}
