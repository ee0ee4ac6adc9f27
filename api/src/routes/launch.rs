//! `POST /api/launch`: Compose YAML in, a Playspec (and optionally a
//! Playground) out, in one transaction.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_core::FieldErrors;
use play_core::compose::{self, Policy};
use play_core::error::push_field_error;
use play_core::playground::launch::{self, Launch, LaunchName, LaunchedPlayground};
use play_core::store::playrooms;
use play_core::store::playspecs::PlayspecFields;
use play_core::validate;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::Json;
use crate::routes::playgrounds::{WAKE_KIND, ttl};
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
    /// Playzones auto-created from build services (none until Playzones exist).
    pub playzones_created: Vec<i64>,
}

/// Create a Playspec from Compose YAML, and optionally a Playground.
#[utoipa::path(post, path = "/api/launch", tag = "Launch", request_body = LaunchRequest,
    responses((status = 201, body = LaunchResponse), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn launch(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<LaunchRequest>,
) -> ApiResult<(StatusCode, JsonResponse<LaunchResponse>)> {
    let mut errors = FieldErrors::new();
    if let Err(m) = validate::display_name(&body.name) {
        push_field_error(&mut errors, "name", m);
    }
    if body.agent.is_some() {
        push_field_error(&mut errors, "agent", "agents are not supported by this server");
    }
    if body.create_playground && body.playroom_id.is_none() {
        push_field_error(&mut errors, "playroom_id", "is required when create_playground is true");
    }
    // Validate under the target Playroom's policy when there is one.
    let policy = match body.playroom_id {
        Some(id) => Policy { trusted: playrooms::get(&state.store, principal.account_id, id).await?.trusted },
        None => Policy::TRUSTED,
    };
    let yaml = body.compose_yaml.clone();
    let (report, model) = state.cpu.run(move || compose::parse_compose(&yaml, &policy)).await?;
    for issue in &report.errors {
        let key =
            if issue.path.is_empty() { "compose_yaml".to_owned() } else { format!("compose_yaml.{}", issue.path) };
        push_field_error(&mut errors, key, issue.message.clone());
    }
    let (Some(model), true) = (model, errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    let fields = PlayspecFields {
        name: None,
        description: Some(String::new()),
        base_compose_yaml: Some(body.compose_yaml),
        services: Some(compose::classify(&model)),
        persist_volumes: Some(body.persist_volumes),
    };
    // The Playroom was checked above and the Compose passed its policy.
    let playground = match (body.create_playground, body.playroom_id) {
        (true, Some(playroom_id)) => Some(LaunchedPlayground { playroom_id, job_mode: false, ttl: ttl(&state, false) }),
        _ => None,
    };
    let launch = Launch { name: LaunchName::Given(body.name.trim().to_owned()), playspec: fields, playground };
    let (playspec, playground) =
        launch::record_launch(&state.store, principal.account_id, launch, &state.config.quotas, principal.actor())
            .await?;
    let playground_id = playground.map(|p| p.id);
    if let Some(id) = playground_id {
        state.waker.wake(WAKE_KIND, id);
    }
    Ok((
        StatusCode::CREATED,
        JsonResponse(LaunchResponse { playspecs_created: playspec.id, playground_id, playzones_created: Vec::new() }),
    ))
}
