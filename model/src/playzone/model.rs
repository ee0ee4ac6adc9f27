//! Playzones as stored (never with their access token), their branches
//! and what a sync records.

use crate::playzone::Status;
use crate::repository::RemoteBranch;
use crate::time::Timestamp;

/// A Playzone as stored, without its token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Playzone {
    pub id: i64,
    pub account_id: i64,
    pub name: String,
    pub scm_url: String,
    pub private: bool,
    /// Whether a token (or, for an ssh `scm_url`, a deploy key) is stored
    /// (never the secret).
    pub has_credentials: bool,
    /// For an ssh `scm_url`: the deploy key's public half, to add to the
    /// repository's deploy keys (`None` before one is given or made).
    pub ssh_public_key: Option<String>,
    /// For an ssh `scm_url`: the host key pinned at the first contact
    /// (an OpenSSH public key line), checked at every later one.
    pub ssh_host_key: Option<String>,
    pub ssh_host_key_pinned_at: Option<Timestamp>,
    /// Attached to a repository of a source-hosting installation: read
    /// with the installation's access, not anonymously.
    pub attached: bool,
    /// The user's choice when `default_branch_pinned`, else what the last
    /// sync found as the remote's HEAD (`None` before).
    pub default_branch: Option<String>,
    pub default_branch_pinned: bool,
    /// Created by Launch for a Compose file's build service.
    pub auto_created: bool,
    pub status: Status,
    pub status_message: Option<String>,
    /// The Compose file found at the default branch's root.
    pub compose_file: Option<String>,
    pub compose_commit: Option<String>,
    pub generation: i64,
    pub synced_generation: i64,
    pub last_synced_at: Option<Timestamp>,
    pub last_sync_attempt_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Playzone {
    /// Whether the Playzone reads its repository with access only the
    /// account holds (a stored token, or an installation it was attached
    /// through). Such a Playzone is linked only by its id, from a key that
    /// may read Playzones, never by the URL a Compose file or template
    /// names (issue #27, item 2: a URL is text anyone can write, and a
    /// linked repository can be bound into any image).
    pub fn reads_privately(&self) -> bool {
        self.has_credentials || self.attached
    }
}

/// One branch of the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    pub name: String,
    pub commit: String,
    pub updated_at: Timestamp,
}

/// What one successful sync found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncResult {
    /// The generation the pass started from.
    pub generation: i64,
    pub default_branch: String,
    pub branches: Vec<RemoteBranch>,
    pub compose_file: Option<String>,
    pub compose_commit: Option<String>,
}

/// How the branch index moved in a sync.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BranchChanges {
    pub added: Vec<String>,
    pub moved: Vec<String>,
    pub removed: Vec<String>,
}
