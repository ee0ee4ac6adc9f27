//! A Playspec's mounted files (multipart upload) and registry credentials.
//! Every change refuses with 422 LOCKED while Playgrounds use the Playspec.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_core::FieldErrors;
use play_core::compose::{self, Policy};
use play_core::error::push_field_error;
use play_core::store::playspec_files::{self, MountedFile, MountedFileChange, NewMountedFile, RegistryCredential};
use play_core::store::playspecs;
use play_core::validate;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json, Multipart, Query};
use crate::state::AppState;

/// The largest mounted file, in bytes.
pub const MAX_MOUNTED_FILE_BYTES: usize = 1024 * 1024;
/// Container paths a mounted file may not cover.
const RESERVED_PREFIXES: &[&str] = &["/proc", "/sys", "/dev"];
pub(crate) const REGISTRY_TYPES: &[&str] = &["docker_hub", "ghcr", "gitlab", "generic"];

pub(crate) fn check_mount_path(path: &str) -> Result<(), &'static str> {
    validate::absolute_path(path)?;
    if path == "/" || path.ends_with('/') || path.len() > 1024 {
        return Err("must name a file: an absolute path not ending in '/'");
    }
    if RESERVED_PREFIXES.iter().any(|p| path == *p || path.starts_with(&format!("{p}/"))) {
        return Err("must not be under /proc, /sys or /dev");
    }
    Ok(())
}

/// The services named in the Playspec's Compose text.
async fn service_names(state: &AppState, account_id: i64, playspec_id: i64) -> ApiResult<Vec<String>> {
    let playspec = playspecs::get(&state.store, account_id, playspec_id).await?;
    let yaml = playspec.base_compose_yaml;
    let (_, model) = state.cpu.run(move || compose::parse_compose(&yaml, &Policy::TRUSTED)).await?;
    Ok(model.map(|m| m.services.keys().cloned().collect()).unwrap_or_default())
}

fn check_targets(targets: &[String], known: &[String], errors: &mut FieldErrors) {
    for (i, t) in targets.iter().enumerate() {
        if !known.contains(t) {
            push_field_error(errors, format!("target_services[{i}]"), format!("no service {t:?} in the Playspec"));
        }
    }
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.trim() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// A project path from a request, normalised; `None` (with an error) when
/// it is not one.
pub(crate) fn project_path(text: &str, errors: &mut FieldErrors) -> Option<String> {
    compose::project_files::normalise_file_path(text).map_err(|e| push_field_error(errors, "path", e.to_string())).ok()
}

/// A file name from an upload: its last path segment, if that is usable.
pub(crate) fn file_name(raw: Option<&str>) -> Result<String, &'static str> {
    let name = raw.unwrap_or("").rsplit(['/', '\\']).next().unwrap_or("").trim();
    if name.is_empty() || name == "." || name == ".." || name.chars().any(char::is_control) || name.len() > 255 {
        Err("the file part needs a file name")
    } else {
        Ok(name.to_owned())
    }
}

/// The multipart form of add_mounted_file (documentation: the handler reads
/// the parts one by one).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MountedFileUpload {
    /// The file, at most 1 MiB, with a file name.
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
    /// Where the file appears in the containers: an absolute path of a
    /// file, not under /proc, /sys or /dev, at most 1024 bytes.
    #[schema(schema_with = mount_path)]
    pub mount_path: String,
    /// The file's path in the Compose project (`nginx/nginx.conf`, or as
    /// the Compose file writes it, `./nginx/nginx.conf`): a relative bind
    /// source, or a secret's or config's relative `file:`, that names it
    /// (or a folder above it) gets this file. Relative, without `..`.
    #[serde(default)]
    #[schema(max_length = 1024)]
    pub path: Option<String>,
    /// Services of the Playspec that get the file (repeat the part); all
    /// when none.
    #[serde(rename = "target_services[]", default)]
    pub target_services: Vec<String>,
    /// `true` or `false` (or `1`, `0`); default true.
    #[serde(default)]
    pub readonly: bool,
}

