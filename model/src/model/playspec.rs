//! Playspecs as stored, the fields a write takes, and what belongs to
//! one: mounted files and registry credentials (whose secrets are never
//! here).

use serde::Serialize;

use crate::compose::ServiceDefinition;
use crate::time::Timestamp;
use crate::{Error, Result};

#[derive(Clone, Debug, PartialEq)]
pub struct Playspec {
    pub id: i64,
    pub account_id: i64,
    pub name: String,
    pub description: String,
    pub base_compose_yaml: String,
    /// Stored as JSON; the API renders it as the spec's service definitions.
    pub services: serde_json::Value,
    pub persist_volumes: bool,
    /// The Playzone whose repository the Compose file belongs to: its
    /// relative paths are read from it (`crate::desired::source`).
    pub playzone_id: Option<i64>,
    /// The `sleep_after` of its Playgrounds that set none (inherit: the
    /// installation's default).
    pub sleep_after: crate::playground::sleep::SleepAfter,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Playspec {
    /// The stored service definitions. A value that does not read as
    /// definitions is [`Error::Corrupt`], never an empty list: the
    /// reconciler and the API views build the desired state from it.
    pub fn definitions(&self) -> Result<Vec<ServiceDefinition>> {
        serde_json::from_value(self.services.clone()).map_err(|e| Error::Corrupt {
            table: "playspecs",
            id: self.id,
            column: "services",
            reason: e.to_string(),
        })
    }
}

/// Desired fields; on update `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct PlayspecFields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub base_compose_yaml: Option<String>,
    pub services: Option<Vec<ServiceDefinition>>,
    pub persist_volumes: Option<bool>,
    /// `Some(None)` clears it; checked by the caller (a Playzone of the
    /// account).
    pub playzone_id: Option<Option<i64>>,
    /// Its Playgrounds' default `sleep_after` (`None` keeps it; inherit:
    /// the installation's default applies).
    pub sleep_after: Option<crate::playground::sleep::SleepAfter>,
}

/// A file play writes into containers at `mount_path`. The content is not
/// part of this view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MountedFile {
    pub id: i64,
    pub name: String,
    pub mount_path: String,
    /// The file's path in the Compose project, normalised
    /// (`compose::project_files`): relative sources of the Playspec's
    /// Compose that name it get this file. `None`: only at `mount_path`.
    pub path: Option<String>,
    /// Services that get the file; empty means every service.
    pub target_services: Vec<String>,
    pub readonly: bool,
    pub size: i64,
    pub sha256: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Clone, Debug)]
pub struct NewMountedFile {
    pub name: String,
    pub mount_path: String,
    /// Normalised by the caller (`project_files::normalise_file_path`).
    pub path: Option<String>,
    pub target_services: Vec<String>,
    pub readonly: bool,
    pub content: Vec<u8>,
}

/// Changes to a mounted file's configuration; `None` keeps a field.
#[derive(Clone, Debug, Default)]
pub struct MountedFileChange {
    pub mount_path: Option<String>,
    /// `Some(None)` removes the project path; normalised by the caller.
    pub path: Option<Option<String>>,
    pub target_services: Option<Vec<String>>,
    pub readonly: Option<bool>,
}

/// A registry credential without its secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RegistryCredential {
    pub id: i64,
    pub registry_type: String,
    pub registry_url: String,
    pub username: String,
    pub created_at: Timestamp,
}

/// A registry credential to add, as the request gives it, checked by the
/// caller: `registry_url` is the registry's host (an optional port), and
/// `secret` is the plain secret, sealed before it is stored and never read
/// back to a caller.
pub struct NewRegistryCredential {
    pub registry_type: String,
    pub registry_url: String,
    pub username: String,
    pub secret: String,
}

/// The secret redacted, so that a log line cannot print it.
impl std::fmt::Debug for NewRegistryCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewRegistryCredential")
            .field("registry_type", &self.registry_type)
            .field("registry_url", &self.registry_url)
            .field("username", &self.username)
            .field("secret", &"<redacted>")
            .finish()
    }
}
