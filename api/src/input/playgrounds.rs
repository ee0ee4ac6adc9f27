//! What `/api/playgrounds` accepts: its request bodies and queries, and the
//! checks that turn them, field by field, into core's types (shared with
//! server-side apply, which validates the same fields the same way).

use play_core::playground::CreateRequest;
use play_model::playground::ServiceSettings;
use serde::Deserialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaygroundRequest {
    pub playground: PlaygroundInput,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaygroundInput {
    #[schema(schema_with = play_model::openapi::display_name, required = true)]
    pub name: Option<String>,
    /// An unknown id is 404.
    #[schema(value_type = i64, required = true)]
    pub playspec_id: Option<i64>,
    /// An unknown id is 404.
    #[schema(value_type = i64, required = true)]
    pub playroom_id: Option<i64>,
    #[serde(default)]
    pub job_mode: bool,
    /// Job mode only; empty means every dynamic service. Services of the
    /// Playspec.
    #[serde(default)]
    pub watched_services: Vec<String>,
    /// Variables for every service.
    #[serde(default)]
    #[schema(schema_with = play_model::openapi::env_vars)]
    pub env_overrides: BTreeMap<String, String>,
    /// Service name -> subdomain; only for exposed services.
    #[serde(default)]
    #[schema(schema_with = play_model::openapi::subdomains)]
    pub service_subdomains: BTreeMap<String, String>,
    /// Service name -> {git_config, production, env_vars}.
    #[serde(default)]
    #[schema(schema_with = play_model::openapi::service_settings)]
    pub services: BTreeMap<String, ServiceSettings>,
    /// Sleep after this long without activity at its edge (`30m`, `2h`;
    /// 5 s to 30 days), or `never`. Absent: its Playspec's `sleep_after`,
    /// else the installation's default (off unless the operator sets one).
    /// A job-mode Playground never sleeps.
    #[schema(schema_with = play_model::openapi::sleep_after)]
    pub sleep_after: Option<String>,
}

impl From<PlaygroundInput> for CreateRequest {
    fn from(input: PlaygroundInput) -> Self {
        CreateRequest {
            name: input.name,
            playspec_id: input.playspec_id,
            playroom_id: input.playroom_id,
            job_mode: input.job_mode,
            watched_services: input.watched_services,
            env_overrides: input.env_overrides,
            service_subdomains: input.service_subdomains,
            services: input.services,
            sleep_after: input.sleep_after,
        }
    }
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtendRequest {
    /// Hours to add, 1-720; default 8 (`play_model::playground::ttl`).
    #[schema(minimum = 1, maximum = 720)]
    pub duration_hours: Option<i64>,
}
