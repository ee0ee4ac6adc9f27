//! The repository writes of one server-side apply (a manifest's
//! `Repository` objects): planned while every object is checked, made on
//! the hosts only once the whole set is valid and with no transaction
//! open, recorded in the apply's transaction after, and undone when a
//! later step fails.
//!
//! Guarantees (`docs/manifests.md`, "Repository"):
//! - **Nothing reaches a host before the set is valid.** The per-object
//!   step records rows and [`plan`](Staged::plan)s host writes; a field
//!   error anywhere in the set rolls the rows back and no host was asked
//!   anything but to read a branch head (before the transaction). A dry
//!   run never calls [`Staged::write_hosts`].
//! - **No transaction is open while a host is called** (issue #49, item
//!   5: a GitHub push is a request per file, and SQLite has one write
//!   lock). The apply runs once to check the set and plan, rolls back,
//!   reserves the names it creates, makes the writes
//!   ([`write_hosts`](Staged::write_hosts)), then runs again and records
//!   what the hosts did ([`record_in`](Staged::record_in)) if it plans the
//!   same writes ([`Staged::same_plan`]).
//! - **All or nothing, as far as a host allows.** Writes run creates
//!   first, then settings, then pushes. A failure undoes every repository
//!   this apply created ([`Removal::Undo`]) and puts back the settings it
//!   changed, and nothing is recorded. A push already made to a
//!   repository that existed before stays: it is one commit on top of its
//!   branch, like a push by `git`; the next apply finds the files in place.
//! - **Pushes are recorded with the apply**: each push that moved a
//!   branch is a `repo.push` event and asks the Playzones on the
//!   repository to sync, in the apply's transaction; its commit wakes
//!   them (`play_store::wakes`).
//! - **Removals wait for the commit** (prune): the record goes in the
//!   transaction, the host's copy after it ([`Removal::Deleted`]: play's
//!   own host deletes it, GitHub keeps it).

use std::sync::Arc;

use crate::Error;
use crate::scm::flows::{author_for, url_candidates};
use play_model::model::event::Actor;
use play_model::scm::host::{Removal, SourceHost};
use play_model::scm::model::{Push, Repository};
use play_model::scm::{PushFiles, PushOutcome};
use play_store::{Conn, repositories};

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
    /// The default branch the host gave a repository it created.
    pub made_default_branch: Option<String>,
}

/// What [`Staged::record_in`] recorded.
#[derive(Debug, Default)]
pub struct Written {
    /// By plan index.
    pub executed: Vec<Executed>,
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
    /// Made on a host by [`Staged::write_hosts`]: undone on a failure.
    made: Vec<usize>,
    settings_changed: Vec<usize>,
    removals: Vec<(Arc<dyn SourceHost>, Repository)>,
}

impl Staged {
    /// Adds a repository's writes; its index in [`Staged::write_hosts`]'s
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

    /// Whether any host write is planned (removals wait for the commit).
    pub fn has_writes(&self) -> bool {
        !self.planned.is_empty()
    }

    /// The repositories this apply creates (their names are reserved
    /// before the hosts are called).
    pub fn creates(&self) -> impl Iterator<Item = &Repository> {
        self.planned.iter().filter(|p| p.create).map(|p| &p.repository)
    }

    /// Whether `other` (the apply's second run) plans the very writes this
    /// one made: the same repositories, creates, settings, files and
    /// branches, in the same order.
    pub fn same_plan(&self, other: &Staged) -> bool {
        let key = |p: &Planned| {
            (
                p.repository.full_name.clone(),
                p.repository.description.clone(),
                p.repository.private,
                p.create,
                p.settings_before.clone(),
                p.push.clone(),
                p.branch.clone(),
            )
        };
        self.planned.len() == other.planned.len()
            && self.planned.iter().zip(&other.planned).all(|(a, b)| key(a) == key(b))
    }

    /// Makes every planned write on its host, with no transaction open:
    /// what each plan left, by its index. On an error everything made is
    /// undone first, and the error names the plan it came from.
    pub async fn write_hosts(&mut self) -> std::result::Result<Vec<Executed>, Failure> {
        match self.write().await {
            Ok(done) => Ok(done),
            Err(e) => {
                self.undo().await;
                Err(e)
            }
        }
    }

    async fn write(&mut self) -> std::result::Result<Vec<Executed>, Failure> {
        let mut made_branches = Vec::with_capacity(self.planned.len());
        for (index, plan) in self.planned.iter().enumerate() {
            let at = |error: Error| Failure { index, error };
            let repo = &plan.repository;
            made_branches.push(None);
            if plan.create {
                plan.host.remove(&repo.full_name, Removal::Leftover).await.map_err(|e| at(e.into()))?;
                let by = author_for(&repo.full_name.owner);
                let made = plan
                    .host
                    .create(&repo.full_name, &repo.description, repo.private, false, &by)
                    .await
                    .map_err(|e| at(e.into()))?;
                self.made.push(index);
                made_branches[index] = Some(made.default_branch);
            } else if plan.settings_before.is_some() {
                self.settings_changed.push(index);
                plan.host.update(&repo.full_name, &repo.description, repo.private).await.map_err(|e| at(e.into()))?;
            }
        }
        let mut executed = Vec::with_capacity(self.planned.len());
        for (index, plan) in self.planned.iter().enumerate() {
            let at = |error: Error| Failure { index, error };
            let repo = &plan.repository;
            let made_default_branch = made_branches[index].take();
            let default_branch = made_default_branch.as_deref().unwrap_or(&repo.default_branch);
            let branch = plan.branch.clone().unwrap_or_else(|| default_branch.to_owned());
            let pushed = match &plan.push {
                Some(files) => {
                    let by = author_for(&repo.full_name.owner);
                    Some(plan.host.push(&repo.full_name, Some(&branch), files, &by).await.map_err(|e| at(e.into()))?)
                }
                None => None,
            };
            let head = match &pushed {
                Some(outcome) => Some(outcome.commit_sha.clone()),
                None => plan.host.head(&repo.full_name, &branch).await.map_err(|e| at(e.into()))?,
            };
            executed.push(Executed { branch, head, pushed, made_default_branch });
        }
        Ok(executed)
    }

    /// Records in `conn` what [`write_hosts`](Staged::write_hosts) of the
    /// same plan left (`executed`, by plan index): the default branch of
    /// each repository made, and each push that moved a branch.
    pub async fn record_in(
        &self,
        conn: &mut Conn,
        executed: Vec<Executed>,
        actor: Actor,
    ) -> std::result::Result<Written, Failure> {
        let mut written = Written::default();
        for (index, (plan, done)) in self.planned.iter().zip(executed).enumerate() {
            let at = |error: Error| Failure { index, error };
            let repo = &plan.repository;
            if let Some(branch) = &done.made_default_branch {
                repositories::set_default_branch_in(conn, repo.id, branch).await.map_err(at)?;
            }
            if let Some(outcome) = done.pushed.as_ref().filter(|o| o.changed) {
                let push = Push {
                    repository_id: repo.id,
                    branch: done.branch.clone(),
                    old_sha: outcome.previous.clone(),
                    new_sha: outcome.commit_sha.clone(),
                };
                let urls = url_candidates(plan.host.as_ref(), &repo.full_name);
                repositories::record_pushes_in(conn, repo, std::slice::from_ref(&push), actor, &urls)
                    .await
                    .map_err(at)?;
            }
            written.executed.push(done);
        }
        Ok(written)
    }

    /// Undoes what [`Staged::write_hosts`] made: the repositories it created
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
