//! Server-side apply (`POST /api/apply`, `docs/manifests.md`): a set of
//! manifest objects in, each `created`, `configured`, `unchanged` or
//! `pruned`.
//!
//! Guarantees:
//! - **All or nothing.** The whole set runs in one write transaction:
//!   every object is validated (its spec with the create body's rules, its
//!   references, its Compose against the Playroom's policy) and written in
//!   it, and any validation error anywhere rolls everything back; the
//!   answer then lists every error, keyed `objects[i].…`.
//! - **Dry run is the same run, rolled back**, so it answers exactly what
//!   the apply would do, and writes nothing.
//! - **Unchanged writes nothing**: an object whose spec and live fields
//!   match the last apply (`play_model::apply::Decision`) gets no row update,
//!   no event and no wake.
//! - **Concurrent applies of one object**: the second to commit fails with
//!   409 `CONFLICT` (`store::applied` checks row versions); never a
//!   half-applied set.
//! - **Scopes per kind**: `<kind>:read` and `<kind>:write` for each kind in
//!   the set (read only for a dry run), `<kind>:delete` for each kind
//!   pruned; operator-only settings keep their own checks (`trusted`).
//!
//! Kinds are handled in `play_model::apply::Kind` order (references point
//! backwards); pruning runs in reverse after them, then Playspec revisions
//! no Playground uses any more are deleted ([`prune`]).

mod context;
mod env;
mod playground;
mod playroom;
mod playspec;
mod playzone;
mod playzone_attached;
pub(crate) mod prepare;
mod prune;
pub(crate) mod repository;
mod template;
mod webhook;

use std::collections::BTreeMap;

use crate::Error;
use play_model::FieldErrors;
use play_model::error::push_field_error;
use play_model::{
    apply as rules,
    apply::{Action, DiffEntry, Kind},
};
use play_store::applied;
use serde::{Deserialize, Serialize};

use context::Outcome;
pub use context::{Cx, read_scope};

pub use env::Env;
pub use env::Principal;

/// The body of `POST /api/apply`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ApplyRequest {
    /// The apply set the objects belong to (the CLI sends one per
    /// repository path); required with `prune`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 200, pattern = "^[A-Za-z0-9._:/@=,-]+$"))]
    pub apply_set: Option<String>,
    /// Delete the objects this apply set created that `objects` no longer
    /// lists.
    #[serde(default)]
    pub prune: bool,
    /// At most 500 objects.
    #[cfg_attr(feature = "openapi", schema(max_items = 500))]
    pub objects: Vec<ManifestObject>,
}

/// One manifest document, with files and `valueFrom` already resolved by
/// the client.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ManifestObject {
    /// `play/v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// Playroom, Repository, Playzone, Playspec, ImportTemplate,
    /// WebhookEndpoint or Playground.
    pub kind: String,
    pub metadata: Metadata,
    /// The kind's create body, references by name (`playroomRef`,
    /// `playspecRef`, `playzoneRef`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub spec: serde_json::Value,
}

#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// Unique per kind in the account: lowercase letters, digits, `-`, `.`.
    #[cfg_attr(feature = "openapi", schema(max_length = 63))]
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// What apply did with one object.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApplyResult {
    pub kind: String,
    pub name: String,
    /// The API object's id (for a Playspec, its current revision's);
    /// `null` in a dry run of a create.
    pub id: Option<i64>,
    /// `created`, `configured`, `unchanged` or `pruned`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub action: Action,
    /// The spec's changes since the last apply (secret values as digests).
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub diff: Vec<DiffEntry>,
    /// What changed on the live object outside apply (apply undoes it),
    /// and what the reconcilers report (a failed Playground, a service not
    /// running).
    pub drift: Vec<String>,
    /// A Playspec's revision: the API Playspec that holds this content.
    pub revision: Option<String>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApplyAnswer {
    pub dry_run: bool,
    pub apply_set: Option<String>,
    pub results: Vec<ApplyResult>,
}

/// A checked object of the request.
#[derive(Clone, Debug)]
pub struct Object {
    pub index: usize,
    pub kind: Kind,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub spec: serde_json::Value,
}

impl Object {
    /// The prefix of this object's error keys.
    pub fn field(&self, path: &str) -> String {
        if path.is_empty() { format!("objects[{}]", self.index) } else { format!("objects[{}].{path}", self.index) }
    }
}

