//! What `/api/playspecs` answers: its response bodies, built from core's
//! records.

use crate::error::ApiResult;
use crate::state::AppState;
use chrono::{DateTime, Utc};
use play_model::compose::{self, Issue, Policy};
use play_model::model::playspec::Playspec;
use play_model::model::playspec::{MountedFile, RegistryCredential};
use play_store::{playspec_files, playspecs};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
pub struct PlayspecItem {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub locked: bool,
    pub persist_volumes: bool,
    /// The Playzone the Compose file belongs to (see the request).
    pub playzone_id: Option<i64>,
    /// The default `sleep_after` of its Playgrounds (`30m`, `never`);
    /// `null`: the installation's default.
    pub sleep_after: Option<String>,
    pub playground_count: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlayspecDetail {
    #[serde(flatten)]
    pub item: PlayspecItem,
    pub base_compose_yaml: String,
    /// Service definitions: name, type, playzone_id, dockerfile_path,
    /// env_file_path, workdir, image, exposure.
    #[schema(value_type = Vec<Object>)]
    pub services: serde_json::Value,
    #[schema(value_type = Vec<Object>)]
    pub mounted_files: Vec<MountedFile>,
    #[schema(value_type = Vec<Object>)]
    pub credentials: Vec<RegistryCredential>,
    /// Compose warnings, and what untrusted Playrooms would refuse.
    #[schema(value_type = Vec<Object>)]
    pub warnings: Vec<Issue>,
}

impl PlayspecItem {
    /// The item of `p`, held by `playground_count` Playgrounds
    /// (`playspecs::holders`): locked while that is above 0.
    pub fn new(p: &Playspec, playground_count: i64) -> Self {
        PlayspecItem {
            id: p.id,
            name: p.name.clone(),
            description: p.description.clone(),
            locked: playground_count > 0,
            persist_volumes: p.persist_volumes,
            playzone_id: p.playzone_id,
            sleep_after: p.sleep_after.shown(),
            playground_count,
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// Compose warnings plus the untrusted policy's refusals (with the
/// Playspec's mounted files and repository as its project), as warnings.
pub(crate) fn warnings(playspec: &Playspec, files: &[MountedFile]) -> Vec<Issue> {
    let yaml = &playspec.base_compose_yaml;
    let trusted = compose::validate_blueprint(yaml, &Policy::TRUSTED);
    let project = play_model::playground::policy_for(false, playspec, files);
    let untrusted = compose::validate_blueprint(yaml, &project);
    let mut out = trusted.warnings;
    out.extend(untrusted.errors.into_iter().filter(|e| !trusted.errors.contains(e)).map(|mut issue| {
        issue.message = format!("refused on untrusted Playrooms: {}", issue.message);
        issue
    }));
    out
}

pub(crate) async fn detail(state: &AppState, playspec: Playspec) -> ApiResult<PlayspecDetail> {
    let mounted_files = playspec_files::list_files(&state.store, playspec.id).await?;
    let (spec, files) = (playspec.clone(), mounted_files.clone());
    let warnings = state.cpu.run(move || warnings(&spec, &files)).await?;
    Ok(PlayspecDetail {
        item: PlayspecItem::new(&playspec, playspecs::holders(&state.store, playspec.id).await?),
        mounted_files,
        credentials: playspec_files::list_credentials(&state.store, playspec.id).await?,
        warnings,
        base_compose_yaml: playspec.base_compose_yaml,
        services: playspec.services,
    })
}
