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
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Builtin => "builtin",
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
    pub created_at: Timestamp,
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
