//! Read-only views of what a Playground runs: `GET
//! /api/playgrounds/{id}/compose`, `/env_metadata` and `/debug`.
//!
//! Each view computes the Playground's desired objects with the function
//! the reconciler converges with (`play_model::playground::desired_for`),
//! from the same rows (Playground, Playspec and its mounted files,
//! Playroom), so what they show is what the reconciler converges to. None
//! of them touches the host. `/debug` joins each route with what the edge
//! reconciler last decided for it (`store::edges`: live, the Playground
//! holding a contested host).
//!
//! A Playground whose Compose cannot run on its Playroom answers `/compose`
//! and `/env_metadata` with `422 INVALID_STATE` (there is nothing it runs);
//! `/debug` always answers `200` and says why in `error`.

use std::collections::BTreeMap;

use axum::Json as JsonResponse;
use axum::extract::State;
use play_model::desired::{self, Inputs};
use play_model::playground::Computed;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Query};
use crate::input::playground_views::EnvQuery;
use crate::state::AppState;
use crate::views::playground_views::{
    BranchClone, BuildOverride, BuildRecordView, ComposeView, DebugView, EdgeState, EnvEntryView, EnvMetadataView,
    cannot_run, configuration, load,
};

/// The generated Compose YAML: what play runs, as one Compose document.
#[utoipa::path(get, path = "/api/playgrounds/{id}/compose", tag = "Playgrounds", params(("id" = i64, Path)),
    responses(
        (status = 200, body = ComposeView),
        (status = 404, body = ErrorEnvelope),
        (status = 422, description = "INVALID_STATE: the Playground's Compose cannot run on its Playroom", body = ErrorEnvelope),
    ))]
pub async fn compose(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<ComposeView>> {
    let loaded = load(&state, principal.account_id, id).await?;
    let Computed { desired, .. } = loaded.desired(&state).await?.map_err(cannot_run)?;
    Ok(JsonResponse(ComposeView {
        compose_yaml: desired::render_compose(&desired),
        compose_project: loaded.playground.compose_project,
    }))
}

/// The Playground's environment variables with the layer each comes from;
/// `?service=` narrows to one service's container.
#[utoipa::path(get, path = "/api/playgrounds/{id}/env_metadata", tag = "Playgrounds",
    params(("id" = i64, Path), ("service" = Option<String>, Query, description = "One service's environment")),
    responses(
        (status = 200, body = EnvMetadataView),
        (status = 404, body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: `service` does not run in the Playground; \
            INVALID_STATE: its Compose cannot run", body = ErrorEnvelope),
    ))]
pub async fn env_metadata(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Query(query): Query<EnvQuery>,
) -> ApiResult<JsonResponse<EnvMetadataView>> {
    let loaded = load(&state, principal.account_id, id).await?;
    let Computed { model, env_files, .. } = loaded.desired(&state).await?.map_err(cannot_run)?;
    let inputs = Inputs::new(&loaded.playground, &model).with_env_files(&env_files);
    let env = desired::env_metadata(&inputs, query.service.as_deref()).map_err(|m| ApiError::field("service", m))?;
    Ok(JsonResponse(EnvMetadataView {
        merged: env.merged,
        metadata: env
            .metadata
            .into_iter()
            .map(|(k, e)| (k, EnvEntryView { value: e.value, source: e.source }))
            .collect(),
        system_keys: env.system_keys,
        generated_keys: env.generated_keys,
    }))
}

/// Diagnostics: the generated Compose, the interpolated Playspec Compose,
/// and per service its container, config hash, networks, environment keys
/// and exposure (the route and whether the edge serves it, or why it is not
/// routed).
#[utoipa::path(get, path = "/api/playgrounds/{id}/debug", tag = "Playgrounds", params(("id" = i64, Path)),
    responses((status = 200, body = DebugView), (status = 404, body = ErrorEnvelope)))]
pub async fn debug(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<DebugView>> {
    let loaded = load(&state, principal.account_id, id).await?;
    let augmented_compose_template = loaded
        .playspec
        .as_ref()
        .and_then(|s| desired::interpolated_template(&s.base_compose_yaml, &loaded.playground).ok());
    let mut build_overrides = BTreeMap::new();
    let mut branch_clones = Vec::new();
    let (generated_compose_yaml, services_configuration, edge_network, error) = match loaded.desired(&state).await? {
        Ok(Computed { desired, .. }) => {
            let edge = EdgeState::load(&state, &loaded.playground).await?;
            let services = desired.services.iter().map(|s| configuration(s, &edge)).collect();
            for service in &desired.services {
                if let Some(b) = &service.built {
                    let view = BuildOverride {
                        playzone_id: b.playzone_id,
                        branch: b.branch.clone(),
                        commit: b.commit.clone(),
                        context: b.context.clone(),
                        dockerfile: b.dockerfile.clone(),
                        target: b.target.clone(),
                        args: b.args.clone(),
                        image: b.image.clone(),
                    };
                    build_overrides.insert(service.name.clone(), view);
                }
                branch_clones.extend(service.sources.iter().map(|src| BranchClone {
                    service: service.name.clone(),
                    branch: src.branch.clone(),
                    commit: src.commit.clone(),
                    path: if src.path.is_empty() { ".".to_owned() } else { src.path.clone() },
                    volume: src.volume.clone(),
                    mount_path: src.mount_path.clone(),
                    read_only: src.read_only,
                }));
            }
            (Some(desired::render_compose(&desired)), services, desired.edge_network.clone(), None)
        }
        Err(message) => (None, Vec::new(), None, Some(message)),
    };
    let build_records = play_store::builds::records(&state.store, loaded.playground.id)
        .await?
        .into_iter()
        .map(|r| BuildRecordView {
            service: r.service,
            commit: r.commit,
            image: r.image,
            cache_hit: r.cache_hit,
            succeeded: r.succeeded,
            duration_ms: r.duration_ms,
            log_tail: r.log_tail,
            created_at: r.created_at,
        })
        .collect();
    Ok(JsonResponse(DebugView {
        id: loaded.playground.id,
        compose_project: loaded.playground.compose_project.clone(),
        generated_compose_yaml,
        augmented_compose_template,
        services_configuration,
        build_overrides,
        build_records,
        branch_clones,
        edge_network,
        error,
    }))
}
