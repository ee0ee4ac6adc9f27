//! The repositories facility's flows: create a repository on its host and
//! record it, push files to one. Above the store and the [`SourceHost`]
//! seam; the API's handlers call one of these each.
//!
//! # Create, safe to stop at any line
//!
//! No transaction is open while a host is called (issue #49, item 5: a
//! GitHub push is one request per file, and SQLite has one write lock).
//! The name is reserved first in a short write transaction (its quota and
//! the unique names decide a race: `store::repository_reservations`),
//! then the repository is made on the host and takes its first push, then
//! a second short transaction turns the reservation into the record.
//! Stopped before that, the reservation expires and the host may keep a
//! repository nothing records: the next create of that name takes the
//! reservation over and clears what the host kept ([`Removal::Leftover`];
//! play's own host only, as GitHub's repositories may be someone's)
//! before making it anew. A failure after the host made the repository
//! removes it at once ([`Removal::Undo`]) and releases the name.

use std::sync::Arc;

use crate::scm::hosts::{Choice, SourceHosts, Target};
use crate::{Error, Result};
use play_model::model::event::{Acting, Actor};
use play_model::model::quota::QuotaLimits;
use play_model::playzone::branch_name;
use play_model::scm::host::{Removal, SourceHost};
use play_model::scm::model::NewRepository;
use play_model::scm::model::{Push, Repository};
use play_model::scm::names::check_repo_name;
use play_model::scm::{Author, DEFAULT_BRANCH, FullName, PushFile, PushFiles, PushOutcome};
use play_store::{Conn, Store};
use play_store::{repositories, repository_reservations};

pub use play_model::scm::names::MAX_DESCRIPTION_CHARS;

/// A repository to create.
#[derive(Clone, Debug)]
pub struct CreateRequest {
    pub name: String,
    pub description: String,
    pub private: bool,
    pub auto_init: bool,
    /// Where to create it ([`SourceHosts::choose`]).
    pub on: Choice,
}

/// Who calls: the account and actor that act, and the quotas their
/// creates count against.
#[derive(Clone, Copy, Debug)]
pub struct Caller<'a> {
    pub by: Acting,
    pub limits: &'a QuotaLimits,
}

/// The author of commits play makes for `owner` (documented in
/// `docs/repositories.md`).
pub fn author_for(owner: &str) -> Author {
    Author { name: owner.to_owned(), email: format!("{owner}@users.noreply.play.invalid") }
}

/// Creates the repository on `host` and records it; with `auto_init`, its
/// README commit is recorded as a push.
pub async fn create(
    store: &Store,
    hosts: &SourceHosts,
    caller: &Caller<'_>,
    request: &CreateRequest,
) -> Result<(Repository, Option<PushOutcome>)> {
    create_with(store, hosts, caller, request, None).await
}

/// Creates the repository with `files` as its first commit (`auto_init`
/// is ignored): the files are checked before anything is written, and a
/// failure at any step leaves neither the record nor the repository.
pub async fn create_and_push(
    store: &Store,
    hosts: &SourceHosts,
    caller: &Caller<'_>,
    request: &CreateRequest,
    files: Vec<PushFile>,
    message: &str,
) -> Result<(Repository, PushOutcome)> {
    let files = PushFiles::check(files, message)?;
    let (repository, first) = create_with(store, hosts, caller, request, Some(&files)).await?;
    let first = first.ok_or_else(|| Error::Internal("the first push made no commit".into()))?;
    Ok((repository, first))
}

async fn create_with(
    store: &Store,
    hosts: &SourceHosts,
    caller: &Caller<'_>,
    request: &CreateRequest,
    first: Option<&PushFiles>,
) -> Result<(Repository, Option<PushOutcome>)> {
    check_create(request)?;
    let target = hosts.choose(store, caller.by.account_id, request.on).await?;
    let reserved = store.in_write(async |tx| reserve_new_in(tx, caller, request, target).await).await?;
    let recorded = match make_on_host(&reserved, request, first).await {
        Ok(made) => store
            .in_write(async |tx| record_reserved_in(tx, caller, request, &reserved, &made.default_branch).await)
            .await
            .map(|repository| (repository, made)),
        Err(e) => Err(e),
    };
    let (repository, made) = match recorded {
        Ok(done) => done,
        Err(e) => {
            if reserved.made() {
                let _ = reserved.host.remove(&reserved.full_name, Removal::Undo).await;
            }
            if let Err(release) = repository_reservations::release(store, reserved.id).await {
                tracing::warn!(repository = %reserved.full_name, error = %release, "releasing a failed create's name");
            }
            return Err(e);
        }
    };
    if let Some(first) = &made.initial {
        let recorder = Recorder { store, host: reserved.host.as_ref(), actor: caller.by.actor };
        record(&recorder, &repository, &made.default_branch, first.previous.clone(), first.commit_sha.clone()).await?;
    }
    Ok((repository, made.initial))
}

