//! What `/api/playgrounds/{id}/rollout`, `hard_restart` and `recreate`
//! accepts: its request bodies and queries, and the checks that turn them,
//! field by field, into core's types (shared with server-side apply, which
//! validates the same fields the same way).

use play_model::playground::ServiceSettings;
use serde::Deserialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RolloutRequest {
    #[serde(default)]
    pub playground: RolloutInput,
}

/// The settings a rollout may change; an absent field keeps its value, a
/// given one replaces it whole.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RolloutInput {
    #[schema(schema_with = play_model::openapi::env_vars_or_null)]
    pub env_overrides: Option<BTreeMap<String, String>>,
    #[schema(schema_with = play_model::openapi::subdomains_or_null)]
    pub service_subdomains: Option<BTreeMap<String, String>>,
    #[schema(schema_with = play_model::openapi::service_settings_or_null)]
    pub services: Option<BTreeMap<String, ServiceSettings>>,
    /// Its own `sleep_after` (`30m`, `never`); `null`: inherit its
    /// Playspec's, then the installation's (`docs/sleep.md`).
    #[serde(default, deserialize_with = "play_model::json::present")]
    #[schema(schema_with = play_model::openapi::sleep_after_or_null)]
    pub sleep_after: Option<Option<String>>,
}

impl RolloutInput {
    /// `sleep_after` parsed: `None` keeps the setting, `null` inherits.
    pub fn sleep_after(&self) -> Result<Option<play_model::playground::sleep::SleepAfter>, crate::error::ApiError> {
        play_model::playground::sleep::parse_change(self.sleep_after.as_ref().map(Option::as_deref))
            .map_err(|message| crate::error::ApiError::field("playground.sleep_after", message))
    }
}
