//! The Playzone sync loop: keeps each Playzone's branch index and Compose
//! file in step with its repository.
//!
//! A reconciler keyed by Playzone id. One pass:
//! 1. Read the Playzone. Nothing to do when it is gone, or when it has no
//!    sync asked for (`synced_generation == generation`) and its last
//!    attempt is younger than [`SyncConfig::interval`]: the pass asks to
//!    be run again when the next scheduled sync is due.
//! 2. List the remote's branches through the
//!    [`RepositoryGateway`](play_model::repository::RepositoryGateway)
//!    (bounded in time and count there).
//! 3. Choose the default branch ([`default_branch`]): the pinned one, which
//!    must exist, or the remote's HEAD.
//! 4. Read the Compose file candidates at the default branch's commit
//!    ([`COMPOSE_FILES`](play_model::playzone::COMPOSE_FILES), first found
//!    wins).
//! 5. Record it all in one fenced write that rewrites only the branch rows
//!    that moved.
//!
//! A failure at 2-4 is recorded as the Playzone's `error` status with the
//! gateway's message (which never carries the token), in a fenced write
//! that keeps what earlier syncs recorded; the pass retries after
//! [`SyncConfig::retry`]. Level-triggered: a pass depends only on the row
//! and the remote, so a crash at any line costs one more pass.

mod choose;

use std::sync::Arc;
use std::time::Duration;

use play_model::ids::{ObjectId, PlayzoneId};
use play_model::playzone::model::{Playzone, SyncResult};
use play_model::playzone::{COMPOSE_FILES, MAX_COMPOSE_FILE_BYTES};
use play_model::repository::{RepositoryAccess, RepositoryError, RepositoryGateway};
use play_model::secrets::SecretBox;
use play_model::time;
use play_store::Store;
use play_store::{playzone_access, playzones};

pub use self::choose::default_branch;
use crate::Result;
use crate::runtime::{Action, Ctx, Reconciler};

/// Tuning of the sync loop.
#[derive(Clone, Debug)]
pub struct SyncConfig {
    /// How often every Playzone is synced without being asked
    /// (`PLAY_PLAYZONE_SYNC_INTERVAL`).
    pub interval: Duration,
    /// How soon a failed sync is tried again (at most `interval`).
    pub retry: Duration,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig { interval: Duration::from_secs(600), retry: Duration::from_secs(60) }
    }
}

/// See the [module documentation](self).
#[derive(Debug)]
pub struct PlayzoneSync {
    store: Store,
    secrets: SecretBox,
    repositories: Arc<dyn RepositoryGateway>,
    config: SyncConfig,
}

impl PlayzoneSync {
    pub fn new(store: Store, secrets: SecretBox, repositories: Arc<dyn RepositoryGateway>) -> Self {
        PlayzoneSync { store, secrets, repositories, config: SyncConfig::default() }
    }

    pub fn with_config(mut self, config: SyncConfig) -> Self {
        self.config = config;
        self
    }

    /// What the remote says now, or the message to record.
    async fn sync(&self, z: &Playzone, access: &RepositoryAccess) -> std::result::Result<SyncResult, String> {
        let refs =
            self.repositories.list_branches(access).await.map_err(|e| explain("cannot list the branches", &e))?;
        let (default_branch, commit) = default_branch(z, &refs)?;
        let paths: Vec<String> = COMPOSE_FILES.iter().map(|p| (*p).to_owned()).collect();
        let files = self
            .repositories
            .read_files(access, &commit, &paths, MAX_COMPOSE_FILE_BYTES)
            .await
            .map_err(|e| explain(&format!("cannot read the Compose file of branch {default_branch:?}"), &e))?;
        let compose_file = paths.iter().zip(&files).find(|(_, f)| f.is_some()).map(|(p, _)| p.clone());
        Ok(SyncResult {
            generation: z.generation,
            compose_commit: compose_file.as_ref().map(|_| commit.clone()),
            compose_file,
            default_branch,
            // A branch named like a pull request's pin (`pull/<n>/head`)
            // is not indexed: that name means the pull request.
            branches: refs
                .branches
                .into_iter()
                .filter(|b| play_model::scm::pulls::pull_number(&b.name).is_none())
                .collect(),
        })
    }
}

/// The message a failed sync records: what failed, the gateway's reason,
/// and what to do where play can tell.
fn explain(what: &str, error: &RepositoryError) -> String {
    let hint = match error {
        RepositoryError::Unauthorized(_) => {
            " (check the Playzone's credentials: the token may be wrong, expired or lack read access)"
        }
        RepositoryError::Refused(_) => {
            " (the operator's PLAY_REPOSITORY_ALLOWLIST decides which private hosts are allowed)"
        }
        RepositoryError::NotFound(_) => {
            " (check scm_url; a private repository also answers \"not found\" to a token without access)"
        }
        _ => "",
    };
    format!("{what}: {error}{hint}")
}

impl Reconciler for PlayzoneSync {
    const NAME: &'static str = "playzone_sync";
    const KIND: play_core::wake::Kind = play_core::wake::Kind::Playzone;
    type Id = PlayzoneId;

    async fn reconcile(&self, id: PlayzoneId, ctx: &Ctx) -> Result<Action> {
        let id = id.get();
        let Some(z) = playzones::find(&self.store, id).await? else { return Ok(Action::await_change()) };
        let asked = z.synced_generation < z.generation;
        if !asked && let Some(last) = z.last_sync_attempt_at {
            let due = last + chrono::Duration::from_std(self.config.interval).unwrap_or(chrono::Duration::MAX);
            if due > time::now() {
                return Ok(Action::requeue_at(due));
            }
        }
        let access = playzone_access::access(&self.store, &self.secrets, id).await?;
        let fence = ctx.fence();
        match self.sync(&z, &access).await {
            Ok(result) => {
                let moved = playzones::record_sync(&self.store, fence, id, &result).await?.held()?;
                tracing::info!(
                    playzone = id,
                    branches = result.branches.len(),
                    added = moved.added.len(),
                    moved = moved.moved.len(),
                    removed = moved.removed.len(),
                    compose = result.compose_file.as_deref().unwrap_or("none"),
                    "playzone synced"
                );
                Ok(Action::requeue_after(self.config.interval))
            }
            Err(message) => {
                tracing::warn!(playzone = id, error = %message, "playzone sync failed");
                playzones::record_sync_error(&self.store, fence, id, z.generation, &message).await?.held()?;
                Ok(Action::requeue_after(self.config.retry.min(self.config.interval)))
            }
        }
    }

    async fn list(&self) -> Result<Vec<PlayzoneId>> {
        Ok(playzones::ids(&self.store).await?.into_iter().map(PlayzoneId).collect())
    }
}
