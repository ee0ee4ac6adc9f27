//! The repository writes of one server-side apply (a manifest's
//! `Repository` objects): recorded in the apply's transaction while every
//! object is checked, made on the hosts only once the whole set is valid,
//! and undone when a later step fails.
//!
//! Guarantees (`docs/manifests.md`, "Repository"):
//! - **Nothing reaches a host before the set is valid.** The per-object
//!   step records rows and [`plan`](Staged::plan)s host writes; a field
//!   error anywhere in the set rolls the rows back and no host was asked
//!   anything but to read a branch head. A dry run never calls
//!   [`Staged::execute`].
//! - **All or nothing, as far as a host allows.** Writes run creates
//!   first, then settings, then pushes. A failure undoes every repository
//!   this apply created ([`Removal::Undo`]) and puts back the settings it
//!   changed, then the transaction rolls back. A push already made to a
//!   repository that existed before stays: it is one commit on top of its
//!   branch, like a push by `git`; the next apply finds the files in place.
//! - **Pushes are recorded with the apply**: each push that moved a
//!   branch is a `repo.push` event and asks the Playzones on the
//!   repository to sync, in the apply's transaction; the caller wakes
//!   them after the commit.
//! - **Removals wait for the commit** (prune): the record goes in the
//!   transaction, the host's copy after it ([`Removal::Deleted`]: play's
//!   own host deletes it, GitHub keeps it).

use std::sync::Arc;

use super::flows::{author_for, url_candidates};
use super::host::{Removal, SourceHost};
use super::model::{Push, Repository};
use super::{PushFiles, PushOutcome};
use crate::Error;
use crate::model::event::Actor;
use crate::store::{Conn, repositories};

/// What an apply asks of one repository's host.
#[derive(Debug)]
pub struct Planned {
    /// As recorded in the apply's transaction.
    pub repository: Repository,
    pub host: Arc<dyn SourceHost>,
    /// The repository is new: make it on the host.
    pub create: bool,
    /// An existing repository's settings changed: `(description, private)`
    /// before, to put back if the apply fails.
    pub settings_before: Option<(String, bool)>,
    /// Files to write as one commit, on `branch` (default: the
    /// repository's default branch).
    pub push: Option<PushFiles>,
    pub branch: Option<String>,
}

/// What the writes of one [`Planned`] left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Executed {
    /// The branch the files went to, and its head afterwards.
    pub branch: String,
    pub head: Option<String>,
    pub pushed: Option<PushOutcome>,
}

/// What [`Staged::execute`] wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// By plan index.
    pub executed: Vec<Executed>,
    /// The Playzones asked to sync, to wake after the commit.
    pub wakes: Vec<i64>,
}

/// A write that failed, and the plan it was for.
#[derive(Debug)]
pub struct Failure {
    pub index: usize,
    pub error: Error,
}

/// The host writes of one apply; see the [module documentation](self).
#[derive(Debug, Default)]
pub struct Staged {
    planned: Vec<Planned>,
    /// Made on a host by [`Staged::execute`]: undone on a failure.
    made: Vec<usize>,
    settings_changed: Vec<usize>,
    removals: Vec<(Arc<dyn SourceHost>, Repository)>,
}

impl Staged {
    /// Adds a repository's writes; its index in [`Staged::execute`]'s
    /// answer.
    pub fn plan(&mut self, planned: Planned) -> usize {
        self.planned.push(planned);
        self.planned.len() - 1
    }

    /// Removes `repository` from `host` once the apply committed.
    pub fn remove_after_commit(&mut self, host: Arc<dyn SourceHost>, repository: Repository) {
        self.removals.push((host, repository));
    }

    pub fn is_empty(&self) -> bool {
        self.planned.is_empty() && self.removals.is_empty()
    }

    /// Makes every planned write, recording pushes in `conn`; what each
    /// plan left (by its index) and the Playzones to wake after the
    /// commit. On an error everything made is undone first, and the error
    /// names the plan it came from.
    pub async fn execute(&mut self, conn: &mut Conn, actor: Actor) -> std::result::Result<Written, Failure> {
        match self.write(conn, actor).await {
            Ok(done) => Ok(done),
            Err(e) => {
                self.undo().await;
                Err(e)
            }
        }
    }

