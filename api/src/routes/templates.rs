//! `/api/import_templates` (the templates themselves, search) and
//! `/api/template_categories`. Versions and launch are in
//! `template_versions`.
//!
//! A caller sees its own templates and, in the catalog, other accounts'
//! templates that have at least one public version; anything else is 404.
//! Only the owner changes or deletes a template (others get 404 too).

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_model::model::template::ListFilter;
use play_store::templates;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json, Query};
use crate::input::templates::{ListQuery, MAX_QUERY_CHARS, SearchQuery, TemplateRequest, fields};
use crate::state::AppState;
use crate::views::templates::{CategoryRecord, TemplateDetail, TemplateRecord, launch_settings, records};

/// The caller's templates and the public catalog.
#[utoipa::path(get, path = "/api/import_templates", tag = "Import templates",
    params(("category_id" = Option<i64>, Query, description = "only this category"),
        ("mine" = Option<bool>, Query, description = "true: only the caller's; false: only other accounts' public ones")),
    responses((status = 200, body = [TemplateRecord])))]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
    Query(query): Query<ListQuery>,
) -> ApiResult<JsonResponse<Vec<TemplateRecord>>> {
    let filter = ListFilter { category_id: query.category_id, mine: query.mine };
    let all = templates::list(&state.store, principal.account_id, filter).await?;
    Ok(JsonResponse(records(all, principal.account_id)))
}

/// Fuzzy search (typos, partial words) over names and descriptions of the
/// templates the caller can see; best first, at most 10.
#[utoipa::path(get, path = "/api/import_templates/search", tag = "Import templates",
    params(("query" = String, Query, max_length = 200, min_length = 1,
        description = "The text to look for: it must hold a letter or a digit")),
    responses((status = 200, body = [TemplateRecord]), (status = 422, body = ErrorEnvelope)))]
pub async fn search(
    State(state): State<AppState>,
    principal: Principal,
    Query(query): Query<SearchQuery>,
) -> ApiResult<JsonResponse<Vec<TemplateRecord>>> {
    let text = query.query.unwrap_or_default();
    if !text.chars().any(char::is_alphanumeric) {
        return Err(ApiError::field("query", "is required: letters or digits to look for"));
    }
    if text.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::field("query", format!("must be at most {MAX_QUERY_CHARS} characters")));
    }
    let found = templates::search(&state.store, principal.account_id, &text).await?;
    Ok(JsonResponse(records(found, principal.account_id)))
}

/// One template.
#[utoipa::path(get, path = "/api/import_templates/{id}", tag = "Import templates", params(("id" = i64, Path)),
    responses((status = 200, body = TemplateDetail), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<TemplateDetail>> {
    let template = templates::get(&state.store, principal.account_id, id).await?;
    // Its schedule and trigger are the owner's business only.
    let (schedule, trigger) = match template.account_id == principal.account_id {
        true => launch_settings(&state.store, principal.account_id, id).await?,
        false => (None, None),
    };
    let record = TemplateRecord::new(template, principal.account_id);
    Ok(JsonResponse(TemplateDetail { record, schedule, trigger }))
}

/// Create a template (without versions: add them with create_version).
#[utoipa::path(post, path = "/api/import_templates", tag = "Import templates", request_body = TemplateRequest,
    responses((status = 201, body = TemplateRecord), (status = 422, body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<TemplateRequest>,
) -> ApiResult<(StatusCode, JsonResponse<TemplateRecord>)> {
    let fields = fields(body.import_template, true)?;
    let template = templates::create(&state.store, principal.acting(), fields, &state.config.quotas).await?;
    Ok((StatusCode::CREATED, JsonResponse(TemplateRecord::new(template, principal.account_id))))
}

/// Update a template's name, description or category (owner only).
#[utoipa::path(patch, path = "/api/import_templates/{id}", tag = "Import templates", params(("id" = i64, Path)),
    request_body = TemplateRequest,
    responses((status = 200, body = TemplateRecord), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn update(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<TemplateRequest>,
) -> ApiResult<JsonResponse<TemplateRecord>> {
    let fields = fields(body.import_template, false)?;
    let template = templates::update(&state.store, principal.acting(), id, fields).await?;
    Ok(JsonResponse(TemplateRecord::new(template, principal.account_id)))
}

/// Delete a template and its versions (owner only). Playspecs launched from
/// it are not affected.
#[utoipa::path(delete, path = "/api/import_templates/{id}", tag = "Import templates", params(("id" = i64, Path)),
    responses((status = 204), (status = 404, body = ErrorEnvelope)))]
pub async fn delete(State(state): State<AppState>, principal: Principal, Id(id): Id) -> ApiResult<StatusCode> {
    // Its trigger's Playgrounds are destroyed with it (their loops are
    // woken by the commit: `play_store::wakes`).
    templates::delete(&state.store, principal.account_id, id, principal.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The template categories (read-only).
#[utoipa::path(get, path = "/api/template_categories", tag = "Import templates",
    responses((status = 200, body = [CategoryRecord])))]
pub async fn categories(
    State(state): State<AppState>,
    _principal: Principal,
) -> ApiResult<JsonResponse<Vec<CategoryRecord>>> {
    let all = templates::categories(&state.store).await?;
    Ok(JsonResponse(all.into_iter().map(CategoryRecord::from).collect()))
}
