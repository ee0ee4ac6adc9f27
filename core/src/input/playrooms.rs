//! What `/api/playrooms` accepts: its request bodies and queries, and the
//! checks that turn them, field by field, into core's types (shared with
//! server-side apply, which validates the same fields the same way).

use crate::input::playroom_edge::{self, EdgeInput};
use crate::{Error, Result};
use play_model::FieldErrors;
use play_model::error::push_field_error;
use play_model::host::DEFAULT_DOCKER_SOCKET;
use play_model::model::playroom::{Connection, PlayroomFields};
use play_model::scopes::Scope;
use play_model::scopes::ScopeSet;
use play_model::ssh_keys::{self, HostKeyPin};
use play_model::validate;
use serde::Deserialize;

pub const DEFAULT_SSH_PORT: u16 = 22;
const DEFAULT_SSH_USER: &str = "root";

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PlayroomRequest {
    pub playroom: PlayroomInput,
}

/// Fields of a create or update. On update every field is optional and an
/// absent one is left as it is.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PlayroomInput {
    /// Required on create.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::display_name_or_null))]
    pub name: Option<String>,
    /// `ssh` (default) or `local` (the Docker engine play itself runs on;
    /// only where the operator allows it).
    #[cfg_attr(feature = "openapi", schema(schema_with = connection_or_null))]
    pub connection: Option<String>,
    /// SSH host: a DNS name or an IP address. Required on create (for `ssh`).
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::host_or_null))]
    pub host: Option<String>,
    /// SSH port, default 22.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::port_or_null))]
    pub port: Option<i64>,
    /// SSH user, default `root`; it needs access to the Docker socket.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::unix_user_or_null))]
    pub user: Option<String>,
    /// Write-only. An unencrypted private key (OpenSSH or PEM); never returned.
    pub ssh_private_key: Option<String>,
    /// The host key to expect: `SHA256:...`, an OpenSSH public key line, or
    /// a `known_hosts` line. `null` removes the pin (the next successful
    /// connection pins again).
    #[serde(default, deserialize_with = "play_model::json::present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub host_key: Option<Option<String>>,
    /// Path of the Docker socket on the host, default `/var/run/docker.sock`.
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::absolute_path_or_null))]
    pub docker_socket: Option<String>,
    /// Domains Playgrounds are routed under (lowercase, at least two labels).
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::domains_or_null))]
    pub domains: Option<Vec<String>>,
    /// The ACME account's email; `null` removes it.
    #[serde(default, deserialize_with = "play_model::json::present")]
    #[cfg_attr(feature = "openapi", schema(schema_with = play_model::openapi::email_or_null))]
    pub acme_email: Option<Option<String>>,
    /// Lifts the Compose policy (privileged containers, host mounts, ...) for
    /// this host. Default false. Setting it to `true` needs the operator's
    /// `playrooms:trust` scope; a local Playroom can never be trusted.
    pub trusted: Option<bool>,
    pub tutorial: Option<bool>,
    /// The edge's settings; each key optional.
    pub edge: Option<EdgeInput>,
}

#[cfg(feature = "openapi")]
pub fn connection_or_null() -> utoipa::openapi::Schema {
    play_model::openapi::one_of_or_null(&["ssh", "local"])
}

pub fn check<T>(
    errors: &mut FieldErrors,
    field: &str,
    value: Option<&T>,
    rule: impl Fn(&T) -> Result<(), &'static str>,
) {
    if let Some(Err(message)) = value.map(rule) {
        push_field_error(errors, format!("playroom.{field}"), message);
    }
}

