//! Source-hosting records: installations of a provider on an account and
//! the repositories reached through them, as stored.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::FullName;
use crate::time::Timestamp;

/// Which source host an installation is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// play's own Git host (`play_git::hosted`).
    Builtin,
    /// A GitHub App installation (`play-github`).
    Github,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Builtin => "builtin",
            Provider::Github => "github",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "builtin" => Ok(Provider::Builtin),
            "github" => Ok(Provider::Github),
            other => Err(format!("unknown source-hosting provider {other:?}")),
        }
    }
}

/// A source-hosting app installed on an account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installation {
    pub id: i64,
    pub account_id: i64,
    pub provider: Provider,
    /// The provider's id of the installation (empty for `builtin`).
    pub external_id: String,
    pub status: InstallationStatus,
    /// The user or organisation it is installed on, as the provider spells
    /// it (empty for `builtin`, whose owner is the account's name).
    pub account_login: String,
    /// Installed on an organisation (not a user).
    pub organisation: bool,
    pub created_at: Timestamp,
}

/// What the provider last said of an installation (its `installation`
/// webhook events). Only an active one is used; the others keep their row
/// so that Playzones attached through it can say why they stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstallationStatus {
    Active,
    /// Suspended on the provider's side (`installation.suspend`).
    Suspended,
    /// Uninstalled on the provider's side (`installation.deleted`).
    Removed,
}

impl InstallationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            InstallationStatus::Active => "active",
            InstallationStatus::Suspended => "suspended",
            InstallationStatus::Removed => "removed",
        }
    }
}

impl FromStr for InstallationStatus {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "active" => Ok(InstallationStatus::Active),
            "suspended" => Ok(InstallationStatus::Suspended),
            "removed" => Ok(InstallationStatus::Removed),
            other => Err(format!("unknown installation status {other:?}")),
        }
    }
}

/// A repository of an account, reached through one of its installations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repository {
    pub id: i64,
    pub account_id: i64,
    pub installation_id: i64,
    pub provider: Provider,
    pub full_name: FullName,
    pub description: String,
    pub private: bool,
    pub default_branch: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A recorded push: the branch, its head before (`None`: created) and
/// after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    pub repository_id: i64,
    pub branch: String,
    pub old_sha: Option<String>,
    pub new_sha: String,
}

/// A repository to record.
#[derive(Clone, Debug)]
pub struct NewRepository<'a> {
    pub installation: &'a Installation,
    pub full_name: &'a FullName,
    pub description: &'a str,
    pub private: bool,
    pub default_branch: &'a str,
}

/// Who an install flow's `state` was made for (`store::scm_install_states`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstallClaim {
    pub account_id: i64,
    /// The browser session that asked, if one did.
    pub session_id: Option<i64>,
}
