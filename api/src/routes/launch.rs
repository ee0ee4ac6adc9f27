//! `POST /api/launch`: Compose YAML in, a Playspec (and optionally a
//! Playground) out, in one transaction (`play_core::playground::launch`).

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_core::playground::launch::{self, ComposeLaunch, Launched};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::playground_urls::{self, Urls};
use super::playgrounds;
use crate::auth::Principal;
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::Json;
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchRequest {
    /// Name of the Playspec and the Playground.
    #[schema(schema_with = crate::schemas::display_name)]
    pub name: String,
    /// Compose YAML; it must be valid under the Playroom's policy (trusted
    /// without a Playroom).
    #[schema(example = "services:\n  web:\n    image: nginx:alpine\n")]
    pub compose_yaml: String,
    /// Required when create_playground is true. An unknown id is 404.
    pub playroom_id: Option<i64>,
    #[serde(default)]
    pub create_playground: bool,
    #[serde(default)]
    pub persist_volumes: bool,
    /// AI agent provider to attach: not supported by this server yet, so
    /// it must be absent or null.
    #[schema(schema_with = crate::schemas::null_only)]
    pub agent: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LaunchResponse {
    /// Id of the new Playspec.
    pub playspecs_created: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub playground_id: Option<i64>,
    /// Playzones created for build services that name their repository
    /// (`svc/repo_url`); a Playzone of the account with that URL is reused.
    pub playzones_created: Vec<i64>,
    /// Service name -> URL of each routed service of the new Playground
    /// (served once it runs); `{}` without a Playground.
    pub urls: Urls,
}

/// Create a Playspec from Compose YAML, and optionally a Playground.
#[utoipa::path(post, path = "/api/launch", tag = "Launch", request_body = LaunchRequest,
    responses((status = 201, body = LaunchResponse), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn launch(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<LaunchRequest>,
) -> ApiResult<(StatusCode, JsonResponse<LaunchResponse>)> {
    let request = ComposeLaunch {
        name: body.name,
        compose_yaml: body.compose_yaml,
        playroom_id: body.playroom_id,
        create_playground: body.create_playground,
        persist_volumes: body.persist_volumes,
        agent: body.agent,
    };
    let limits = state.config.limits();
    let Launched { playspec, playground, playzones_created } =
        launch::launch_compose(&state.store, &state.cpu, principal.account_id, request, limits, principal.actor())
            .await?;
    let urls = match &playground {
        Some(p) => {
            playgrounds::wake(&state, p);
            playground_urls::urls(&state, p).await?
        }
        None => Urls::new(),
    };
    Ok((
        StatusCode::CREATED,
        JsonResponse(LaunchResponse {
            playspecs_created: playspec.id,
            playground_id: playground.map(|p| p.id),
            playzones_created,
            urls,
        }),
    ))
}
