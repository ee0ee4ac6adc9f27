//! What `/api/playzones` accepts: its request bodies and queries, and the
//! checks that turn them, field by field, into core's types (shared with
//! server-side apply, which validates the same fields the same way).

use crate::{Error, Result};
use play_model::playzone::RepositoryPolicy;
use play_model::playzone::{Changes, Input, Stored};
use serde::Deserialize;

/// The create body.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewPlayzoneRequest {
    pub playzone: NewPlayzone,
}

/// Fields of a new Playzone. It starts `pending`; the sync loop lists its
/// branches and finds its Compose file.
#[derive(Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewPlayzone {
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::display_name))]
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::repository_url))]
    pub scm_url: String,
    /// The branch environments build from by default; when omitted (or
    /// `null`), the remote's default branch as sync finds it.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::branch_name_or_null))]
    pub default_branch: Option<String>,
    /// A private repository needs `credentials`.
    #[serde(default)]
    pub private: Option<bool>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::repository_token_or_null))]
    pub credentials: Option<String>,
}

impl NewPlayzone {
    /// The fields as the model's rules take them.
    pub fn input(self) -> Input {
        Input {
            name: Some(self.name),
            scm_url: Some(self.scm_url),
            default_branch: self.default_branch.map(Some),
            private: self.private,
            credentials: self.credentials,
            ssh_host_key: None,
        }
    }

    /// What a create through an installation keeps of it
    /// ([`crate::scm::by_url`]).
    pub fn wanted(&self) -> crate::scm::by_url::Wanted<'_> {
        crate::scm::by_url::Wanted {
            name: &self.name,
            scm_url: &self.scm_url,
            default_branch: self.default_branch.as_deref(),
            private: self.private,
        }
    }
}

impl std::fmt::Debug for NewPlayzone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewPlayzone").field("name", &self.name).field("scm_url", &self.scm_url).finish_non_exhaustive()
    }
}

/// The update body.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PlayzoneUpdateRequest {
    pub playzone: PlayzoneUpdate,
}

/// Any subset of the fields; an absent one is left as it is.
/// `default_branch: null` follows the remote's default branch again;
/// `credentials: ""` removes the token. A new URL, token or default branch
/// starts a sync.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PlayzoneUpdate {
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::display_name_or_null))]
    pub name: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::repository_url_or_null))]
    pub scm_url: Option<String>,
    #[serde(default, deserialize_with = "play_model::json::present")]
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::branch_name_or_null))]
    pub default_branch: Option<Option<String>>,
    #[serde(default)]
    pub private: Option<bool>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::repository_token_or_null))]
    pub credentials: Option<String>,
    /// For an ssh `scm_url`: the host key to pin (an OpenSSH public key
    /// line, a `known_hosts` line or a `SHA256:` fingerprint); `""`
    /// forgets the pin, and the next contact pins what it sees.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 16384))]
    pub ssh_host_key: Option<String>,
}

impl PlayzoneUpdate {
    /// The fields as the model's rules take them.
    pub fn input(self) -> Input {
        Input {
            name: self.name,
            scm_url: self.scm_url,
            default_branch: self.default_branch,
            private: self.private,
            credentials: self.credentials,
            ssh_host_key: self.ssh_host_key,
        }
    }
}

impl std::fmt::Debug for PlayzoneUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlayzoneUpdate")
            .field("name", &self.name)
            .field("scm_url", &self.scm_url)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct BranchesQuery {
    /// Case-insensitive substring of the branch name.
    #[cfg_attr(feature = "openapi", param(max_length = 255))]
    pub query: Option<String>,
    /// How many branches (default 20; above 50 reads 50); the default
    /// branch comes first, then by name.
    #[cfg_attr(feature = "openapi", param(minimum = 1))]
    pub limit: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct EnvDefaultsQuery {
    /// The branch whose env file is read (as the last sync recorded it).
    #[cfg_attr(feature = "openapi", param(min_length = 1, max_length = 255, pattern = "^[A-Za-z0-9._+/-]+$"))]
    pub branch: String,
    /// The env file's path in the repository (default `.env.example`).
    #[cfg_attr(feature = "openapi", param(min_length = 1, max_length = 255, pattern = "^[A-Za-z0-9_./-]+$"))]
    pub env_file_path: Option<String>,
}

/// The attach body: a repository of the account's source-hosting
/// installation.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AttachRequest {
    /// `owner/name`.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::repo_full_name))]
    pub repo_full_name: String,
    /// Where to find it when the account has not recorded it yet:
    /// `builtin` or `github`. Default: every active installation on the
    /// repository's owner.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "github", pattern = "^(builtin|github)$"))]
    pub provider: Option<String>,
    /// Which of the account's installations to look through.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub installation_id: Option<i64>,
}

pub fn changes(input: Input, stored: Option<Stored>, policy: &RepositoryPolicy) -> Result<Changes> {
    Changes::validate(input, stored, policy).map_err(Error::Validation)
}
