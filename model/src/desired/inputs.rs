//! What a Playground's desired objects are computed from ([`Inputs`]), and
//! the Playspec's Compose as that Playground runs it ([`model_for`]).

use std::collections::BTreeMap;

use super::EdgeInputs;
use crate::build::{BuildSpec, EnvFileValues, Pin};
use crate::compose::model::ComposeFile;
use crate::compose::{Policy, ServiceDefinition};
use crate::model::playspec::MountedFile;
use crate::playground::model::Playground;

/// Everything the desired objects are computed from. Build it with
/// [`Inputs::new`] and the `with_*` methods, so that adding an input does
/// not touch every caller. Without [`Inputs::with_definitions`] no service
/// is exposed; without [`Inputs::with_edge`] exposed services get no
/// route.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    pub playground: &'a Playground,
    /// The Playspec's Compose, parsed (and interpolated) for this
    /// Playground: see [`model_for`].
    pub file: &'a ComposeFile,
    /// The Playspec's `persist_volumes`.
    pub persist_volumes: bool,
    /// The Playspec's mounted files.
    pub files: &'a [MountedFile],
    /// The Playroom's edge: what routes are made from.
    pub edge: Option<EdgeInputs<'a>>,
    /// The Playspec's service definitions (their `exposure`).
    pub definitions: &'a [ServiceDefinition],
    /// The builds of the services built from Playzones, by service: their
    /// image is the build's (see `crate::build`).
    pub builds: Option<&'a BTreeMap<String, BuildSpec>>,
    /// The env files of built services, by service, placeholders replaced
    /// (`crate::build::env_files`): the lowest layer of their environment.
    pub env_files: Option<&'a BTreeMap<String, EnvFileValues>>,
    /// The pin of the Playspec's own repository
    /// ([`crate::build::PROJECT_PIN`]), when it names one.
    pub project: Option<&'a Pin>,
}

impl<'a> Inputs<'a> {
    pub fn new(playground: &'a Playground, file: &'a ComposeFile) -> Self {
        Inputs {
            playground,
            file,
            persist_volumes: false,
            files: &[],
            edge: None,
            definitions: &[],
            builds: None,
            env_files: None,
            project: None,
        }
    }

    pub fn with_files(mut self, files: &'a [MountedFile]) -> Self {
        self.files = files;
        self
    }

    pub fn with_persist_volumes(mut self, persist: bool) -> Self {
        self.persist_volumes = persist;
        self
    }

    /// The Playroom's edge.
    pub fn with_edge(self, edge: EdgeInputs<'a>) -> Self {
        Inputs { edge: Some(edge), ..self }
    }

    /// The Playspec's service definitions.
    pub fn with_definitions(self, definitions: &'a [ServiceDefinition]) -> Self {
        Inputs { definitions, ..self }
    }

    /// The builds of the services built from Playzones.
    pub fn with_builds(self, builds: &'a BTreeMap<String, BuildSpec>) -> Self {
        Inputs { builds: Some(builds), ..self }
    }

    /// The env files of the services built from Playzones.
    pub fn with_env_files(self, env_files: &'a BTreeMap<String, EnvFileValues>) -> Self {
        Inputs { env_files: Some(env_files), ..self }
    }

    /// The pin of the Playspec's own repository.
    pub fn with_project(self, project: Option<&'a Pin>) -> Self {
        Inputs { project, ..self }
    }

    /// The env file of `service`, if it has one.
    pub fn env_file(&self, service: &str) -> Option<&'a EnvFileValues> {
        self.env_files.and_then(|files| files.get(service))
    }
}

/// The Playspec's Compose as this Playground runs it: validated for the
/// Playroom's `policy`, with `${V}` interpolation reading the Playground's
/// `env_overrides` (an unset variable is an empty string, as in Compose).
/// An `Err` (the first problem, `path: message`) is a spec that cannot run.
pub fn model_for(yaml: &str, policy: &Policy, playground: &Playground) -> Result<ComposeFile, String> {
    let lookup = |name: &str| playground.env_overrides.get(name).cloned();
    let (report, model) = crate::compose::parse_compose_with(yaml, policy, &lookup);
    let mut model = model.ok_or_else(|| {
        let first = report.errors.first().map(|i| format!("{}: {}", i.path, i.message)).unwrap_or_default();
        format!("the Playspec's Compose cannot run on this Playroom: {first}")
    })?;
    // The engine's default bridge is shared by every bridge-mode container
    // of every tenant (and classic build containers): on an untrusted
    // Playroom `bridge` means the project's default network (issue #27,
    // item 4; validation warns).
    if !policy.trusted {
        for service in model.services.values_mut().filter(|s| s.network_mode.as_deref() == Some("bridge")) {
            service.network_mode = None;
        }
    }
    Ok(model)
}