/// Checks the envelope of every object (version, kind, name, labels,
/// duplicates) before anything else.
fn check_objects(request: &ApplyRequest) -> Result<Vec<Object>, Error> {
    let mut errors = FieldErrors::new();
    if request.objects.len() > rules::MAX_OBJECTS {
        push_field_error(&mut errors, "objects", format!("at most {} objects per apply", rules::MAX_OBJECTS));
        return Err(Error::Validation(errors));
    }
    match &request.apply_set {
        Some(set) => {
            if let Err(m) = rules::check_apply_set(set) {
                push_field_error(&mut errors, "apply_set", m);
            }
        }
        None if request.prune => push_field_error(&mut errors, "apply_set", "is required with prune"),
        None => {}
    }
    let mut seen: BTreeMap<(Kind, String), usize> = BTreeMap::new();
    let mut objects = Vec::new();
    for (index, raw) in request.objects.iter().enumerate() {
        let field = |p: &str| format!("objects[{index}].{p}");
        if raw.api_version != rules::API_VERSION {
            push_field_error(&mut errors, field("apiVersion"), format!("must be {}", rules::API_VERSION));
        }
        if let Err(m) = rules::check_name(&raw.metadata.name) {
            push_field_error(&mut errors, field("metadata.name"), m);
        }
        if raw.metadata.labels.len() > 64
            || raw.metadata.labels.iter().any(|(k, v)| rules::check_name(k).is_err() || v.chars().count() > 253)
        {
            push_field_error(
                &mut errors,
                field("metadata.labels"),
                "at most 64 labels; keys are names (lowercase letters, digits, '-', '.'), values at most 253 characters",
            );
        }
        if !raw.spec.is_object() {
            push_field_error(&mut errors, field("spec"), "must be an object");
        }
        let kind = match raw.kind.parse::<Kind>() {
            Ok(kind) => kind,
            Err(m) => {
                push_field_error(&mut errors, field("kind"), m);
                continue;
            }
        };
        if let Some(first) = seen.insert((kind, raw.metadata.name.clone()), index) {
            push_field_error(
                &mut errors,
                field("metadata.name"),
                format!("objects[{first}] is already the {kind} {:?}", raw.metadata.name),
            );
        }
        objects.push(Object {
            index,
            kind,
            name: raw.metadata.name.clone(),
            labels: raw.metadata.labels.clone(),
            spec: raw.spec.clone(),
        });
    }
    if !errors.is_empty() {
        return Err(Error::Validation(errors));
    }
    Ok(objects)
}

/// What an apply reads before its transaction opens: the pure checks,
/// the repositories' branch heads, and (on its second run) the names it
/// reserved for the repositories it creates.
#[derive(Debug, Default)]
pub struct Before {
    pub prepared: prepare::Prepared,
    pub heads: context::Heads,
    pub reservations: BTreeMap<play_model::scm::FullName, i64>,
}

/// What one run of the set in a transaction came to.
enum Run {
    /// Done: committed (or, for a dry run, rolled back).
    Done(ApplyAnswer),
    /// Valid, with host writes to make first: rolled back, and the writes
    /// planned, with the objects waiting for them.
    Writes(crate::scm::staged::Staged, Vec<context::Pending>),
}

/// Runs an apply (see the [module documentation](self)).
///
/// A set with repository writes runs twice (issue #49, item 5: no host is
/// called while the transaction, on SQLite the one write lock, is open):
/// once to check everything and plan the writes, rolled back; then the
/// names of new repositories are reserved and the hosts written with no
/// transaction open; then the set runs again and records what the hosts
/// did, provided it plans the same writes (else they are undone and the
/// apply answers 409: something changed meanwhile, apply again).
pub async fn run(
    env: &Env<'_>,
    principal: &Principal,
    request: ApplyRequest,
    dry_run: bool,
) -> crate::Result<ApplyAnswer> {
    let mut objects = check_objects(&request)?;
    objects.sort_by_key(|o| (o.kind, o.index));
    // The pure checks and the hosts' reads first, with no transaction
    // open (see `prepare` and `repository::read_heads`).
    let mut before = Before {
        prepared: prepare::prepare(env, &objects).await?,
        heads: repository::read_heads(env, principal.account_id, &objects).await?,
        reservations: BTreeMap::new(),
    };
    let (mut planned, pending) = match run_once(env, principal, &request, &objects, &before, dry_run, None).await? {
        Run::Done(answer) => return Ok(answer),
        Run::Writes(planned, pending) => (planned, pending),
    };
    let creates: Vec<_> = planned.creates().cloned().collect();
    for repository in &creates {
        let caller = crate::scm::flows::Caller { by: principal.acting(), limits: env.limits.quotas };
        let reserved =
            env.store.in_write(async |tx| crate::scm::flows::reserve_planned_in(tx, &caller, repository).await).await;
        match reserved {
            Ok(id) => {
                before.reservations.insert(repository.full_name.clone(), id);
            }
            Err(e) => {
                release(env, &before.reservations).await;
                return Err(e);
            }
        }
    }
    let executed = match planned.write_hosts().await {
        Ok(executed) => executed,
        Err(failure) => {
            release(env, &before.reservations).await;
            return Err(repository::failed(&pending, failure));
        }
    };
    let recorded = run_once(env, principal, &request, &objects, &before, false, Some((&planned, executed))).await;
    match recorded {
        Ok(Run::Done(answer)) => Ok(answer),
        Ok(Run::Writes(..)) => Err(Error::Internal("an apply's second run planned writes again".into())),
        Err(e) => {
            planned.undo().await;
            release(env, &before.reservations).await;
            Err(e)
        }
    }
}

