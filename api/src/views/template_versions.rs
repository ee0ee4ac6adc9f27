//! What `/api/import_templates/{id}/versions` and their launch answers: its
//! response bodies, built from core's records.

use crate::views::playground_urls::Urls;
use chrono::{DateTime, Utc};
use play_model::compose::Issue;
use play_model::model::template::Version;
use serde::Serialize;
use utoipa::ToSchema;

/// A version. Immutable but for `public`.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionRecord {
    pub id: i64,
    pub template_id: i64,
    /// 1, 2, 3... per template; a deleted version's number is not reused.
    pub version: i64,
    pub public: bool,
    pub template_body: String,
    /// The declared variables: name -> {name, required, random, default,
    /// validation, path, paths}.
    #[schema(value_type = Object)]
    pub variables: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

impl From<Version> for VersionRecord {
    fn from(v: Version) -> Self {
        VersionRecord {
            id: v.id,
            template_id: v.template_id,
            version: v.version,
            public: v.public,
            template_body: v.template_body,
            variables: v.variables,
            created_at: v.created_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedVersion {
    #[serde(flatten)]
    pub version: VersionRecord,
    /// Template warnings (unknown Compose keys, list-form unknown labels).
    #[schema(value_type = Vec<Object>)]
    pub warnings: Vec<Issue>,
}

/// What launch created.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = TemplateLaunchResponse)]
pub struct LaunchResponse {
    pub playspec_id: i64,
    pub playspec_name: String,
    pub template_id: i64,
    pub version: i64,
    /// Names of the values generated for `$$random__` references and
    /// `random: true` variables (the values are in the Playspec's Compose).
    pub generated_keys: Vec<String>,
    /// The Playground recorded on the Playroom (status `in_progress`).
    pub playground_id: i64,
    /// Service name -> URL of each routed service of the Playground
    /// (served once it runs).
    pub urls: Urls,
    /// Warnings of the compiled Compose.
    #[schema(value_type = Vec<Object>)]
    pub warnings: Vec<Issue>,
    /// Ids of the Playzones created for the template's build services
    /// (`svc/repo_url` of a repository the account had none for).
    pub playzones_created: Vec<i64>,
}
