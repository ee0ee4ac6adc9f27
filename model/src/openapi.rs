//! Schemas of request fields whose rules live in `validate` and
//! friends, for `#[schema(schema_with = ...)]` on request structs: the
//! document states the rule the server applies, from the same constants.
//!
//! `*_or_null` variants are for optional fields, where `null` means the
//! same as an absent field.

use crate::scopes::Scope;
use crate::validate::patterns;
use utoipa::openapi::schema::{
    AdditionalProperties, AnyOfBuilder, ArrayBuilder, KnownFormat, Object, ObjectBuilder, SchemaFormat, Type,
};
use utoipa::openapi::{RefOr, Schema};

/// The longest display name, in characters (`validate::display_name`).
pub const MAX_DISPLAY_NAME_CHARS: usize = 100;

fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

/// `schema` or `null`.
fn or_null(schema: impl Into<RefOr<Schema>>) -> Schema {
    AnyOfBuilder::new().item(schema).item(ObjectBuilder::new().schema_type(Type::Null)).into()
}

/// `validate::display_name`: 1-100 characters, not blank, no control
/// characters.
pub fn display_name() -> Object {
    string().min_length(Some(1)).max_length(Some(MAX_DISPLAY_NAME_CHARS)).pattern(Some(patterns::DISPLAY_NAME)).build()
}

pub fn display_name_or_null() -> Schema {
    or_null(display_name())
}

/// `validate::host`: a DNS name (an IPv4 address is one) or an IPv6 address.
pub fn host() -> Schema {
    AnyOfBuilder::new()
        .item(string().max_length(Some(253)).pattern(Some(patterns::DNS_NAME)))
        .item(string().format(Some(SchemaFormat::KnownFormat(KnownFormat::Ipv6))))
        .description(Some("A DNS name or an IP address, without scheme, port or path"))
        .into()
}

pub fn host_or_null() -> Schema {
    or_null(host())
}

/// `validate::unix_user`.
pub fn unix_user_or_null() -> Schema {
    or_null(string().pattern(Some(patterns::UNIX_USER)))
}

/// `playground::sleep::parse_after`'s values the server always takes.
pub fn sleep_after() -> Object {
    string().pattern(Some(patterns::SLEEP_AFTER)).examples(["30m"]).build()
}

pub fn sleep_after_or_null() -> Schema {
    or_null(sleep_after())
}

/// `validate::absolute_path`: absolute, no `..` segment, no control characters.
pub fn absolute_path() -> Object {
    string().pattern(Some(patterns::ABSOLUTE_PATH)).build()
}

pub fn absolute_path_or_null() -> Schema {
    or_null(absolute_path())
}

/// A path inside a repository or container: not empty, no `..`, no
/// control characters (the Playspec service overrides).
pub fn relative_path_or_null() -> Schema {
    or_null(string().min_length(Some(1)).pattern(Some(patterns::NO_DOTDOT_PATH)))
}

/// `validate::email`.
pub fn email_or_null() -> Schema {
    or_null(string().pattern(Some(patterns::EMAIL)))
}

/// A list of `validate::domain`s.
pub fn domains_or_null() -> Schema {
    or_null(ArrayBuilder::new().items(string().max_length(Some(253)).pattern(Some(patterns::DOMAIN))))
}

/// A TCP port.
pub fn port() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(1))
        .maximum(Some(65535))
        .build()
}

pub fn port_or_null() -> Schema {
    or_null(port())
}

/// The id of another object (an id naming none is refused).
pub fn id() -> Object {
    ObjectBuilder::new().schema_type(Type::Integer).format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64))).build()
}

/// A text with at least one character that is not whitespace.
pub fn not_blank(max_chars: usize) -> Object {
    string().min_length(Some(1)).max_length(Some(max_chars)).pattern(Some(patterns::NOT_BLANK)).build()
}

/// The names of the scopes, at least one.
pub fn scopes() -> Schema {
    let names = Scope::ALL.iter().map(|s| s.as_str());
    ArrayBuilder::new().items(string().enum_values(Some(names))).min_items(Some(1)).into()
}

/// Environment variables: names of letters, digits and `_`, not starting
/// with a digit, at most 256 characters; values without NUL, at most 64 KiB
/// (the server counts bytes, so a value of many multi-byte characters is
/// refused sooner than `maxLength` says).
pub fn env_vars() -> Object {
    let value = string().max_length(Some(64 * 1024)).pattern(Some("^[^\\x00]*$"));
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property_names(Some(string().max_length(Some(256)).pattern(Some("^[A-Za-z_][A-Za-z0-9_]*$"))))
        .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(value.into()))))
        .description(Some("Variable name -> value"))
        .build()
}