/// A name held for a create ([`reserve_new_in`]): where, and whether the
/// host made the repository yet (so a failure knows what to undo).
#[derive(Debug)]
pub struct Reserved {
    /// The reservation's id (`store::repository_reservations`).
    pub id: i64,
    pub full_name: FullName,
    pub installation: play_model::scm::model::Installation,
    pub host: Arc<dyn SourceHost>,
    made: std::sync::atomic::AtomicBool,
}

impl Reserved {
    /// Whether the host made the repository (a failure removes it).
    pub fn made(&self) -> bool {
        self.made.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// What the host made: the default branch, and the first commit.
#[derive(Debug)]
struct Made {
    default_branch: String,
    initial: Option<PushOutcome>,
}

/// Makes the repository on its host and pushes `first` (no transaction
/// open); a push that fails leaves the made repository for the caller to
/// undo ([`Reserved::made`]).
async fn make_on_host(reserved: &Reserved, request: &CreateRequest, first: Option<&PushFiles>) -> Result<Made> {
    let (host, full) = (reserved.host.as_ref(), &reserved.full_name);
    host.remove(full, Removal::Leftover).await?;
    let by = author_for(&full.owner);
    let auto_init = request.auto_init && first.is_none();
    // Nothing was made when the create fails: there is nothing to undo
    // (the name may be someone else's repository on the provider).
    let made = host.create(full, &request.description, request.private, auto_init, &by).await?;
    reserved.made.store(true, std::sync::atomic::Ordering::Relaxed);
    let initial = match first {
        Some(files) => Some(host.push(full, Some(&made.default_branch), files, &by).await?),
        None => made.initial,
    };
    Ok(Made { default_branch: made.default_branch, initial })
}

/// Reserves the name of `request` on `target` in the caller's write
/// transaction (commit it before calling the host).
pub async fn reserve_new_in(
    conn: &mut Conn,
    caller: &Caller<'_>,
    request: &CreateRequest,
    target: Target,
) -> Result<Reserved> {
    let Target { installation, host } = target;
    let (installation, owner) = owner_on(conn, caller, installation).await?;
    let full_name = FullName { owner, name: request.name.clone() };
    let id = repository_reservations::reserve_in(conn, caller.by, installation.id, &full_name, caller.limits).await?;
    Ok(Reserved { id, full_name, installation, host, made: std::sync::atomic::AtomicBool::new(false) })
}

/// Reserves the name of `repository`, planned (and rolled back) by an
/// apply's first run, in the caller's write transaction: the
/// installation of play's own host that run made for the account is made
/// again here if it is not committed yet.
pub async fn reserve_planned_in(conn: &mut Conn, caller: &Caller<'_>, repository: &Repository) -> Result<i64> {
    let installation_id = match repository.provider {
        play_model::scm::model::Provider::Builtin => {
            repositories::builtin_installation_in(conn, caller.by.account_id).await?.id
        }
        _ => repository.installation_id,
    };
    repository_reservations::reserve_in(conn, caller.by, installation_id, &repository.full_name, caller.limits).await
}

/// Records the repository `reserved` holds the name of, with the default
/// branch its host gave it, in the caller's write transaction.
pub async fn record_reserved_in(
    conn: &mut Conn,
    caller: &Caller<'_>,
    request: &CreateRequest,
    reserved: &Reserved,
    default_branch: &str,
) -> Result<Repository> {
    let new = NewRepository {
        installation: &reserved.installation,
        full_name: &reserved.full_name,
        description: &request.description,
        private: request.private,
        default_branch,
    };
    repositories::insert_in(conn, caller.by, new, caller.limits, false, Some(reserved.id)).await
}

/// The installation a repository goes to (play's own host: the account's,
/// made on first use) and its owner name.
async fn owner_on(
    conn: &mut Conn,
    caller: &Caller<'_>,
    installation: Option<play_model::scm::model::Installation>,
) -> Result<(play_model::scm::model::Installation, String)> {
    Ok(match installation {
        Some(app) => {
            let owner = app.account_login.to_ascii_lowercase();
            (app, owner)
        }
        None => (
            repositories::builtin_installation_in(conn, caller.by.account_id).await?,
            repositories::owner_name_in(conn, caller.by.account_id).await?,
        ),
    })
}

/// Checks a create's name and description (fields `name`,
/// `description`).
pub fn check_create(request: &CreateRequest) -> Result<()> {
    check_repo_name("name", &request.name)?;
    if request.description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(Error::field("description", format!("must be at most {MAX_DESCRIPTION_CHARS} characters")));
    }
    Ok(())
}

/// Records the repository of `request` on `target` in the caller's
/// transaction (its quota and unique name checked there), consuming the
/// caller's reservation of the name, if `reservation` gives one (apply's
/// second run, after the host made it); the host's copy is the caller's
/// to make, with no transaction open.
pub async fn record_new_in(
    conn: &mut Conn,
    caller: &Caller<'_>,
    request: &CreateRequest,
    target: Target,
    reservation: impl FnOnce(&FullName) -> Option<i64>,
) -> Result<(Repository, Arc<dyn SourceHost>)> {
    let Target { installation, host } = target;
    let (installation, owner) = owner_on(conn, caller, installation).await?;
    let full = FullName { owner, name: request.name.clone() };
    let new = NewRepository {
        installation: &installation,
        full_name: &full,
        description: &request.description,
        private: request.private,
        default_branch: DEFAULT_BRANCH,
    };
    let reserved = reservation(&full);
    let repository = repositories::insert_in(conn, caller.by, new, caller.limits, false, reserved).await?;
    Ok((repository, host))
}

/// The URLs a Playzone's `scm_url` may name `full` of `host` by: its
/// clone URL or its web address.
pub fn url_candidates(host: &dyn SourceHost, full: &FullName) -> Vec<String> {
    let urls = host.urls(full);
    vec![urls.clone_url.clone(), urls.html_url.clone(), format!("{}/", urls.html_url)]
}

/// A push to check: the contract's `repo`, `files`, `message`, `branch`.
#[derive(Clone, Debug)]
pub struct PushRequest {
    pub repo: String,
    pub files: Vec<PushFile>,
    pub message: String,
    pub branch: Option<String>,
}

/// Checks `request` whole, then writes its files as one commit to the
/// account's repository, recording the push when it changed the branch.
/// A repository of play's own host whose account the operator switched
/// off is refused ([`SourceHosts::push_refusal`]).
pub async fn push(
    store: &Store,
    hosts: &SourceHosts,
    caller: &Caller<'_>,
    request: PushRequest,
) -> Result<(Repository, PushOutcome)> {
    let full = FullName::parse("repo", &request.repo)?;
    if let Some(branch) = &request.branch
        && let Err(message) = branch_name(branch)
    {
        return Err(Error::field("branch", message));
    }
    let files = PushFiles::check(request.files, &request.message)?;
    let repository = repositories::by_name(store, caller.by.account_id, &full).await?;
    if let Some(refusal) = hosts.push_refusal(store, &repository).await? {
        return Err(Error::ScmAppRequired(refusal));
    }
    let host = hosts.of_repository(store, &repository).await?;
    let host = host.as_ref();
    let full = &repository.full_name;
    let branch = request.branch.unwrap_or_else(|| repository.default_branch.clone());
    let outcome = host.push(full, Some(&branch), &files, &author_for(&full.owner)).await?;
    if outcome.changed {
        let recorder = Recorder { store, host, actor: caller.by.actor };
        record(&recorder, &repository, &branch, outcome.previous.clone(), outcome.commit_sha.clone()).await?;
    }
    Ok((repository, outcome))
}

/// Records a push of `branch`; the Playzones on the repository are asked
/// to sync in the same transaction, and woken by its commit
/// ([`repositories::record_pushes`]).
/// Their `scm_url` may name it by its clone URL or its web address.
async fn record(
    ctx: &Recorder<'_>,
    repository: &Repository,
    branch: &str,
    old: Option<String>,
    new: String,
) -> Result<()> {
    let push = Push { repository_id: repository.id, branch: branch.to_owned(), old_sha: old, new_sha: new };
    let candidates = url_candidates(ctx.host, &repository.full_name);
    repositories::record_pushes(ctx.store, repository, std::slice::from_ref(&push), ctx.actor, &candidates).await?;
    Ok(())
}

/// Deletes the account's repository `full_name` (field `repo` in errors):
/// the record first, then the host's copy. Stopped between the two, the
/// host keeps a copy nothing records, which the next create of that name
/// clears ([`Removal::Leftover`]); a GitHub repository stays on GitHub
/// ([`Removal::Deleted`]). Playzones attached to it are woken and say that
/// access is lost.
pub async fn delete(store: &Store, hosts: &SourceHosts, caller: &Caller<'_>, full_name: &str) -> Result<()> {
    let full = FullName::parse("repo", full_name)?;
    let repository = repositories::by_name(store, caller.by.account_id, &full).await?;
    let host = hosts.of_repository(store, &repository).await?;
    repositories::delete(store, &repository, caller.by.actor).await?;
    host.remove(&repository.full_name, Removal::Deleted).await?;
    Ok(())
}

/// Where pushes are recorded, and by whom.
struct Recorder<'a> {
    store: &'a Store,
    host: &'a dyn SourceHost,
    actor: Actor,
}

/// Records the branches one push through Git's protocol moved, all in
/// one transaction with one `repo.push` event (a deleted branch is not a
/// push of a commit and is not recorded); whether any was. The default
/// branch comes first when it moved, so the event's top-level `branch`
/// names it, then the others in the order given.
pub async fn record_moves(
    store: &Store,
    host: &dyn SourceHost,
    repository: &Repository,
    moves: Vec<play_model::scm::http::BranchMove>,
    actor: Actor,
) -> Result<bool> {
    let mut pushes: Vec<Push> = moves
        .into_iter()
        .filter_map(|change| {
            let new_sha = change.new?;
            Some(Push { repository_id: repository.id, branch: change.branch, old_sha: change.old, new_sha })
        })
        .collect();
    if pushes.is_empty() {
        return Ok(false);
    }
    pushes.sort_by_key(|push| push.branch != repository.default_branch);
    let candidates = url_candidates(host, &repository.full_name);
    repositories::record_pushes(store, repository, &pushes, actor, &candidates).await?;
    Ok(true)
}