    async fn write(&mut self, conn: &mut Conn, actor: Actor) -> std::result::Result<Written, Failure> {
        for index in 0..self.planned.len() {
            let at = |error: Error| Failure { index, error };
            let plan = &self.planned[index];
            let repo = &plan.repository;
            if plan.create {
                plan.host.remove(&repo.full_name, Removal::Leftover).await.map_err(|e| at(e.into()))?;
                let by = author_for(&repo.full_name.owner);
                let made = plan
                    .host
                    .create(&repo.full_name, &repo.description, repo.private, false, &by)
                    .await
                    .map_err(|e| at(e.into()))?;
                self.made.push(index);
                repositories::set_default_branch_in(conn, repo.id, &made.default_branch).await.map_err(at)?;
                self.planned[index].repository.default_branch = made.default_branch;
            } else if plan.settings_before.is_some() {
                self.settings_changed.push(index);
                plan.host.update(&repo.full_name, &repo.description, repo.private).await.map_err(|e| at(e.into()))?;
            }
        }
        let mut written = Written::default();
        for (index, plan) in self.planned.iter().enumerate() {
            let at = |error: Error| Failure { index, error };
            let repo = &plan.repository;
            let branch = plan.branch.clone().unwrap_or_else(|| repo.default_branch.clone());
            let pushed = match &plan.push {
                Some(files) => {
                    let by = author_for(&repo.full_name.owner);
                    Some(plan.host.push(&repo.full_name, Some(&branch), files, &by).await.map_err(|e| at(e.into()))?)
                }
                None => None,
            };
            if let Some(outcome) = pushed.as_ref().filter(|o| o.changed) {
                let push = Push {
                    repository_id: repo.id,
                    branch: branch.clone(),
                    old_sha: outcome.previous.clone(),
                    new_sha: outcome.commit_sha.clone(),
                };
                let urls = url_candidates(plan.host.as_ref(), &repo.full_name);
                let woken = repositories::record_push_in(conn, repo, &push, actor, &urls).await.map_err(at)?;
                written.wakes.extend(woken);
            }
            let head = match &pushed {
                Some(outcome) => Some(outcome.commit_sha.clone()),
                None => plan.host.head(&repo.full_name, &branch).await.map_err(|e| at(e.into()))?,
            };
            written.executed.push(Executed { branch, head, pushed });
        }
        Ok(written)
    }

    /// Undoes what [`Staged::execute`] made: the repositories it created
    /// go, changed settings are put back. Best effort: the apply fails
    /// with its own error whatever this meets (a failure is logged).
    pub async fn undo(&mut self) {
        for i in std::mem::take(&mut self.made) {
            let plan = &self.planned[i];
            if let Err(e) = plan.host.remove(&plan.repository.full_name, Removal::Undo).await {
                tracing::warn!(repository = %plan.repository.full_name, error = %e, "apply: undoing a create failed");
            }
        }
        for i in std::mem::take(&mut self.settings_changed) {
            let plan = &self.planned[i];
            let Some((description, private)) = &plan.settings_before else { continue };
            if let Err(e) = plan.host.update(&plan.repository.full_name, description, *private).await {
                tracing::warn!(repository = %plan.repository.full_name, error = %e, "apply: restoring settings failed");
            }
        }
    }

    /// After the commit: removes the pruned repositories from their
    /// hosts. A failure is logged and leaves a copy no record names, which
    /// the next create of that name clears ([`Removal::Leftover`]); the
    /// apply has committed, so it does not fail for it.
    pub async fn after_commit(self) {
        for (host, repository) in self.removals {
            if let Err(e) = host.remove(&repository.full_name, Removal::Deleted).await {
                tracing::warn!(repository = %repository.full_name, error = %e, "apply: removing a pruned repository");
            }
        }
    }
}