pub fn env_vars_or_null() -> Schema {
    or_null(env_vars())
}

/// A map of service name -> subdomain.
pub fn subdomains() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(string().into()))))
        .description(Some("Service name -> subdomain: empty, `@`, or lowercase letters, digits and hyphens"))
        .build()
}

pub fn subdomains_or_null() -> Schema {
    or_null(subdomains())
}

/// A map of service name -> `ServiceSettings` (`play_store::playgrounds`).
pub fn service_settings() -> Object {
    let text_or_null = || or_null(string());
    let git_config = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("branch_name", text_or_null())
        .property("create_branch", ObjectBuilder::new().schema_type(Type::Boolean))
        .property("base_branch_name", text_or_null())
        .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
        .description(Some(
            "The branch of a service built from a Playzone; base_branch_name is required with create_branch",
        ));
    let settings = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("git_config", or_null(git_config))
        .property("production", or_null(ObjectBuilder::new().schema_type(Type::Boolean)))
        .property("env_vars", env_vars())
        .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)));
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(settings.into()))))
        .description(Some("Service name -> {git_config, production, env_vars}"))
        .build()
}

pub fn service_settings_or_null() -> Schema {
    or_null(service_settings())
}

/// One of `values`.
pub fn one_of(values: &[&str]) -> Object {
    string().enum_values(Some(values.iter().copied())).build()
}

/// One of `values`, or `null`.
pub fn one_of_or_null(values: &[&str]) -> Schema {
    or_null(one_of(values))
}

/// `validate::agent`.
pub fn agent_or_null() -> Schema {
    or_null(string().min_length(Some(1)).max_length(Some(64)).pattern(Some(patterns::AGENT)))
}

/// `webhook::UrlPolicy::check`, as far as a schema can say it: the rest
/// (no user name, no private or loopback host, `http` only where the
/// operator allows it) is stated in the field's description.
pub fn webhook_url() -> Object {
    string()
        .min_length(Some(1))
        .max_length(Some(crate::webhook::url::MAX_URL_LEN))
        .pattern(Some("^[Hh][Tt][Tt][Pp][Ss]?://"))
        .description(Some(
            "An absolute https URL (http only where the operator allows it), without user name, password or \
             fragment, whose host is not a loopback, private, link-local, unique-local or metadata address \
             (unless the operator allowlists it)",
        ))
        .build()
}

pub fn webhook_url_or_null() -> Schema {
    or_null(webhook_url())
}

fn event_type() -> Object {
    string().enum_values(Some(crate::webhook::offered())).build()
}

/// `webhook::Changes::validate`: known event types, at least one, no repeats.
pub fn webhook_events() -> Schema {
    ArrayBuilder::new().items(event_type()).min_items(Some(1)).unique_items(true).into()
}

pub fn webhook_events_or_null() -> Schema {
    or_null(webhook_events())
}

/// Event type -> positive entity ids (at most `MAX_FILTER_IDS`); each type
/// must also be in `events`.
pub fn webhook_event_filters_or_null() -> Schema {
    let ids = ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .minimum(Some(1)),
        )
        .max_items(Some(crate::webhook::MAX_FILTER_IDS));
    or_null(
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property_names(Some(event_type()))
            .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(ids.into()))))
            .description(Some(
                "Event type (one of `events`) -> entity ids; an absent type or an empty list receives every entity",
            )),
    )
}

pub fn webhook_description_or_null() -> Schema {
    or_null(string().max_length(Some(crate::webhook::MAX_DESCRIPTION_CHARS)).pattern(Some("^[^\\x00]*$")))
}

/// `webhook::check_secret`: printable ASCII without spaces.
pub fn webhook_secret_or_null() -> Schema {
    or_null(
        string()
            .min_length(Some(crate::webhook::MIN_SECRET_CHARS))
            .max_length(Some(crate::webhook::MAX_SECRET_CHARS))
            .pattern(Some("^[!-~]+$")),
    )
}

/// `playzone::RepositoryPolicy::check`, as far as a schema can say it: the
/// rest (no user name, no private or loopback host, `http` only where the
/// operator allows it) is stated in the description.
pub fn repository_url() -> Object {
    string()
        .min_length(Some(1))
        .max_length(Some(crate::webhook::url::MAX_URL_LEN))
        .pattern(Some("^([Hh][Tt][Tt][Pp][Ss]?://|[Ss][Ss][Hh]://|[A-Za-z0-9._-]+@[^/:]+:)"))
        .description(Some(
            "The repository's https URL (http only where the operator allows it), without user name, password, \
             query or fragment; or an ssh URL (ssh://git@host[:port]/owner/repo.git or git@host:owner/repo.git), \
             read with the Playzone's deploy key. Its host is not a loopback, private, link-local or metadata \
             address (unless the operator allowlists it)",
        ))
        .build()
}

