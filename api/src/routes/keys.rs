//! `/api/keys`: create (token shown once), list, delete.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_model::model::account::NewApiKey;
use play_model::token;
use play_store::keys;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::input::keys::{CreateKeyRequest, validate, within_creator};
use crate::state::AppState;
use crate::views::keys::{ApiKeyView, CreatedKey, SignInLink};

/// Create an API key.
#[utoipa::path(post, path = "/api/keys", tag = "API keys", request_body = CreateKeyRequest,
    responses(
        (status = 201, description = "The key and its token (shown once)", body = CreatedKey),
        (status = 403, description = "A requested scope is not held by the caller, or the key would outlive the caller's", body = ErrorEnvelope),
        (status = 422, description = "Invalid fields, or the key quota is reached", body = ErrorEnvelope),
    ))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<CreateKeyRequest>,
) -> ApiResult<(StatusCode, JsonResponse<CreatedKey>)> {
    let (scopes, expires_at) = validate(&body.api_key).map_err(ApiError::validation)?;
    within_creator(&principal, &scopes, expires_at)?;
    let minted = token::generate();
    let key = keys::create(
        &state.store,
        NewApiKey {
            account_id: principal.account_id,
            user_id: principal.user_id,
            label: body.api_key.label.trim().to_owned(),
            client_id: minted.client_id.clone(),
            token_digest: state.pepper.digest(&minted.token),
            scopes,
            expires_at,
        },
        &state.config.quotas,
        principal.actor(),
    )
    .await?;
    Ok((StatusCode::CREATED, JsonResponse(CreatedKey { key: key.into(), token: minted.token })))
}

/// List the account's API keys (without secrets).
#[utoipa::path(get, path = "/api/keys", tag = "API keys",
    responses((status = 200, description = "The account's keys", body = [ApiKeyView])))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<ApiKeyView>>> {
    // Uses noted on this replica but not written yet, so `last_used_at`
    // is current here.
    keys::touch_many(&state.store, &state.keys.take_pending()).await?;
    let keys = keys::list(&state.store, principal.account_id).await?;
    Ok(JsonResponse(keys.into_iter().map(ApiKeyView::from).collect()))
}

/// Delete an API key. Its token stops working at once.
#[utoipa::path(delete, path = "/api/keys/{id}", tag = "API keys",
    params(("id" = i64, Path, description = "Key id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such key in this account", body = ErrorEnvelope),
    ))]
pub async fn delete(State(state): State<AppState>, principal: Principal, Id(id): Id) -> ApiResult<StatusCode> {
    keys::delete(&state.store, principal.account_id, id, principal.actor()).await?;
    // Refused on this replica's next request; others see the store's
    // revocation generation move.
    state.keys.forget(id);
    Ok(StatusCode::NO_CONTENT)
}

/// A one-time link that signs a browser in to the dashboard with the
/// calling key (its account and scopes, no more): for `play login --web`.
/// The link opens a page that asks to confirm; it works once, within ten
/// minutes, and not after its key is deleted. Any valid key may ask.
#[utoipa::path(post, path = "/api/sign_in_links", tag = "API keys",
    responses((status = 201, description = "The link's path (under play's own URL) and when it stops working", body = SignInLink)))]
pub async fn sign_in_link(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<(StatusCode, JsonResponse<SignInLink>)> {
    let (secret, expires_at) =
        play_store::sign_in_links::create(&state.store, &state.pepper, principal.key_id, principal.account_id).await?;
    Ok((StatusCode::CREATED, JsonResponse(SignInLink { path: format!("/sign-in/link/{secret}"), expires_at })))
}
