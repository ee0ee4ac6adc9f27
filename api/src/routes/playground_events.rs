//! `GET /api/playgrounds/{id}/events`: what happened to a Playground,
//! newest first (play's addition: the spec has the events only as webhook
//! payloads; `play describe` shows them).

use axum::Json as JsonResponse;
use axum::extract::State;
use chrono::{DateTime, Utc};
use play_store::{events, playgrounds};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Query};
use crate::state::AppState;

pub const DEFAULT_LIMIT: i64 = 20;
pub const MAX_LIMIT: i64 = 100;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// How many, 1-100, default 20.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

/// One event, as webhooks deliver it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlaygroundEvent {
    pub id: i64,
    /// `playground.created`, `playground.status.changed`, ...
    pub event_type: String,
    pub timestamp: DateTime<Utc>,
    /// `api_key` or `system`.
    pub actor_type: Option<String>,
    pub actor_id: Option<i64>,
    #[schema(value_type = Object)]
    pub metadata: Option<serde_json::Value>,
}

/// A Playground's recent events, newest first.
#[utoipa::path(get, path = "/api/playgrounds/{id}/events", tag = "Playgrounds", params(("id" = i64, Path), EventsQuery),
    responses((status = 200, body = [PlaygroundEvent]), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn events(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Query(query): Query<EventsQuery>,
) -> ApiResult<JsonResponse<Vec<PlaygroundEvent>>> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::field("limit", format!("must be from 1 to {MAX_LIMIT}")));
    }
    playgrounds::get(&state.store, principal.account_id, id).await?;
    let found = events::recent_for(&state.store, principal.account_id, "playground", id, limit).await?;
    Ok(JsonResponse(
        found
            .into_iter()
            .map(|e| PlaygroundEvent {
                id: e.id,
                event_type: e.event_type,
                timestamp: e.timestamp,
                actor_type: e.actor_type,
                actor_id: e.actor_id,
                metadata: e.metadata,
            })
            .collect(),
    ))
}