/// An absolute path (see `check_mount_path`) that names a file.
fn mount_path() -> utoipa::openapi::Schema {
    let path = utoipa::openapi::schema::ObjectBuilder::from(crate::schemas::absolute_path()).max_length(Some(1024));
    let file = utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some("[^/]$"));
    utoipa::openapi::schema::AllOfBuilder::new().item(path).item(file).into()
}

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
    let known = service_names(&state, principal.account_id, id).await?;
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
    let added = playspec_files::add_file(&state.store, principal.account_id, id, file, principal.actor()).await?;
    Ok((StatusCode::CREATED, JsonResponse(added)))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMountedFile {
    pub mounted_file_id: i64,
    /// As in add_mounted_file.
    #[schema(schema_with = mount_path_or_null)]
    pub mount_path: Option<String>,
    pub target_services: Option<Vec<String>>,
    pub readonly: Option<bool>,
    /// As in add_mounted_file; `""` removes the file's project path.
    #[schema(max_length = 1024)]
    pub path: Option<String>,
}

fn mount_path_or_null() -> utoipa::openapi::Schema {
    utoipa::openapi::schema::AnyOfBuilder::new()
        .item(mount_path())
        .item(utoipa::openapi::schema::ObjectBuilder::new().schema_type(utoipa::openapi::schema::Type::Null))
        .into()
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
    let known = service_names(&state, principal.account_id, id).await?;
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
    let updated = playspec_files::update_file(
        &state.store,
        principal.account_id,
        id,
        body.mounted_file_id,
        change,
        principal.actor(),
    )
    .await?;
    Ok(JsonResponse(updated))
}

#[derive(Debug, Deserialize)]
pub struct MountedFileQuery {
    pub mounted_file_id: i64,
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

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddCredential {
    /// docker_hub, ghcr, gitlab or generic.
    #[schema(schema_with = registry_type)]
    pub registry_type: String,
    /// The registry's host, with an optional port: `ghcr.io`, `registry.example.com:5000`.
    pub registry_url: String,
    /// 1-255 bytes, not blank.
    #[schema(schema_with = username)]
    pub username: String,
    /// Password or token, 1-8192 bytes. Write-only.
    #[schema(min_length = 1, max_length = 8192)]
    pub secret: String,
}

fn registry_type() -> utoipa::openapi::schema::Object {
    crate::schemas::one_of(REGISTRY_TYPES)
}

fn username() -> utoipa::openapi::schema::Object {
    crate::schemas::not_blank(255)
}

/// `https://host:port/` -> `host:port`; `None` when not a registry address.
pub(crate) fn registry_host(url: &str) -> Option<String> {
    let bare = url.trim().trim_start_matches("https://").trim_start_matches("http://").trim_end_matches('/');
    let (host, port) = match bare.rsplit_once(':') {
        Some((h, p)) if !h.contains(']') || bare.starts_with('[') => (h, Some(p)),
        _ => (bare, None),
    };
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0));
    (validate::host(host.trim_matches(['[', ']'])).is_ok() && port_ok && !bare.contains('/'))
        .then(|| bare.to_ascii_lowercase())
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
    let credential = playspec_files::add_credential(
        &state.store,
        &state.secrets,
        principal.account_id,
        id,
        &body.registry_type,
        &host.unwrap_or_default(),
        body.username.trim(),
        &body.secret,
        principal.actor(),
    )
    .await?;
    Ok((StatusCode::CREATED, JsonResponse(credential)))
}

#[derive(Debug, Deserialize)]
pub struct CredentialQuery {
    pub credential_id: i64,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_hosts() {
        assert_eq!(registry_host("https://ghcr.io/").as_deref(), Some("ghcr.io"));
        assert_eq!(registry_host("127.0.0.1:5000").as_deref(), Some("127.0.0.1:5000"));
        assert_eq!(registry_host("Registry.Example.com").as_deref(), Some("registry.example.com"));
        for bad in ["", "ghcr.io/owner", "host:99999", "a b"] {
            assert_eq!(registry_host(bad), None, "{bad}");
        }
    }

    #[test]
    fn mount_paths() {
        assert!(check_mount_path("/etc/app/config.yml").is_ok());
        for bad in ["/", "etc/x", "/a/../b", "/proc/x", "/dev", "/app/"] {
            assert!(check_mount_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn upload_file_names() {
        assert_eq!(file_name(Some("dir/config.yml")).unwrap(), "config.yml");
        assert_eq!(file_name(Some("C:\\x\\a.env")).unwrap(), "a.env");
        assert!(file_name(Some("..")).is_err());
        assert!(file_name(None).is_err());
    }
}
