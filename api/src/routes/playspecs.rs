//! `/api/playspecs`: blueprints of Compose YAML plus classified services.
//!
//! The Compose text is validated under the trusted policy when stored (a
//! Playspec may be meant for a trusted Playroom); what the untrusted policy
//! would refuse is returned as `warnings` and enforced when a Playground is
//! created on an untrusted Playroom.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use play_core::FieldErrors;
use play_core::compose::classify::ServiceType;
use play_core::compose::{self, Issue, Policy, ServiceDefinition, ValidationReport};
use play_core::error::push_field_error;
use play_core::scopes::Scope;
use play_core::store::playrooms;
use play_core::store::playspec_files::{self, MountedFile, RegistryCredential};
use play_core::store::playspecs::{self, Playspec, PlayspecFields};
use play_core::validate;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::state::AppState;

const MAX_DESCRIPTION_CHARS: usize = 2000;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayspecRequest {
    pub playspec: PlayspecInput,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayspecInput {
    /// Required on create.
    #[schema(schema_with = crate::schemas::display_name_or_null)]
    pub name: Option<String>,
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// The Compose YAML (required on create). It must be a valid Compose
    /// file under the trusted policy; errors are keyed under this field.
    #[schema(example = "services:\n  web:\n    image: nginx:alpine\n")]
    pub base_compose_yaml: Option<String>,
    pub persist_volumes: Option<bool>,
    /// Overrides of the classified service definitions, matched by name.
    pub services: Option<Vec<ServiceInput>>,
    /// The Playzone (one of the account's) whose repository the Compose
    /// file belongs to: its relative paths (`./nginx.conf`, `./db/init`,
    /// `secrets.x.file`) are read from it at the Playground's commit, even
    /// when no service is built. `null` removes it.
    #[serde(default, deserialize_with = "crate::json::present")]
    #[schema(minimum = 1)]
    pub playzone_id: Option<Option<i64>>,
}

/// What a client may say about a service; everything else is derived from
/// the Compose text.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceInput {
    /// A service of `base_compose_yaml`.
    pub name: String,
    /// Must agree with the Compose text: `dynamic` (build) or `static` (image).
    #[serde(rename = "type")]
    #[schema(schema_with = service_type_or_null)]
    pub service_type: Option<String>,
    /// The Playzone a dynamic service is built from (one of the account's);
    /// without it, a `svc/repo_url` label links or creates one.
    #[schema(minimum = 1)]
    pub playzone_id: Option<i64>,
    #[schema(schema_with = crate::schemas::relative_path_or_null)]
    pub dockerfile_path: Option<String>,
    #[schema(schema_with = crate::schemas::relative_path_or_null)]
    pub env_file_path: Option<String>,
    #[schema(schema_with = crate::schemas::relative_path_or_null)]
    pub workdir: Option<String>,
    pub exposure: Option<ExposureInput>,
}

fn service_type_or_null() -> utoipa::openapi::Schema {
    crate::schemas::one_of_or_null(&["dynamic", "static"])
}

