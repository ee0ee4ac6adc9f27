//! Playrooms: the hosts Playgrounds run on, as stored (never with their
//! SSH private key), the fields a write takes, and what connecting to one
//! records.

use serde::Serialize;

use crate::edge::{EdgeChanges, EdgeSettings};
use crate::time::Timestamp;

/// How play reaches a Playroom's Docker engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Connection {
    Ssh,
    /// The Docker engine of the machine play runs on (no SSH).
    Local,
}

impl Connection {
    pub fn as_str(self) -> &'static str {
        match self {
            Connection::Ssh => "ssh",
            Connection::Local => "local",
        }
    }

    /// `None` for a value play never writes (a corrupt row).
    pub fn from_db(text: &str) -> Option<Self> {
        match text {
            "ssh" => Some(Connection::Ssh),
            "local" => Some(Connection::Local),
            _ => None,
        }
    }
}

/// A Playroom as stored, without its private key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Playroom {
    pub id: i64,
    pub account_id: i64,
    pub name: String,
    pub status: String,
    pub connection: Connection,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub docker_socket: String,
    pub has_private_key: bool,
    pub ssh_public_key: Option<String>,
    pub host_key: Option<String>,
    pub host_key_pinned_at: Option<Timestamp>,
    pub domains: Vec<String>,
    pub acme_email: Option<String>,
    /// The edge's settings (see `crate::edge`).
    pub edge: EdgeSettings,
    pub trusted: bool,
    /// When the Playroom was last marked trusted, and by which API key
    /// (`None` for the command line); both cleared when trust is lifted.
    pub trusted_at: Option<Timestamp>,
    pub trusted_by_key_id: Option<i64>,
    pub tutorial: bool,
    pub last_checked_at: Option<Timestamp>,
    pub last_transport: Option<String>,
    pub last_error: Option<String>,
    /// Whether the reconcilers reached the Playroom's engine on their last
    /// attempt (`None` until they first try); see [`super::reachability`].
    pub reachable: Option<bool>,
    /// The first failed attempt since the engine was last reached.
    pub unreachable_since: Option<Timestamp>,
    /// Why the last attempt failed.
    pub unreachable_reason: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Set when the Playroom was deleted but its edge container may still
    /// run on the host: hidden from every account view, and purged by the
    /// edge reconciler once the container is gone (see [`delete`]).
    pub deleted_at: Option<Timestamp>,
}

/// The desired fields of a Playroom, validated by the caller. On update,
/// `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct PlayroomFields {
    pub name: Option<String>,
    pub connection: Option<Connection>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub docker_socket: Option<String>,
    /// A validated private key in OpenSSH form, and its public half.
    pub ssh_key: Option<(String, String)>,
    /// `Some(None)` removes the pin.
    pub host_key: Option<Option<String>>,
    pub domains: Option<Vec<String>>,
    pub acme_email: Option<Option<String>>,
    /// Applied to the current settings (the defaults on create) inside the
    /// write, so two updates that each change one port cannot together
    /// break the settings' invariant.
    pub edge: Option<EdgeChanges>,
    pub trusted: Option<bool>,
    pub tutorial: Option<bool>,
    /// Whether the caller holds the operator's `playrooms:trust`. Trust is
    /// a statement about one machine reached one way: an update that moves
    /// a trusted Playroom (host, port, user, connection or Docker socket),
    /// re-pins it (another host key, or none) or gives it another SSH key
    /// clears it unless the caller could have granted it anew.
    pub caller_may_trust: bool,
}

/// What a connection check learned: always the outcome, and the host key
/// to pin when this was the first successful contact.
#[derive(Clone, Debug, Default)]
pub struct CheckOutcome {
    pub transport: Option<String>,
    pub error: Option<String>,
    pub pin_host_key: Option<String>,
}

/// A Playroom that has Playgrounds, as the event watchers need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedPlayroom {
    pub id: i64,
    pub account_id: i64,
    /// With `host_key`, changes whenever the Playroom's connection settings
    /// may have (an update or a new key bumps it; a first pin sets only
    /// `host_key`): a watcher started on older settings is restarted.
    pub updated_at: Timestamp,
    pub host_key: Option<String>,
}