/// Gives back the names an apply reserved that its record did not take.
async fn release(env: &Env<'_>, reservations: &BTreeMap<play_model::scm::FullName, i64>) {
    for (full, id) in reservations {
        if let Err(e) = play_store::repository_reservations::release(env.store, *id).await {
            tracing::warn!(repository = %full, error = %e, "apply: releasing a reserved name");
        }
    }
}

/// Runs the set once in a write transaction. With `written` (the plan of
/// the first run and what its host writes left), records them and commits
/// if this run plans the very same writes.
async fn run_once(
    env: &Env<'_>,
    principal: &Principal,
    request: &ApplyRequest,
    objects: &[Object],
    before: &Before,
    dry_run: bool,
    written: Option<(&crate::scm::staged::Staged, Vec<crate::scm::staged::Executed>)>,
) -> crate::Result<Run> {
    // A dry run writes only to roll back: it waits for other writers
    // first (issue #49, item 13).
    let mut tx = if dry_run { env.store.write_after_others().await? } else { env.store.write().await? };
    let rows = applied::list(&mut tx, principal.account_id).await?;
    let to_prune: Vec<play_model::apply::model::Applied> = match (&request.apply_set, request.prune) {
        (Some(set), true) => rows
            .iter()
            .filter(|r| r.apply_set.as_deref() == Some(set.as_str()))
            .filter(|r| !objects.iter().any(|o| o.kind == r.kind && o.name == r.name))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    context::authorise(principal, objects, &to_prune, dry_run)?;
    let mut cx = Cx::new(env, principal, &mut tx, rows, request.apply_set.clone(), before);
    let mut results: BTreeMap<usize, ApplyResult> = BTreeMap::new();
    let mut errors = FieldErrors::new();
    for object in objects {
        let outcome = match object.kind {
            Kind::Playroom => playroom::apply(&mut cx, object).await,
            Kind::Repository => repository::apply(&mut cx, object).await,
            Kind::Playzone => playzone::apply(&mut cx, object).await,
            Kind::Playspec => playspec::apply(&mut cx, object).await,
            Kind::WebhookEndpoint => webhook::apply(&mut cx, object).await,
            Kind::Playground => playground::apply(&mut cx, object).await,
            Kind::ImportTemplate => template::apply(&mut cx, object).await,
        };
        // Each object's diffs and digests are CPU work on this runtime
        // thread: let the thread's other requests in between.
        tokio::task::yield_now().await;
        match outcome {
            Ok(outcome) => {
                cx.resolved(object, outcome.id);
                results.insert(object.index, outcome.result(object));
            }
            Err(Error::Validation(found)) => {
                cx.failed(object);
                errors.extend(found);
            }
            Err(other) => return Err(context::name_error(object, other)),
        }
    }
    if !errors.is_empty() {
        return Err(Error::Validation(errors));
    }
    let mut pruned = Vec::new();
    for row in prune::order(to_prune) {
        pruned.push(prune::prune(&mut cx, &row).await?);
    }
    prune::collect_revisions(&mut cx).await?;
    match written {
        // Last before the commit: the hosts were written for this very
        // plan, with no transaction open.
        Some((first, executed)) => {
            if !first.same_plan(&cx.repos) {
                return Err(Error::Conflict(
                    "the repositories of this set changed while it was applied: apply again".into(),
                ));
            }
            repository::record(&mut cx, executed).await?;
        }
        None if !dry_run && cx.repos.has_writes() => {
            let (planned, pending) = cx.finish();
            tx.rollback().await.map_err(Error::from)?;
            return Ok(Run::Writes(planned, pending));
        }
        None => {}
    }
    let (staged, _) = cx.finish();
    if dry_run {
        tx.rollback().await.map_err(Error::from)?;
    } else {
        env.store.commit(tx).await?;
        staged.after_commit().await;
    }
    let mut results: Vec<ApplyResult> = results.into_values().collect();
    results.extend(pruned);
    if dry_run {
        for r in results.iter_mut().filter(|r| r.action == Action::Created) {
            r.id = None;
        }
    }
    Ok(Run::Done(ApplyAnswer { dry_run, apply_set: request.apply_set.clone(), results }))
}

impl Outcome {
    fn result(self, object: &Object) -> ApplyResult {
        ApplyResult {
            kind: object.kind.as_str().to_owned(),
            name: object.name.clone(),
            id: Some(self.id),
            action: self.action,
            diff: self.diff,
            drift: self.drift,
            revision: self.revision,
        }
    }
}