fn visibility_or_null() -> utoipa::openapi::Schema {
    crate::schemas::one_of_or_null(&["external", "internal"])
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExposureInput {
    pub enabled: bool,
    /// The container port; required when enabled.
    #[schema(schema_with = crate::schemas::port_or_null)]
    pub port: Option<i64>,
    /// Empty, `@`, or lowercase letters, digits and hyphens that start and
    /// end with a letter or digit.
    pub subdomain: Option<String>,
    /// `external` or `internal`.
    #[schema(schema_with = visibility_or_null)]
    pub visibility: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlayspecItem {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub locked: bool,
    pub persist_volumes: bool,
    /// The Playzone the Compose file belongs to (see the request).
    pub playzone_id: Option<i64>,
    pub playground_count: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlayspecDetail {
    #[serde(flatten)]
    pub item: PlayspecItem,
    pub base_compose_yaml: String,
    /// Service definitions: name, type, playzone_id, dockerfile_path,
    /// env_file_path, workdir, image, exposure.
    #[schema(value_type = Vec<Object>)]
    pub services: serde_json::Value,
    #[schema(value_type = Vec<Object>)]
    pub mounted_files: Vec<MountedFile>,
    #[schema(value_type = Vec<Object>)]
    pub credentials: Vec<RegistryCredential>,
    /// Compose warnings, and what untrusted Playrooms would refuse.
    #[schema(value_type = Vec<Object>)]
    pub warnings: Vec<Issue>,
}

impl From<&Playspec> for PlayspecItem {
    fn from(p: &Playspec) -> Self {
        PlayspecItem {
            id: p.id,
            name: p.name.clone(),
            description: p.description.clone(),
            locked: p.locked(),
            persist_volumes: p.persist_volumes,
            playzone_id: p.playzone_id,
            playground_count: p.playground_count,
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// Compose warnings plus the untrusted policy's refusals (with the
/// Playspec's mounted files and repository as its project), as warnings.
fn warnings(playspec: &Playspec, files: &[MountedFile]) -> Vec<Issue> {
    let yaml = &playspec.base_compose_yaml;
    let trusted = compose::validate_blueprint(yaml, &Policy::TRUSTED);
    let project = play_core::playground::policy_for(false, playspec, files);
    let untrusted = compose::validate_blueprint(yaml, &project);
    let mut out = trusted.warnings;
    out.extend(untrusted.errors.into_iter().filter(|e| !trusted.errors.contains(e)).map(|mut issue| {
        issue.message = format!("refused on untrusted Playrooms: {}", issue.message);
        issue
    }));
    out
}

async fn detail(state: &AppState, playspec: Playspec) -> ApiResult<PlayspecDetail> {
    let mounted_files = playspec_files::list_files(&state.store, playspec.id).await?;
    let (spec, files) = (playspec.clone(), mounted_files.clone());
    let warnings = state.cpu.run(move || warnings(&spec, &files)).await?;
    Ok(PlayspecDetail {
        item: PlayspecItem::from(&playspec),
        mounted_files,
        credentials: playspec_files::list_credentials(&state.store, playspec.id).await?,
        warnings,
        base_compose_yaml: playspec.base_compose_yaml,
        services: playspec.services,
    })
}

/// Validates the Compose text under the trusted policy and classifies its
/// services; errors are keyed under `playspec.base_compose_yaml`.
pub(crate) fn classify(yaml: &str, errors: &mut FieldErrors) -> Option<Vec<ServiceDefinition>> {
    let (report, model) = compose::parse_blueprint(yaml, &Policy::TRUSTED);
    for issue in &report.errors {
        let key = if issue.path.is_empty() {
            "playspec.base_compose_yaml".to_owned()
        } else {
            format!("playspec.base_compose_yaml.{}", issue.path)
        };
        let message = match issue.line {
            Some(line) => format!("{} (line {line})", issue.message),
            None => issue.message.clone(),
        };
        push_field_error(errors, key, message);
    }
    model.map(|m| compose::classify(&m))
}

/// Applies client overrides to the classified services, field by field.
fn apply_overrides(defs: &mut [ServiceDefinition], overrides: Vec<ServiceInput>, errors: &mut FieldErrors) {
    for (i, input) in overrides.into_iter().enumerate() {
        let field = |name: &str| format!("playspec.services[{i}].{name}");
        let Some(def) = defs.iter_mut().find(|d| d.name == input.name) else {
            push_field_error(errors, field("name"), format!("no service {:?} in base_compose_yaml", input.name));
            continue;
        };
        if let Some(kind) = input.service_type {
            let actual = serde_json::to_value(def.service_type).ok().and_then(|v| v.as_str().map(str::to_owned));
            if actual.as_deref() != Some(kind.as_str()) {
                push_field_error(
                    errors,
                    field("type"),
                    format!("the Compose text makes this service {}", actual.unwrap_or_default()),
                );
            }
        }
        if let Some(id) = input.playzone_id {
            if def.service_type != ServiceType::Dynamic {
                push_field_error(errors, field("playzone_id"), "only services built from source have a Playzone");
            } else if id < 1 {
                push_field_error(errors, field("playzone_id"), "must be a Playzone id");
            } else {
                def.playzone_id = Some(id);
            }
        }
        for (name, value, slot) in [
            ("dockerfile_path", input.dockerfile_path, &mut def.dockerfile_path),
            ("env_file_path", input.env_file_path, &mut def.env_file_path),
            ("workdir", input.workdir, &mut def.workdir),
        ] {
            if let Some(value) = value {
                if value.is_empty() || value.contains("..") || value.chars().any(char::is_control) {
                    push_field_error(errors, field(name), "must be a relative or absolute path without '..'");
                } else {
                    *slot = Some(value);
                }
            }
        }
        if let Some(exposure) = input.exposure {
            def.exposure.enabled = exposure.enabled;
            if let Some(port) = exposure.port {
                match u16::try_from(port) {
                    Ok(p) if p > 0 => def.exposure.port = Some(p),
                    _ => push_field_error(errors, field("exposure.port"), "must be from 1 to 65535"),
                }
            }
            if let Some(sub) = exposure.subdomain {
                match compose::svc::check_label_value(compose::svc::LabelKind::Subdomain, &sub) {
                    Ok(()) => def.exposure.subdomain = Some(sub),
                    Err(m) => push_field_error(errors, field("exposure.subdomain"), m),
                }
            }
            if let Some(v) = exposure.visibility {
                if v == "external" || v == "internal" {
                    def.exposure.visibility = Some(v);
                } else {
                    push_field_error(errors, field("exposure.visibility"), "must be external or internal");
                }
            }
            if def.exposure.enabled && def.exposure.port.is_none() {
                push_field_error(errors, field("exposure.port"), "is required when exposure is enabled");
            }
        }
    }
}

/// Validates a create or update body; `creating` requires name and Compose.
/// Runs on the CPU pool: it parses and classifies the Compose text.
pub(crate) fn fields(input: PlayspecInput, creating: bool, current_yaml: Option<String>) -> ApiResult<PlayspecFields> {
    fields_classified(input, creating, current_yaml, None)
}

/// [`fields`] with the Compose text's classification already made (server-
/// side apply makes it before its transaction: `crate::apply::prepare`).
pub(crate) fn fields_classified(
    input: PlayspecInput,
    creating: bool,
    current_yaml: Option<String>,
    classified: Option<crate::apply::prepare::Classified>,
) -> ApiResult<PlayspecFields> {
    let mut errors = FieldErrors::new();
    if creating && input.name.is_none() {
        push_field_error(&mut errors, "playspec.name", "is required");
    }
    if creating && input.base_compose_yaml.is_none() {
        push_field_error(&mut errors, "playspec.base_compose_yaml", "is required");
    }
    if let Some(Err(m)) = input.name.as_deref().map(validate::display_name) {
        push_field_error(&mut errors, "playspec.name", m);
    }
    if input.description.as_ref().is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS) {
        push_field_error(
            &mut errors,
            "playspec.description",
            format!("must be at most {MAX_DESCRIPTION_CHARS} characters"),
        );
    }
    // Services are re-derived whenever the Compose text or the overrides change.
    let yaml = input.base_compose_yaml.as_deref().or(current_yaml.as_deref());
    let mut services = None;
    let classify_here = |y: &str, errors: &mut FieldErrors| match classified {
        Some((found, defs)) => {
            errors.extend(found);
            defs
        }
        None => classify(y, errors),
    };
    if (input.base_compose_yaml.is_some() || input.services.is_some())
        && let Some(mut defs) = yaml.and_then(|y| classify_here(y, &mut errors))
    {
        apply_overrides(&mut defs, input.services.unwrap_or_default(), &mut errors);
        services = Some(defs);
    }
    if input.playzone_id.flatten().is_some_and(|id| id < 1) {
        push_field_error(&mut errors, "playspec.playzone_id", "must be a Playzone id");
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    Ok(PlayspecFields {
        name: input.name.map(|n| n.trim().to_owned()),
        description: input.description,
        base_compose_yaml: input.base_compose_yaml,
        services,
        persist_volumes: input.persist_volumes,
        playzone_id: input.playzone_id,
    })
}

/// Links the dynamic services to Playzones (`playzone::link`), and checks
/// the Playspec's own Playzone is one of the account's.
async fn link(
    state: &AppState,
    principal: &Principal,
    fields: &mut PlayspecFields,
    previous: &[ServiceDefinition],
) -> ApiResult<()> {
    let may_read_playzones = principal.scopes.grants(Scope::PlayzonesRead);
    if let Some(Some(id)) = fields.playzone_id {
        match play_core::store::playzones::get(&state.store, principal.account_id, id).await {
            Err(play_core::Error::NotFound(_)) => {
                return Err(ApiError::field("playspec.playzone_id", format!("no Playzone with id {id}")));
            }
            Ok(zone) if zone.has_credentials && !may_read_playzones => {
                return Err(ApiError::field(
                    "playspec.playzone_id",
                    format!("Playzone {id} holds an access token: linking it needs a key with playzones:read"),
                ));
            }
            other => {
                other?;
            }
        }
    }
    let Some(services) = fields.services.as_mut() else { return Ok(()) };
    let linker = play_core::playzone::link::Linker {
        store: &state.store,
        account_id: principal.account_id,
        policy: &state.config.repository_policy,
        limits: &state.config.quotas,
        actor: principal.actor(),
        may_read_playzones,
    };
    play_core::playzone::link::link(linker, services, previous, |d| format!("playspec.services.{}", d.name)).await?;
    Ok(())
}

/// List the account's Playspecs.
#[utoipa::path(get, path = "/api/playspecs", tag = "Playspecs", responses((status = 200, body = [PlayspecItem])))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<PlayspecItem>>> {
    let all = playspecs::list(&state.store, principal.account_id).await?;
    Ok(JsonResponse(all.iter().map(PlayspecItem::from).collect()))
}

/// A Playspec with its services, mounted files and credentials.
#[utoipa::path(get, path = "/api/playspecs/{id}", tag = "Playspecs", params(("id" = i64, Path)),
    responses((status = 200, body = PlayspecDetail), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<PlayspecDetail>> {
    let playspec = playspecs::get(&state.store, principal.account_id, id).await?;
    Ok(JsonResponse(detail(&state, playspec).await?))
}

/// The Playspec's service definitions.
#[utoipa::path(get, path = "/api/playspecs/{id}/services", tag = "Playspecs", params(("id" = i64, Path)),
    responses((status = 200, description = "Array of service definitions"), (status = 404, body = ErrorEnvelope)))]
pub async fn services(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<serde_json::Value>> {
    Ok(JsonResponse(playspecs::get(&state.store, principal.account_id, id).await?.services))
}

/// Create a Playspec from Compose YAML.
#[utoipa::path(post, path = "/api/playspecs", tag = "Playspecs", request_body = PlayspecRequest,
    responses((status = 201, body = PlayspecDetail), (status = 422, body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<PlayspecRequest>,
) -> ApiResult<(StatusCode, JsonResponse<PlayspecDetail>)> {
    let mut fields = state.cpu.run(move || fields(body.playspec, true, None)).await??;
    link(&state, &principal, &mut fields, &[]).await?;
    let playspec =
        playspecs::create(&state.store, principal.account_id, fields, &state.config.quotas, principal.actor()).await?;
    Ok((StatusCode::CREATED, JsonResponse(detail(&state, playspec).await?)))
}

/// Update a Playspec; refused with 422 LOCKED while Playgrounds use it.
#[utoipa::path(patch, path = "/api/playspecs/{id}", tag = "Playspecs", params(("id" = i64, Path)),
    request_body = PlayspecRequest,
    responses((status = 200, body = PlayspecDetail), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn update(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<PlayspecRequest>,
) -> ApiResult<JsonResponse<PlayspecDetail>> {
    let current = playspecs::get(&state.store, principal.account_id, id).await?;
    let previous = current.definitions()?;
    let current_yaml = current.base_compose_yaml;
    let mut fields = state.cpu.run(move || fields(body.playspec, false, Some(current_yaml))).await??;
    link(&state, &principal, &mut fields, &previous).await?;
    let playspec = playspecs::update(&state.store, principal.account_id, id, fields, principal.actor()).await?;
    Ok(JsonResponse(detail(&state, playspec).await?))
}

/// Delete a Playspec; refused with 422 LOCKED while Playgrounds use it.
#[utoipa::path(delete, path = "/api/playspecs/{id}", tag = "Playspecs", params(("id" = i64, Path)),
    responses((status = 204), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn delete(State(state): State<AppState>, principal: Principal, Id(id): Id) -> ApiResult<StatusCode> {
    playspecs::delete(&state.store, principal.account_id, id, principal.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateRequest {
    #[schema(example = "services:\n  web:\n    image: nginx:alpine\n")]
    pub compose_yaml: String,
    /// Validate under this Playroom's policy (trusted or not); default
    /// untrusted. An unknown id is 404.
    pub playroom_id: Option<i64>,
    /// Resolve relative paths (`./nginx.conf:/etc/nginx/nginx.conf`,
    /// `secrets.x.file: ./x.txt`) against this Playspec's mounted files;
    /// without it none resolves. An unknown id is 404.
    pub playspec_id: Option<i64>,
}

/// Validate Compose YAML; creates nothing.
#[utoipa::path(post, path = "/api/playspecs/validate_compose", tag = "Playspecs", request_body = ValidateRequest,
    responses((status = 200, description = "{valid, services: [{name, ports}], errors, warnings}"),
        (status = 404, description = "No such Playroom (`playroom_id`) or Playspec (`playspec_id`)", body = ErrorEnvelope)))]
pub async fn validate_compose(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<ValidateRequest>,
) -> ApiResult<JsonResponse<ValidationReport>> {
    let mut policy = match body.playroom_id {
        Some(id) => Policy::of_room(playrooms::get(&state.store, principal.account_id, id).await?.trusted),
        None => Policy::UNTRUSTED,
    };
    if let Some(id) = body.playspec_id {
        let playspec = playspecs::get(&state.store, principal.account_id, id).await?;
        let files = playspec_files::list_files(&state.store, playspec.id).await?;
        policy = play_core::playground::policy_for(policy.trusted, &playspec, &files);
    }
    Ok(JsonResponse(state.cpu.run(move || compose::validate_compose(&body.compose_yaml, &policy)).await?))
}
