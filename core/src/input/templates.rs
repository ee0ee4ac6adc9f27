//! What `/api/import_templates` accepts: its request bodies and queries, and
//! the checks that turn them, field by field, into core's types (shared with
//! server-side apply, which validates the same fields the same way).

use crate::{Error, Result};
use play_model::FieldErrors;
use play_model::error::push_field_error;
use play_model::model::template::TemplateFields;
use play_model::validate;
use serde::Deserialize;

pub const MAX_DESCRIPTION_CHARS: usize = 2000;
pub const MAX_QUERY_CHARS: usize = 200;

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TemplateRequest {
    pub import_template: TemplateInput,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TemplateInput {
    /// Required on create.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::display_name_or_null))]
    pub name: Option<String>,
    #[cfg_attr(feature = "openapi", schema(max_length = 2000))]
    pub description: Option<String>,
    /// An id from `GET /api/template_categories` (required on create).
    pub category_id: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    pub category_id: Option<i64>,
    pub mine: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    pub query: Option<String>,
}

/// Validates a create or update body; `creating` requires name and category.
pub fn fields(input: TemplateInput, creating: bool) -> Result<TemplateFields> {
    let mut errors = FieldErrors::new();
    if creating && input.name.is_none() {
        push_field_error(&mut errors, "import_template.name", "is required");
    }
    if creating && input.category_id.is_none() {
        push_field_error(&mut errors, "import_template.category_id", "is required");
    }
    if let Some(Err(m)) = input.name.as_deref().map(validate::display_name) {
        push_field_error(&mut errors, "import_template.name", m);
    }
    if input.description.as_ref().is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS) {
        push_field_error(
            &mut errors,
            "import_template.description",
            format!("must be at most {MAX_DESCRIPTION_CHARS} characters"),
        );
    }
    if !errors.is_empty() {
        return Err(Error::Validation(errors));
    }
    Ok(TemplateFields {
        name: input.name.map(|n| n.trim().to_owned()),
        description: input.description,
        category_id: input.category_id,
    })
}

/// Refuses a template whose schedule fires more often than the operator
/// allows (`ApiConfig::schedule_min_interval`); errors keyed as
/// `svc.schedule_config.cron`.
pub fn check_schedule(
    info: &play_model::compose::svc::TemplateInfo,
    minimum: std::time::Duration,
) -> Result<(), play_model::FieldErrors> {
    let Some(config) = info.schedule_config.as_ref() else { return Ok(()) };
    let Ok(Some(spec)) = play_model::compose::svc::namespace::schedule_spec(config) else { return Ok(()) };
    let minimum = chrono::Duration::from_std(minimum).unwrap_or(chrono::Duration::MAX);
    match play_model::schedule::too_frequent(&spec, minimum, play_model::time::now()) {
        Some(message) => {
            let mut errors = play_model::FieldErrors::new();
            play_model::error::push_field_error(&mut errors, "svc.schedule_config.cron", message);
            Err(errors)
        }
        None => Ok(()),
    }
}
