//! `GET /api/playgrounds/{id}/job_result`: what a finished job-mode
//! Playground left: its exit code, when it completed, and the tail of its
//! watched services' logs.
//!
//! The result is written once by the Playground reconciler when every
//! watched service has exited, and stays readable (like the cached logs)
//! until the Playground's row is deleted: on DELETE, or when `expires_at`
//! (completion + the retention period) passes.

use axum::Json as JsonResponse;
use axum::extract::State;
use chrono::{DateTime, Utc};
use play_store::{job_results, playgrounds};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::Id;
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct JobResult {
    /// The first non-zero exit code of a watched service (in service order),
    /// else 0.
    pub exit_code: i64,
    /// The latest exit of a watched service.
    pub completed_at: DateTime<Utc>,
    /// The last 100 lines of each watched service; with several watched
    /// services each line is prefixed `service | `.
    pub tail_logs: String,
}

/// The result of a completed job-mode Playground.
#[utoipa::path(get, path = "/api/playgrounds/{id}/job_result", tag = "Playgrounds", params(("id" = i64, Path)),
    responses(
        (status = 200, body = JobResult),
        (status = 404, description = "No such Playground", body = ErrorEnvelope),
        (status = 422, description = "INVALID_STATE: not a job-mode Playground, or the job has not completed yet",
         body = ErrorEnvelope),
    ))]
pub async fn job_result(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<JobResult>> {
    let playground = playgrounds::get(&state.store, principal.account_id, id).await?;
    if !playground.job_mode {
        return Err(ApiError::Core(play_core::Error::InvalidState(
            "the Playground is not in job mode: only job-mode Playgrounds have a job result".into(),
        )));
    }
    let Some(result) = job_results::get(&state.store, id).await? else {
        return Err(ApiError::Core(play_core::Error::InvalidState(format!(
            "the job has not completed yet (status {}); its result is available once every watched service \
             has exited",
            playground.status
        ))));
    };
    Ok(JsonResponse(JobResult {
        exit_code: result.exit_code,
        completed_at: result.completed_at,
        tail_logs: result.tail_logs,
    }))
}
