//! The one place a Playground's desired objects are built from what it is
//! made of: its Playspec (Compose, service definitions, `persist_volumes`),
//! the Playspec's mounted files, and its Playroom (policy, domains, ACME
//! e-mail).
//!
//! The reconciler converges to what [`desired_for`] answers and the API's
//! views (`/compose`, `/env_metadata`, `/debug`) show it, so both must call
//! it with the same inputs; a caller that assembled `desired::Inputs` itself
//! could forget one (the views once left out the mounted files, and showed
//! config hashes the reconciler never used).
//!
//! Pure and CPU-bound (it parses the Compose text): the API runs it on its
//! CPU pool. It must not read the store or touch a host: callers load the
//! rows.

use super::model::Playground;
use crate::build::Sources;
use crate::compose::Policy;
use crate::compose::model::ComposeFile;
use std::collections::BTreeMap;

use crate::build::EnvFileValues;
use crate::desired::{self, Desired, EdgeInputs, Inputs};
use crate::model::playroom::{Connection, Playroom};
use crate::model::playspec::MountedFile;
use crate::model::playspec::Playspec;

/// A Playground's desired objects and the Compose model they come from
/// (the model is what `/env_metadata` reads).
#[derive(Clone, Debug)]
pub struct Computed {
    pub model: ComposeFile,
    pub desired: Desired,
    /// The built services' env files, placeholders replaced (what
    /// `/env_metadata` shows beside the model).
    pub env_files: BTreeMap<String, EnvFileValues>,
}

/// Why no desired objects could be computed.
#[derive(Debug, thiserror::Error)]
pub enum DesiredError {
    /// The Playground's Playspec is gone (deleted after the Playground was
    /// destroyed, or never there): nothing to run.
    #[error("the Playground's Playspec no longer exists")]
    NoPlayspec,
    /// The Playground cannot run as specified on its Playroom (its Compose
    /// breaks the Playroom's policy, a service depends on itself, ...):
    /// retrying cannot help until something changes. The message says why.
    #[error("{0}")]
    CannotRun(String),
    /// A stored value it is computed from does not read (a corrupt
    /// Playspec row).
    #[error(transparent)]
    Store(#[from] crate::Error),
}

/// The policy `playspec`'s Compose runs under on a Playroom (`trusted` or
/// not): its mounted files' project paths, and whether a repository (its
/// own Playzone) provides the relative paths they do not. Every place that
/// checks a Playspec's Compose for a Playroom uses this, so they agree.
pub fn policy_for(trusted: bool, playspec: &Playspec, files: &[MountedFile]) -> Policy {
    Policy::of_room(trusted)
        .with_project_files(files.iter().map(|f| f.path.as_deref()))
        .with_repository(playspec.playzone_id.is_some())
}

/// What [`desired_for`] reads of `playroom`, as one comparable text: a
/// cache of its answers (the API's routes) keys on it, so a change to any
/// of these fields is a miss. Kept beside [`desired_for`] so that a field
/// it starts reading joins the key.
pub fn playroom_inputs(playroom: &Playroom) -> String {
    format!(
        "{}|{}|{}|{:?}|{:?}|{:?}",
        playroom.trusted,
        playroom.connection.as_str(),
        playroom.host,
        playroom.domains,
        playroom.acme_email,
        playroom.edge
    )
}

/// The desired objects of `playground` (see the [module documentation](self)).
/// `files` are the Playspec's mounted files. Every caller passes them:
/// relative sources of the Compose resolve against them, so on an
/// untrusted Playroom the Compose cannot run without them.
/// `sources` are the Playground's pinned commits and their Playzones' URLs
/// (empty when no service is built from a Playzone, or for a caller that
/// needs nothing of the images, like the volumes of a destroy or routes).
pub fn desired_for(
    playground: &Playground,
    playspec: Option<&Playspec>,
    files: &[MountedFile],
    playroom: &Playroom,
    sources: &Sources,
) -> Result<Computed, DesiredError> {
    let playspec = playspec.ok_or(DesiredError::NoPlayspec)?;
    let policy = policy_for(playroom.trusted, playspec, files);
    let model =
        desired::model_for(&playspec.base_compose_yaml, &policy, playground).map_err(DesiredError::CannotRun)?;
    let definitions = playspec.definitions()?;
    let builds = crate::build::specs(playground, &model, &definitions, sources).map_err(DesiredError::CannotRun)?;
    let env_files = crate::build::env_files(sources).map_err(DesiredError::CannotRun)?;
    let inputs = Inputs::new(playground, &model)
        .with_persist_volumes(playspec.persist_volumes)
        .with_files(files)
        .with_edge(EdgeInputs {
            settings: playroom.edge,
            domains: &playroom.domains,
            acme_email: playroom.acme_email.as_deref(),
            local: playroom.connection == Connection::Local,
            host: &playroom.host,
        })
        .with_definitions(&definitions)
        .with_builds(&builds)
        .with_env_files(&env_files)
        .with_project(sources.pins.iter().find(|p| p.service == crate::build::PROJECT_PIN));
    let desired = desired::desired(&inputs).map_err(DesiredError::CannotRun)?;
    Ok(Computed { model, desired, env_files })
}
