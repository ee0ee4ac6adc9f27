//! What `/api/import_templates/{id}/versions` and their launch accepts: its
//! request bodies and queries, and the checks that turn them, field by field,
//! into core's types (shared with server-side apply, which validates the same
//! fields the same way).

use crate::error::{ApiError, ApiResult};
use crate::extract::Json;
use play_model::FieldErrors;
use play_model::error::push_field_error;
use serde::Deserialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateVersionRequest {
    /// Compose YAML with the `svc` extension; it must pass template
    /// validation (errors are keyed under `template_body`).
    #[schema(example = "services:\n  web:\n    image: nginx:alpine\n")]
    pub template_body: String,
    /// Default false.
    pub public: Option<bool>,
}

/// `version_id` (and, for toggle_public, `public`) from the query or body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionParams {
    pub version_id: Option<i64>,
    /// toggle_public only: set to this instead of flipping.
    pub public: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TemplateLaunchRequest)]
pub struct LaunchRequest {
    /// An unknown id is 404.
    #[schema(value_type = i64, required = true)]
    pub playroom_id: Option<i64>,
    /// Default: the latest version the caller can see.
    pub version: Option<i64>,
    /// Variable name -> value (string, number or boolean).
    #[schema(value_type = Object)]
    pub variables: Option<BTreeMap<String, serde_json::Value>>,
    /// The Playspec's name; default: the template's name and a random suffix.
    #[schema(schema_with = play_model::openapi::display_name_or_null)]
    pub name: Option<String>,
}

/// The JSON body destroy_version reads (documentation: the handler reads
/// [`VersionParams`] and refuses `public`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DestroyVersionParams {
    pub version_id: Option<i64>,
}

/// Merges the query's and the body's parameters; `allow_public` says whether
/// `public` is meaningful.
pub(crate) fn version_params(
    query: VersionParams,
    body: Option<Json<VersionParams>>,
    allow_public: bool,
) -> ApiResult<(i64, Option<bool>)> {
    let from_body = body.map(|Json(b)| b).unwrap_or_default();
    let mut errors = FieldErrors::new();
    let mut pick = |name: &str, q: Option<i64>, b: Option<i64>| match (q, b) {
        (Some(q), Some(b)) if q != b => {
            push_field_error(&mut errors, name, "differs between the query and the body");
            None
        }
        (q, b) => q.or(b),
    };
    let version_id = pick("version_id", query.version_id, from_body.version_id);
    let public = match (query.public, from_body.public) {
        (Some(q), Some(b)) if q != b => {
            push_field_error(&mut errors, "public", "differs between the query and the body");
            None
        }
        (q, b) => q.or(b),
    };
    if version_id.is_none() && !errors.contains_key("version_id") {
        push_field_error(&mut errors, "version_id", "is required");
    }
    if public.is_some() && !allow_public {
        push_field_error(&mut errors, "public", "is not a parameter of destroy_version");
    }
    match version_id {
        Some(id) if errors.is_empty() => Ok((id, public)),
        _ => Err(ApiError::validation(errors)),
    }
}
