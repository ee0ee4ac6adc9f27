//! What `/api/playspecs` accepts: its request bodies and queries, and the
//! checks that turn them, field by field, into core's types (shared with
//! server-side apply, which validates the same fields the same way).

use crate::playground::launch::Limits;
use crate::{Error, Result};
use play_model::FieldErrors;
use play_model::compose::classify::ServiceType;
use play_model::compose::{self, Policy, ServiceDefinition};
use play_model::error::push_field_error;
use play_model::model::event::Acting;
use play_model::model::playspec::PlayspecFields;
use play_model::scopes::Scope;
use play_model::scopes::ScopeSet;
use play_model::validate;
use play_store::Store;
use serde::Deserialize;

/// A Compose file's parse, classified: the errors found and the services
/// (what [`classify`] answers; server-side apply makes it before its
/// transaction, `crate::apply::prepare`).
pub type Classified = (FieldErrors, Option<Vec<ServiceDefinition>>);

pub const MAX_DESCRIPTION_CHARS: usize = 2000;

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PlayspecRequest {
    pub playspec: PlayspecInput,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PlayspecInput {
    /// Required on create.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::display_name_or_null))]
    pub name: Option<String>,
    #[cfg_attr(feature = "openapi", schema(max_length = 2000))]
    pub description: Option<String>,
    /// The Compose YAML (required on create). It must be a valid Compose
    /// file under the trusted policy; errors are keyed under this field.
    #[cfg_attr(feature = "openapi", schema(example = "services:\n  web:\n    image: nginx:alpine\n"))]
    pub base_compose_yaml: Option<String>,
    pub persist_volumes: Option<bool>,
    /// Overrides of the classified service definitions, matched by name.
    pub services: Option<Vec<ServiceInput>>,
    /// The Playzone (one of the account's) whose repository the Compose
    /// file belongs to: its relative paths (`./nginx.conf`, `./db/init`,
    /// `secrets.x.file`) are read from it at the Playground's commit, even
    /// when no service is built. `null` removes it.
    #[serde(default, deserialize_with = "play_model::json::present")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub playzone_id: Option<Option<i64>>,
    /// The default `sleep_after` of its Playgrounds (`30m`, 5 s to 30
    /// days, or `never`); `null` or absent on create: the installation's
    /// default. A Playground's own `sleep_after` wins.
    #[serde(default, deserialize_with = "play_model::json::present")]
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::sleep_after_or_null))]
    pub sleep_after: Option<Option<String>>,
}

/// What a client may say about a service; everything else is derived from
/// the Compose text.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ServiceInput {
    /// A service of `base_compose_yaml`.
    pub name: String,
    /// Must agree with the Compose text: `dynamic` (build) or `static` (image).
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(schema_with = service_type_or_null))]
    pub service_type: Option<String>,
    /// The Playzone a dynamic service is built from (one of the account's);
    /// without it, a `svc/repo_url` label links or creates one.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub playzone_id: Option<i64>,
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::relative_path_or_null))]
    pub dockerfile_path: Option<String>,
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::relative_path_or_null))]
    pub env_file_path: Option<String>,
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::relative_path_or_null))]
    pub workdir: Option<String>,
    pub exposure: Option<ExposureInput>,
}

#[cfg(feature = "openapi")]
pub fn service_type_or_null() -> utoipa::openapi::Schema {
    play_model::openapi::one_of_or_null(&["dynamic", "static"])
}