pub fn repository_url_or_null() -> Schema {
    or_null(repository_url())
}

/// `playzone::branch_name`, as far as a pattern without look-arounds
/// can say it (no `..`, no component starting with `.` or `-` or ending
/// with `.lock` is stated in prose).
pub fn branch_name() -> Object {
    string()
        .min_length(Some(1))
        .max_length(Some(crate::playzone::MAX_BRANCH_BYTES))
        .pattern(Some("^[A-Za-z0-9._+/-]+$"))
        .description(Some(
            "A branch name: letters, digits, '.', '_', '-', '+' and '/', without '..', '//', a component starting \
             with '.' or '-', or a trailing '/', '.' or '.lock'",
        ))
        .build()
}

pub fn branch_name_or_null() -> Schema {
    or_null(branch_name())
}

/// `playzone::check_token` for an https URL (printable ASCII without
/// spaces, 1 to 1024 characters), `playzone::ssh::deploy_key` for an ssh
/// one (a private key, with newlines); write-only. Which applies depends
/// on the URL, so the pattern is stated in prose.
pub fn repository_token_or_null() -> Schema {
    or_null(string().max_length(Some(crate::playzone::ssh::MAX_DEPLOY_KEY_BYTES)).description(Some(
        "For an https scm_url, an access token (printable ASCII without spaces, at most 1024 characters); for an ssh \
         scm_url, the deploy key's private half (OpenSSH or PEM, unencrypted). Write-only; never returned. On update \
         an empty string removes it",
    )))
}

/// `playzone::repo_path`: a relative path in the repository.
pub fn repository_path_or_null() -> Schema {
    or_null(
        string()
            .min_length(Some(1))
            .max_length(Some(crate::playzone::MAX_PATH_BYTES))
            .pattern(Some("^[A-Za-z0-9_./-]+$"))
            .description(Some("A relative path in the repository, without '.' or '..' components")),
    )
}

/// `scm::check_repo_name`, as far as a pattern can say it (not ending in
/// `.git` or `.lock` is stated in prose).
pub fn repo_name() -> Object {
    string()
        .min_length(Some(1))
        .max_length(Some(crate::scm::names::MAX_REPO_NAME_CHARS))
        .pattern(Some("^[a-z0-9][a-z0-9._-]*$"))
        .description(Some(
            "Lowercase letters, digits, '-', '_' and '.', starting with a letter or digit, not ending in '.git' \
             or '.lock'; unique in the account",
        ))
        .build()
}

pub fn repo_description_or_null() -> Schema {
    or_null(string().max_length(Some(crate::scm::names::MAX_DESCRIPTION_CHARS)).build())
}

/// A full name `owner/name`: the owner an account name, the name as
/// [`repo_name`].
pub fn repo_full_name() -> Object {
    string()
        .max_length(Some(64 + 1 + crate::scm::names::MAX_REPO_NAME_CHARS))
        .pattern(Some("^[A-Za-z0-9._-]{1,64}/[a-z0-9][a-z0-9._-]*$"))
        .description(Some("owner/name"))
        .build()
}

/// The files of one push (`scm::files`): 1-1,000 `{path, content}`, at
/// most 10 MiB of content in all; the path rules are stated in prose.
pub fn push_files() -> Schema {
    use crate::scm::files::{MAX_PATH_BYTES, MAX_PUSH_FILES};
    let file = ObjectBuilder::new()
        .property("path", string().min_length(Some(1)).max_length(Some(MAX_PATH_BYTES)))
        .property("content", string())
        .required("path")
        .required("content")
        .additional_properties(Some(AdditionalProperties::FreeForm(false)));
    ArrayBuilder::new()
        .items(file)
        .min_items(Some(1))
        .max_items(Some(MAX_PUSH_FILES))
        .description(Some(
            "One commit's files: a relative '/'-separated path (no '.', '..' or empty segment, no '.git' segment, \
             no backslash or control character; each path once, never a file and a folder above another file) \
             and its UTF-8 text; at most 10 MiB of content in all",
        ))
        .into()
}

/// A commit message: not blank, at most 64 KiB.
pub fn commit_message() -> Object {
    string().min_length(Some(1)).max_length(Some(crate::scm::files::MAX_MESSAGE_BYTES)).build()
}

pub fn commit_message_or_null() -> Schema {
    or_null(commit_message())
}