/// Validates the input field by field and turns it into store fields.
/// `creating` makes name and (for SSH) host required.
pub fn fields(input: PlayroomInput, creating: bool, allow_local: bool) -> Result<PlayroomFields> {
    let mut errors = FieldErrors::new();
    let connection = match input.connection.as_deref() {
        None => None,
        Some("ssh") => Some(Connection::Ssh),
        Some("local") if allow_local => Some(Connection::Local),
        Some("local") => {
            push_field_error(
                &mut errors,
                "playroom.connection",
                "local Playrooms are disabled on this server (PLAY_ALLOW_LOCAL_PLAYROOMS)",
            );
            None
        }
        Some(_) => {
            push_field_error(&mut errors, "playroom.connection", "must be ssh or local");
            None
        }
    };
    let is_ssh = connection.unwrap_or(Connection::Ssh) == Connection::Ssh;
    if creating && input.name.is_none() {
        push_field_error(&mut errors, "playroom.name", "is required");
    }
    if creating && is_ssh && input.host.is_none() {
        push_field_error(&mut errors, "playroom.host", "is required");
    }
    check(&mut errors, "name", input.name.as_ref(), |n| validate::display_name(n));
    check(&mut errors, "host", input.host.as_ref(), |h| validate::host(h));
    check(&mut errors, "user", input.user.as_ref(), |u| validate::unix_user(u));
    check(&mut errors, "docker_socket", input.docker_socket.as_ref(), |p| validate::absolute_path(p));
    check(&mut errors, "acme_email", input.acme_email.as_ref().and_then(|e| e.as_ref()), |e| validate::email(e));
    let port = match input.port {
        Some(p) => match u16::try_from(p) {
            Ok(p) if p > 0 => Some(p),
            _ => {
                push_field_error(&mut errors, "playroom.port", "must be from 1 to 65535");
                None
            }
        },
        None => None,
    };
    let mut domains = None;
    if let Some(list) = input.domains {
        let mut clean: Vec<String> = Vec::new();
        for (i, d) in list.iter().enumerate() {
            match validate::domain(d) {
                Ok(()) if !clean.contains(d) => clean.push(d.clone()),
                Ok(()) => {}
                Err(m) => push_field_error(&mut errors, format!("playroom.domains[{i}]"), m),
            }
        }
        domains = Some(clean);
    }
    let edge = input.edge.map(|e| playroom_edge::changes(e, creating, &mut errors));
    let ssh_key = match input.ssh_private_key.as_deref() {
        Some(text) => match ssh_keys::parse_private_key(text) {
            Ok(parsed) => Some((parsed.private_openssh, parsed.public_openssh)),
            Err(e) => {
                push_field_error(&mut errors, "playroom.ssh_private_key", e.to_string());
                None
            }
        },
        None => None,
    };
    let host_key = match input.host_key {
        Some(Some(text)) => match HostKeyPin::parse(&text) {
            Ok(HostKeyPin::Key(key)) => Some(Some(ssh_keys::public_key_line(&key))),
            Ok(pin @ HostKeyPin::Fingerprint(_)) => Some(Some(pin.fingerprint())),
            Err(e) => {
                push_field_error(&mut errors, "playroom.host_key", e.to_string());
                None
            }
        },
        Some(None) => Some(None),
        None => None,
    };
    if !errors.is_empty() {
        return Err(Error::Validation(errors));
    }
    let local = connection == Some(Connection::Local);
    Ok(PlayroomFields {
        name: input.name.map(|n| n.trim().to_owned()),
        connection: connection.or(creating.then_some(Connection::Ssh)),
        host: input.host.or_else(|| (creating && local).then(|| "localhost".to_owned())),
        port: port.or(creating.then_some(DEFAULT_SSH_PORT)),
        user: input.user.or_else(|| creating.then(|| DEFAULT_SSH_USER.to_owned())),
        docker_socket: input.docker_socket.or_else(|| creating.then(|| DEFAULT_DOCKER_SOCKET.to_owned())),
        ssh_key,
        host_key,
        domains: domains.or_else(|| creating.then(Vec::new)),
        acme_email: input.acme_email,
        edge,
        trusted: input.trusted,
        tutorial: input.tutorial,
        // Set by the caller, which knows the principal.
        caller_may_trust: false,
    })
}

/// Marking a Playroom trusted is the operator's act: 403 without
/// `playrooms:trust`. Lifting trust (`false`) is open to any writer.
pub fn authorise_trust(scopes: &ScopeSet, input: &PlayroomInput) -> Result<()> {
    if input.trusted == Some(true) && !scopes.grants(Scope::PlayroomsTrust) {
        let mut details = FieldErrors::new();
        details.insert(
            "playroom.trusted".into(),
            vec![format!("marking a Playroom trusted needs the operator's scope {}", Scope::PlayroomsTrust)],
        );
        let message = format!("the scope {} is required to trust a Playroom", Scope::PlayroomsTrust);
        return Err(Error::Forbidden { message, details });
    }
    Ok(())
}
