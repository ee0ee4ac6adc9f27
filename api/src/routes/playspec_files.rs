//! A Playspec's mounted files (multipart upload) and registry credentials.
//! Every change refuses with 422 LOCKED while Playgrounds use the Playspec.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_model::FieldErrors;
use play_model::error::push_field_error;
use play_model::model::playspec::{
    MountedFile, MountedFileChange, NewMountedFile, NewRegistryCredential, RegistryCredential,
};
use play_store::playspec_files;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json, Multipart, Query};
use crate::input::playspec_files::{
    AddCredential, CredentialQuery, MAX_MOUNTED_FILE_BYTES, MountedFileQuery, MountedFileUpload, REGISTRY_TYPES,
    UpdateMountedFile, check_mount_path, check_targets, file_name, parse_bool, project_path, registry_host,
    service_names,
};
use crate::state::AppState;

/// Add a mounted file (multipart: file, mount_path, path, target_services[], readonly).
#[utoipa::path(post, path = "/api/playspecs/{id}/add_mounted_file", tag = "Playspecs", params(("id" = i64, Path)),
    request_body(content = MountedFileUpload, content_type = "multipart/form-data"),
    responses((status = 201, description = "The mounted file"), (status = 413, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn add(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Multipart(mut multipart): Multipart,
) -> ApiResult<(StatusCode, JsonResponse<MountedFile>)> {
    let known = service_names(&state.store, &state.cpu, principal.account_id, id).await?;
    let mut errors = FieldErrors::new();
    let (mut content, mut name, mut mount_path, mut targets, mut readonly) = (None, None, None, Vec::new(), true);
    let mut path = None;
    let multipart_error = |e: axum::extract::multipart::MultipartError| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge(MAX_MOUNTED_FILE_BYTES)
        } else {
            ApiError::BadRequest(format!("malformed multipart body: {}", e.body_text()))
        }
    };
    while let Some(field) = multipart.next_field().await.map_err(multipart_error)? {
        match field.name().unwrap_or("") {
            "file" => {
                match file_name(field.file_name()) {
                    Ok(n) => name = Some(n),
                    Err(m) => push_field_error(&mut errors, "file", m),
                }
                let bytes = field.bytes().await.map_err(multipart_error)?;
                if bytes.len() > MAX_MOUNTED_FILE_BYTES {
                    return Err(ApiError::PayloadTooLarge(MAX_MOUNTED_FILE_BYTES));
                }
                content = Some(bytes.to_vec());
            }
            "mount_path" => mount_path = Some(field.text().await.map_err(multipart_error)?),
            "path" => path = project_path(&field.text().await.map_err(multipart_error)?, &mut errors),
            "target_services[]" | "target_services" => {
                let text = field.text().await.map_err(multipart_error)?;
                if !text.is_empty() {
                    targets.push(text);
                }
            }
            "readonly" => {
                let text = field.text().await.map_err(multipart_error)?;
                match parse_bool(&text) {
                    Some(b) => readonly = b,
                    None => push_field_error(&mut errors, "readonly", "must be true or false"),
                }
            }
            other => push_field_error(&mut errors, other.to_owned(), "unknown field"),
        }
    }
    if content.is_none() {
        push_field_error(&mut errors, "file", "is required");
    }
    match mount_path.as_deref() {
        None => push_field_error(&mut errors, "mount_path", "is required"),
        Some(p) => {
            if let Err(m) = check_mount_path(p) {
                push_field_error(&mut errors, "mount_path", m);
            }
        }
    }
    check_targets(&targets, &known, &mut errors);
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let file = NewMountedFile {
        name: name.unwrap_or_default(),
        mount_path: mount_path.unwrap_or_default(),
        path,
        target_services: targets,
        readonly,
        content: content.unwrap_or_default(),
    };
    let added = playspec_files::add_file(&state.store, principal.acting(), id, file).await?;
    Ok((StatusCode::CREATED, JsonResponse(added)))
}

