//! `POST /api/launch`: Compose YAML in, a Playspec (and optionally a
//! Playground) out, in one transaction (`play_core::playground::launch`).

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_core::playground::launch::{self, ComposeLaunch, Launched};

use crate::auth::Principal;
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::Json;
use crate::input::launch::LaunchRequest;
use crate::state::AppState;
use crate::views::launch::LaunchResponse;
use crate::views::playground_urls::{self, Urls};

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
    let limits = state.limits();
    let Launched { playspec, playground, playzones_created } =
        launch::launch_compose(&state.store, &state.cpu, principal.account_id, request, limits, principal.actor())
            .await?;
    let urls = match &playground {
        Some(p) => playground_urls::urls(&state, p).await?,
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
