//! What `/api/repos` accepts (the contract's repositories facility): the
//! request bodies, and the checks that turn them, field by field, into the
//! requests of `crate::scm::flows`. A field the contract gives no
//! default (`name`, `repo`, `files`, `message` where they occur) is
//! required; a missing one is a field error like any other.

use crate::Error;
use crate::scm::flows::{CreateRequest, PushRequest};
use crate::scm::hosts::Choice;
use play_model::FieldErrors;
use play_model::error::push_field_error;
use play_model::scm::model::Provider;
use play_model::scm::{DEFAULT_INITIAL_MESSAGE, PushFile};
use serde::Deserialize;

/// Extra room for JSON around a push's content: escapes, names, paths.
/// A push's body may be this much larger than its content bound.
pub const MAX_PUSH_BODY_BYTES: usize = 2 * play_model::scm::files::MAX_PUSH_BYTES + 1024 * 1024;

/// `POST /api/repos`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateRepoRequest {
    #[cfg_attr(feature = "openapi", schema(required = true, schema_with = play_model::openapi::repo_name))]
    pub name: Option<String>,
    /// At most 1,000 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::repo_description_or_null))]
    pub description: Option<String>,
    /// Default `true`.
    pub private: Option<bool>,
    /// Default `false`: `true` makes a first commit with a README.
    pub auto_init: Option<bool>,
    /// Where to create it: `builtin` (play's own Git host) or `github`
    /// (the account's GitHub App installation). Default: the account's
    /// only choice; with several, this or `installation_id` is required.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "builtin", pattern = "^(builtin|github)$"))]
    pub provider: Option<String>,
    /// Which of the account's installations (`GET /api/scm_installations`).
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub installation_id: Option<i64>,
}

/// One file of a push: a relative path and its text.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FileInput {
    /// Relative, `/`-separated; no `.`, `..` or `.git` segment.
    pub path: String,
    pub content: String,
}

/// `POST /api/repos/push`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PushRepoRequest {
    /// The repository's full name, `owner/name`.
    #[cfg_attr(feature = "openapi", schema(required = true, schema_with = play_model::openapi::repo_full_name))]
    pub repo: Option<String>,
    /// 1-1,000 files, at most 10 MiB of content in all: one commit.
    #[cfg_attr(feature = "openapi", schema(required = true, schema_with = play_model::openapi::push_files))]
    pub files: Option<Vec<FileInput>>,
    /// The commit message.
    #[cfg_attr(feature = "openapi", schema(required = true, schema_with = play_model::openapi::commit_message))]
    pub message: Option<String>,
    /// Default: the repository's default branch.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::branch_name_or_null))]
    pub branch: Option<String>,
}

/// `POST /api/repos/create_and_push`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateAndPushRequest {
    #[cfg_attr(feature = "openapi", schema(required = true, schema_with = play_model::openapi::repo_name))]
    pub name: Option<String>,
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::repo_description_or_null))]
    pub description: Option<String>,
    /// Default `true`.
    pub private: Option<bool>,
    #[cfg_attr(feature = "openapi", schema(required = true, schema_with = play_model::openapi::push_files))]
    pub files: Option<Vec<FileInput>>,
    /// Default `Initial commit`.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::commit_message_or_null))]
    pub message: Option<String>,
    /// Where to create it: `builtin` (play's own Git host) or `github`
    /// (the account's GitHub App installation). Default: the account's
    /// only choice; with several, this or `installation_id` is required.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "builtin", pattern = "^(builtin|github)$"))]
    pub provider: Option<String>,
    /// Which of the account's installations (`GET /api/scm_installations`).
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub installation_id: Option<i64>,
}

fn required<T>(errors: &mut FieldErrors, field: &str, value: Option<T>) -> Option<T> {
    if value.is_none() {
        push_field_error(errors, field, "is required");
    }
    value
}

fn files(list: Vec<FileInput>) -> Vec<PushFile> {
    list.into_iter().map(|f| PushFile { path: f.path, content: f.content.into_bytes() }).collect()
}

/// Where a create goes (`provider`, `installation_id`), field by field.
pub fn choice(errors: &mut FieldErrors, provider: Option<String>, installation_id: Option<i64>) -> Choice {
    let provider = provider.and_then(|text| match text.parse::<Provider>() {
        Ok(provider) => Some(provider),
        Err(_) => {
            push_field_error(errors, "provider", "must be \"builtin\" or \"github\"");
            None
        }
    });
    if installation_id.is_some_and(|id| id < 1) {
        push_field_error(errors, "installation_id", "must be an installation's id (GET /api/scm_installations)");
    }
    Choice { provider, installation_id }
}

fn finish<T>(errors: FieldErrors, value: Option<T>) -> Result<T, Error> {
    match value {
        Some(value) if errors.is_empty() => Ok(value),
        _ => Err(Error::Validation(errors)),
    }
}

/// The create request; `auto_init` is off for `create_and_push` (its files
/// are the first commit).
pub fn create(body: CreateRepoRequest) -> Result<CreateRequest, Error> {
    let mut errors = FieldErrors::new();
    let name = required(&mut errors, "name", body.name);
    let on = choice(&mut errors, body.provider, body.installation_id);
    let request = name.map(|name| CreateRequest {
        name,
        description: body.description.unwrap_or_default(),
        private: body.private.unwrap_or(true),
        auto_init: body.auto_init.unwrap_or(false),
        on,
    });
    finish(errors, request)
}

pub fn push(body: PushRepoRequest) -> Result<PushRequest, Error> {
    let mut errors = FieldErrors::new();
    let repo = required(&mut errors, "repo", body.repo);
    let list = required(&mut errors, "files", body.files);
    let message = required(&mut errors, "message", body.message);
    let request = match (repo, list, message) {
        (Some(repo), Some(list), Some(message)) => {
            Some(PushRequest { repo, files: files(list), message, branch: body.branch })
        }
        _ => None,
    };
    finish(errors, request)
}

/// The two halves of `create_and_push`: the repository, then its first
/// push (whose `repo` the handler fills in once the repository exists).
pub fn create_and_push(body: CreateAndPushRequest) -> Result<(CreateRequest, Vec<PushFile>, String), Error> {
    let mut errors = FieldErrors::new();
    let name = required(&mut errors, "name", body.name);
    let list = required(&mut errors, "files", body.files);
    let on = choice(&mut errors, body.provider, body.installation_id);
    let request = match (name, list) {
        (Some(name), Some(list)) => Some((
            CreateRequest {
                name,
                description: body.description.unwrap_or_default(),
                private: body.private.unwrap_or(true),
                auto_init: false,
                on,
            },
            files(list),
            body.message.unwrap_or_else(|| DEFAULT_INITIAL_MESSAGE.to_owned()),
        )),
        _ => None,
    };
    finish(errors, request)
}