/// Change a mounted file's mount path, project path, target services or readonly flag.
#[utoipa::path(patch, path = "/api/playspecs/{id}/update_mounted_file", tag = "Playspecs", params(("id" = i64, Path)),
    request_body = UpdateMountedFile,
    responses((status = 200, description = "The mounted file"), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn update(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<UpdateMountedFile>,
) -> ApiResult<JsonResponse<MountedFile>> {
    let known = service_names(&state.store, &state.cpu, principal.account_id, id).await?;
    let mut errors = FieldErrors::new();
    if let Some(Err(m)) = body.mount_path.as_deref().map(check_mount_path) {
        push_field_error(&mut errors, "mount_path", m);
    }
    check_targets(body.target_services.as_deref().unwrap_or_default(), &known, &mut errors);
    let path = match body.path.as_deref() {
        None => None,
        Some("") => Some(None),
        Some(text) => project_path(text, &mut errors).map(Some),
    };
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let change = MountedFileChange {
        mount_path: body.mount_path,
        path,
        target_services: body.target_services,
        readonly: body.readonly,
    };
    let updated =
        playspec_files::update_file(&state.store, principal.acting(), id, body.mounted_file_id, change).await?;
    Ok(JsonResponse(updated))
}

/// Remove a mounted file (`?mounted_file_id=`).
#[utoipa::path(delete, path = "/api/playspecs/{id}/remove_mounted_file", tag = "Playspecs",
    params(("id" = i64, Path), ("mounted_file_id" = i64, Query)),
    responses((status = 204), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn remove(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Query(query): Query<MountedFileQuery>,
) -> ApiResult<StatusCode> {
    playspec_files::remove_file(&state.store, principal.account_id, id, query.mounted_file_id, principal.actor())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Add a private registry credential; the secret is sealed and never returned.
#[utoipa::path(post, path = "/api/playspecs/{id}/add_registry_credential", tag = "Playspecs", params(("id" = i64, Path)),
    request_body = AddCredential,
    responses((status = 201, description = "{id, registry_type, registry_url, username, created_at}"), (status = 422, body = ErrorEnvelope)))]
pub async fn add_credential(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<AddCredential>,
) -> ApiResult<(StatusCode, JsonResponse<RegistryCredential>)> {
    let mut errors = FieldErrors::new();
    if !REGISTRY_TYPES.contains(&body.registry_type.as_str()) {
        push_field_error(&mut errors, "registry_type", format!("must be one of {}", REGISTRY_TYPES.join(", ")));
    }
    let host = registry_host(&body.registry_url);
    if host.is_none() {
        push_field_error(&mut errors, "registry_url", "must be a registry host with an optional port, e.g. ghcr.io");
    }
    if body.username.trim().is_empty() || body.username.len() > 255 {
        push_field_error(&mut errors, "username", "must be 1-255 characters");
    }
    if body.secret.is_empty() || body.secret.len() > 8192 {
        push_field_error(&mut errors, "secret", "must be 1-8192 characters");
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let new = NewRegistryCredential {
        registry_type: body.registry_type,
        registry_url: host.unwrap_or_default(),
        username: body.username.trim().to_owned(),
        secret: body.secret,
    };
    let credential =
        playspec_files::add_credential(&state.store, &state.secrets, principal.account_id, id, new, principal.actor())
            .await?;
    Ok((StatusCode::CREATED, JsonResponse(credential)))
}

/// Remove a registry credential (`?credential_id=`).
#[utoipa::path(delete, path = "/api/playspecs/{id}/remove_registry_credential", tag = "Playspecs",
    params(("id" = i64, Path), ("credential_id" = i64, Query)),
    responses((status = 204), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn remove_credential(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Query(query): Query<CredentialQuery>,
) -> ApiResult<StatusCode> {
    playspec_files::remove_credential(&state.store, principal.account_id, id, query.credential_id, principal.actor())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
