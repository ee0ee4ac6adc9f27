//! What `/api/playzones` accepts: its request bodies and queries, and the
//! checks that turn them, field by field, into core's types (shared with
//! server-side apply, which validates the same fields the same way).

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use play_model::playzone::{Changes, Input, Stored};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// The create body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPlayzoneRequest {
    pub playzone: NewPlayzone,
}

/// Fields of a new Playzone. It starts `pending`; the sync loop lists its
/// branches and finds its Compose file.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPlayzone {
    #[schema(schema_with = crate::schemas::display_name)]
    pub name: String,
    #[schema(schema_with = crate::schemas::repository_url)]
    pub scm_url: String,
    /// The branch environments build from by default; when omitted (or
    /// `null`), the remote's default branch as sync finds it.
    #[serde(default)]
    #[schema(schema_with = crate::schemas::branch_name_or_null)]
    pub default_branch: Option<String>,
    /// A private repository needs `credentials`.
    #[serde(default)]
    pub private: Option<bool>,
    #[serde(default)]
    #[schema(schema_with = crate::schemas::repository_token_or_null)]
    pub credentials: Option<String>,
}

impl std::fmt::Debug for NewPlayzone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewPlayzone").field("name", &self.name).field("scm_url", &self.scm_url).finish_non_exhaustive()
    }
}

/// The update body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayzoneUpdateRequest {
    pub playzone: PlayzoneUpdate,
}

/// Any subset of the fields; an absent one is left as it is.
/// `default_branch: null` follows the remote's default branch again;
/// `credentials: ""` removes the token. A new URL, token or default branch
/// starts a sync.
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayzoneUpdate {
    #[serde(default)]
    #[schema(schema_with = crate::schemas::display_name_or_null)]
    pub name: Option<String>,
    #[serde(default)]
    #[schema(schema_with = crate::schemas::repository_url_or_null)]
    pub scm_url: Option<String>,
    #[serde(default, deserialize_with = "crate::json::present")]
    #[schema(schema_with = crate::schemas::branch_name_or_null)]
    pub default_branch: Option<Option<String>>,
    #[serde(default)]
    pub private: Option<bool>,
    #[serde(default)]
    #[schema(schema_with = crate::schemas::repository_token_or_null)]
    pub credentials: Option<String>,
}

impl std::fmt::Debug for PlayzoneUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlayzoneUpdate")
            .field("name", &self.name)
            .field("scm_url", &self.scm_url)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BranchesQuery {
    /// Case-insensitive substring of the branch name.
    #[param(max_length = 255)]
    pub query: Option<String>,
    /// How many branches (default 20, at most 50); the default branch
    /// comes first, then by name.
    #[param(minimum = 1, maximum = 50)]
    pub limit: Option<i64>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EnvDefaultsQuery {
    /// The branch whose env file is read (as the last sync recorded it).
    #[param(min_length = 1, max_length = 255, pattern = "^[A-Za-z0-9._+/-]+$")]
    pub branch: String,
    /// The env file's path in the repository (default `.env.example`).
    #[param(min_length = 1, max_length = 255, pattern = "^[A-Za-z0-9_./-]+$")]
    pub env_file_path: Option<String>,
}

/// The attach body: a repository of the account's source-hosting
/// installation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachRequest {
    /// `owner/name`.
    #[schema(schema_with = crate::schemas::repo_full_name)]
    pub repo_full_name: String,
    /// Where to find it when the account has not recorded it yet:
    /// `builtin` or `github`. Default: every active installation on the
    /// repository's owner.
    #[schema(value_type = Option<String>, example = "github", pattern = "^(builtin|github)$")]
    pub provider: Option<String>,
    /// Which of the account's installations to look through.
    #[schema(minimum = 1)]
    pub installation_id: Option<i64>,
}

pub(crate) fn changes(input: Input, stored: Option<Stored>, state: &AppState) -> ApiResult<Changes> {
    Changes::validate(input, stored, &state.config.repository_policy).map_err(ApiError::validation)
}
