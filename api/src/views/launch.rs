//! What `POST /api/launch` answers: its response bodies, built from core's
//! records.

use crate::views::playground_urls::Urls;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
pub struct LaunchResponse {
    /// Id of the new Playspec.
    pub playspecs_created: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub playground_id: Option<i64>,
    /// Playzones created for build services that name their repository
    /// (`svc/repo_url`); a Playzone of the account with that URL is reused.
    pub playzones_created: Vec<i64>,
    /// Service name -> URL of each routed service of the new Playground
    /// (served once it runs); `{}` without a Playground.
    pub urls: Urls,
}
