//! What `PATCH /api/schedules/{id}` and `PATCH /api/triggers/{id}` accept:
//! one launch setting, two kinds (a schedule runs a template's job at
//! set times, a trigger launches it for branches and pull requests).

use std::collections::BTreeMap;

use play_model::model::schedule::Activation;
use play_model::scopes::Scope;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::auth::{Principal, forbidden};
use crate::error::ApiResult;

/// Where and with what a schedule runs or a trigger launches.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchChanges {
    /// One of the account's Playrooms; `null` stops it (a trigger's
    /// Playgrounds stay as they are).
    #[serde(default, deserialize_with = "play_model::json::present")]
    #[schema(minimum = 1)]
    pub playroom_id: Option<Option<i64>>,
    /// The template's variables for each launch (replaces the ones set).
    /// Stored sealed and never shown.
    pub variables: Option<BTreeMap<String, serde_json::Value>>,
    pub paused: Option<bool>,
}

impl LaunchChanges {
    /// The change, once the caller may make it: one that makes the
    /// setting act launches Playgrounds, so it needs `playgrounds:write`
    /// beside the route's `import_templates:write`.
    pub fn authorised(self, principal: &Principal) -> ApiResult<Activation> {
        let change = Activation { playroom_id: self.playroom_id, variables: self.variables, paused: self.paused };
        if change.starts() && !principal.scopes.grants(Scope::PlaygroundsWrite) {
            return Err(forbidden(Scope::PlaygroundsWrite));
        }
        Ok(change)
    }
}

/// What `PUT` sets, whole.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetLaunchDefaultsRequest {
    /// One of the account's Playrooms; `null` or absent: none (settings
    /// that took one keep it).
    #[schema(minimum = 1)]
    pub playroom_id: Option<i64>,
}
