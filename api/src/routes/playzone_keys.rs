//! `POST /api/playzones/{id}/generate_ssh_key`: a deploy key for a
//! Playzone on an ssh URL (issue #52, item 2), as Playrooms have one. The
//! private half is sealed in the store and never answered; the public half
//! is answered and shown on the Playzone, to be added to the repository's
//! deploy keys (with write access, for `create_branch`).

use axum::Json as JsonResponse;
use axum::extract::State;
use play_model::ssh_keys;
use play_store::{playzone_ssh, playzones};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::Id;
use crate::state::AppState;
use crate::views::playrooms::GeneratedKey;

/// Generate a new Ed25519 deploy key for a Playzone on an ssh URL,
/// replacing its key, and sync it again. 422 `INVALID_STATE` for a
/// Playzone on an https URL.
#[utoipa::path(post, path = "/api/playzones/{id}/generate_ssh_key", tag = "Playzones", params(("id" = i64, Path)),
    responses((status = 200, body = GeneratedKey), (status = 404, body = ErrorEnvelope),
        (status = 422, description = "INVALID_STATE: the Playzone is not on an ssh URL", body = ErrorEnvelope)))]
pub async fn generate_ssh_key(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<GeneratedKey>> {
    let zone = playzones::get(&state.store, principal.account_id, id).await?;
    let pair = ssh_keys::generate_ed25519(&format!("play-playzone-{}", zone.id))
        .map_err(|e| ApiError::Core(play_core::Error::Internal(e.to_string())))?;
    let pair_text = (pair.private_openssh.as_str(), pair.public_openssh.as_str());
    playzone_ssh::set_key(&state.store, &state.secrets, principal.acting(), id, pair_text).await?;
    Ok(JsonResponse(GeneratedKey { id, ssh_public_key: pair.public_openssh, fingerprint: pair.fingerprint }))
}
