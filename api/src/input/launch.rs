//! What `POST /api/launch` accepts: its request bodies and queries, and the
//! checks that turn them, field by field, into core's types (shared with
//! server-side apply, which validates the same fields the same way).

use serde::Deserialize;
use utoipa::ToSchema;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchRequest {
    /// Name of the Playspec and the Playground.
    #[schema(schema_with = play_model::openapi::display_name)]
    pub name: String,
    /// Compose YAML; it must be valid under the Playroom's policy (trusted
    /// without a Playroom).
    #[schema(example = "services:\n  web:\n    image: nginx:alpine\n")]
    pub compose_yaml: String,
    /// Required when create_playground is true. An unknown id is 404.
    pub playroom_id: Option<i64>,
    #[serde(default)]
    pub create_playground: bool,
    #[serde(default)]
    pub persist_volumes: bool,
    /// AI agent provider to attach (`claude-code`): recorded on the
    /// Playground the launch creates (its detail's `agent` and its
    /// `playground.created` event), so it needs `create_playground`. play
    /// runs no agent itself (docs/decisions/api.md).
    #[schema(schema_with = play_model::openapi::agent_or_null)]
    pub agent: Option<String>,
}
