//! `/api/apply`: server-side apply of manifest objects (`crate::apply`),
//! and the index of what apply created (`GET /api/apply/objects`), which
//! the CLI uses to find an object by its manifest name.

use std::collections::BTreeMap;

use axum::Json as JsonResponse;
use axum::extract::State;
use chrono::{DateTime, Utc};
use play_model::apply::Kind;
use play_store::applied;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::apply::{self, ApplyAnswer, ApplyRequest};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Json, Query};
use crate::state::AppState;

/// The largest apply body: a set of a few hundred Compose files.
pub const MAX_APPLY_BYTES: usize = 8 * 1024 * 1024;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApplyQuery {
    /// Validate and answer what would happen, writing nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Apply a set of manifest objects: each created, configured, unchanged
/// or pruned, all or nothing (`docs/manifests.md`).
#[utoipa::path(post, path = "/api/apply", tag = "Apply", params(ApplyQuery), request_body = ApplyRequest,
    responses(
        (status = 200, body = ApplyAnswer),
        (status = 403, description = "the key lacks a scope of a kind in the set", body = ErrorEnvelope),
        (status = 409, description = "CONFLICT: another apply changed an object of the set at the same time, or a \
            prune needs an object gone first; nothing was written", body = ErrorEnvelope),
        (status = 422, description = "any object invalid; every error keyed `objects[i].…`, nothing written",
            body = ErrorEnvelope),
    ))]
pub async fn apply(
    State(state): State<AppState>,
    principal: Principal,
    Query(query): Query<ApplyQuery>,
    Json(body): Json<ApplyRequest>,
) -> ApiResult<JsonResponse<ApplyAnswer>> {
    Ok(JsonResponse(apply::run(&state.apply_env(), &principal.for_apply(), body, query.dry_run).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ObjectsQuery {
    /// Only this kind.
    #[param(schema_with = kind_schema)]
    pub kind: Option<String>,
    /// Only objects of this apply set.
    #[param(min_length = 1, max_length = 200, pattern = "^[A-Za-z0-9._:/@=,-]+$")]
    pub apply_set: Option<String>,
}

fn kind_schema() -> utoipa::openapi::Object {
    let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    play_model::openapi::one_of(&kinds)
}

/// An object apply created.
#[derive(Debug, Serialize, ToSchema)]
pub struct AppliedObject {
    pub kind: String,
    /// Its manifest name.
    pub name: String,
    /// The API object (a Playspec's current revision).
    pub id: i64,
    pub apply_set: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// A Playspec's current revision name.
    pub revision: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The objects apply created in the account, of the kinds the key may read.
#[utoipa::path(get, path = "/api/apply/objects", tag = "Apply", params(ObjectsQuery),
    responses((status = 200, body = [AppliedObject]), (status = 422, body = ErrorEnvelope)))]
pub async fn objects(
    State(state): State<AppState>,
    principal: Principal,
    Query(query): Query<ObjectsQuery>,
) -> ApiResult<JsonResponse<Vec<AppliedObject>>> {
    let kind = match query.kind.as_deref() {
        Some(k) => Some(k.parse::<Kind>().map_err(|m| ApiError::field("kind", m))?),
        None => None,
    };
    if let Some(Err(m)) = query.apply_set.as_deref().map(play_model::apply::check_apply_set) {
        return Err(ApiError::field("apply_set", m));
    }
    let rows = applied::list(&state.store, principal.account_id).await?;
    let visible = rows
        .into_iter()
        .filter(|r| kind.is_none_or(|k| k == r.kind))
        .filter(|r| query.apply_set.as_ref().is_none_or(|s| r.apply_set.as_ref() == Some(s)))
        .filter(|r| principal.scopes.grants(apply::read_scope(r.kind)))
        .map(|r| AppliedObject {
            kind: r.kind.as_str().to_owned(),
            name: r.name,
            id: r.object_id,
            apply_set: r.apply_set,
            labels: r.labels,
            revision: r.revision,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
        .collect();
    Ok(JsonResponse(visible))
}