#[cfg(feature = "openapi")]
pub fn visibility_or_null() -> utoipa::openapi::Schema {
    play_model::openapi::one_of_or_null(&["external", "internal"])
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ExposureInput {
    pub enabled: bool,
    /// The container port; required when enabled.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::port_or_null))]
    pub port: Option<i64>,
    /// Empty, `@`, or lowercase letters, digits and hyphens that start and
    /// end with a letter or digit.
    pub subdomain: Option<String>,
    /// `external` or `internal`.
    #[cfg_attr(feature = "openapi", schema(schema_with = visibility_or_null))]
    pub visibility: Option<String>,
}

/// Validates the Compose text under the trusted policy and classifies its
/// services; errors are keyed under `playspec.base_compose_yaml`.
pub fn classify(yaml: &str, errors: &mut FieldErrors) -> Option<Vec<ServiceDefinition>> {
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
pub fn apply_overrides(defs: &mut [ServiceDefinition], overrides: Vec<ServiceInput>, errors: &mut FieldErrors) {
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
pub fn fields(input: PlayspecInput, creating: bool, current_yaml: Option<String>) -> Result<PlayspecFields> {
    fields_classified(input, creating, current_yaml, None)
}

/// [`fields`] with the Compose text's classification already made (server-
/// side apply makes it before its transaction: `crate::apply::prepare`).
pub fn fields_classified(
    input: PlayspecInput,
    creating: bool,
    current_yaml: Option<String>,
    classified: Option<Classified>,
) -> Result<PlayspecFields> {
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
    let sleep_after =
        match play_model::playground::sleep::parse_change(input.sleep_after.as_ref().map(Option::as_deref)) {
            Ok(change) => change,
            Err(message) => {
                push_field_error(&mut errors, "playspec.sleep_after", message);
                None
            }
        };
    if input.playzone_id.flatten().is_some_and(|id| id < 1) {
        push_field_error(&mut errors, "playspec.playzone_id", "must be a Playzone id");
    }
    if !errors.is_empty() {
        return Err(Error::Validation(errors));
    }
    Ok(PlayspecFields {
        name: input.name.map(|n| n.trim().to_owned()),
        description: input.description,
        base_compose_yaml: input.base_compose_yaml,
        services,
        persist_volumes: input.persist_volumes,
        playzone_id: input.playzone_id,
        sleep_after,
    })
}

/// Links the dynamic services to Playzones (`playzone::link`), and checks
/// the Playspec's own Playzone is one of the account's. `by` and `scopes`
/// are the caller's: a Playzone that reads privately needs `playzones:read`.
pub async fn link(
    store: &Store,
    limits: Limits<'_>,
    (by, scopes): (Acting, &ScopeSet),
    fields: &mut PlayspecFields,
    previous: &[ServiceDefinition],
) -> Result<()> {
    let may_read_playzones = scopes.grants(Scope::PlayzonesRead);
    if let Some(Some(id)) = fields.playzone_id {
        match play_store::playzones::get(store, by.account_id, id).await {
            Err(crate::Error::NotFound(_)) => {
                return Err(Error::field("playspec.playzone_id", format!("no Playzone with id {id}")));
            }
            Ok(zone) if zone.reads_privately() && !may_read_playzones => {
                return Err(Error::field(
                    "playspec.playzone_id",
                    format!(
                        "Playzone {id} reads its repository with an access token or an installation: linking it needs a key with playzones:read"
                    ),
                ));
            }
            other => {
                other?;
            }
        }
    }
    let Some(services) = fields.services.as_mut() else { return Ok(()) };
    let linker = crate::playzone::link::Linker {
        store,
        account_id: by.account_id,
        policy: limits.repositories,
        hosts: limits.hosts,
        limits: limits.quotas,
        actor: by.actor,
        may_read_playzones,
    };
    crate::playzone::link::link(linker, services, previous, |d| format!("playspec.services.{}", d.name)).await?;
    Ok(())
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ValidateRequest {
    #[cfg_attr(feature = "openapi", schema(example = "services:\n  web:\n    image: nginx:alpine\n"))]
    pub compose_yaml: String,
    /// Validate under this Playroom's policy (trusted or not); default
    /// untrusted. An unknown id is 404.
    pub playroom_id: Option<i64>,
    /// Resolve relative paths (`./nginx.conf:/etc/nginx/nginx.conf`,
    /// `secrets.x.file: ./x.txt`) against this Playspec's mounted files;
    /// without it none resolves. An unknown id is 404.
    pub playspec_id: Option<i64>,
}
