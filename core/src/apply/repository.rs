//! Applying a Repository (`docs/manifests.md`): a repository of the
//! repositories facility, and files that should be in it.
//!
//! `spec`: `description` (default empty), `private` (default `true`),
//! where it lives (`provider`, `installation_id`: as `POST /api/repos`,
//! fixed once created), and optionally `files` (`[{path, content}]`; the
//! CLI fills them from `filesFrom: FOLDER`), `branch` (default: the
//! repository's default branch) and `message` (default
//! [`DEFAULT_MESSAGE`]). The files are written as one commit on top of the
//! branch, as `POST /api/repos/push` does: files the manifest does not
//! name are left as they are.
//!
//! What apply compares: the spec with file contents as digests (the diff
//! names each changed path), and, as the live object, the description,
//! the visibility and the branch's head commit. A head that moved since
//! the last apply (someone pushed) is drift: the files are pushed again,
//! which makes a commit only if one of them differs. Heads are read
//! before the apply's transaction opens ([`read_heads`]), and host writes
//! wait for the whole set to be valid and are made with no transaction
//! open (`crate::scm::staged`, issue #49 item 5); a dry run makes
//! none.

use crate::Error;
use crate::scm::flows::{self, Caller, CreateRequest};
use crate::scm::staged::{Executed, Failure, Planned};
use play_model::FieldErrors;
use play_model::apply::{Action, Kind};
use play_model::scm::model::Repository;
use play_model::scm::{PushFile, PushFiles};
use play_store::repositories;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Env;
use super::Object;
use super::context::{Cx, Heads, Outcome, Pending, decide, found, name_error};
use crate::input::repos::{FileInput, choice};
use play_model::json::parse_value;

/// The commit message of an apply's push when the spec gives none.
pub const DEFAULT_MESSAGE: &str = "play apply";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    description: Option<String>,
    private: Option<bool>,
    provider: Option<String>,
    installation_id: Option<i64>,
    branch: Option<String>,
    message: Option<String>,
    files: Option<Vec<FileInput>>,
}

/// `errors` of the repositories facility (`name`, `files[2].path`) under
/// the object (`metadata.name`, `spec.files[2].path`).
fn rekey(errors: FieldErrors, object: &Object) -> FieldErrors {
    errors
        .into_iter()
        .map(|(key, messages)| {
            let key = if key == "name" { object.field("metadata.name") } else { object.field(&format!("spec.{key}")) };
            (key, messages)
        })
        .collect()
}

fn rekeyed(error: Error, object: &Object) -> Error {
    match error {
        Error::Validation(errors) => Error::Validation(rekey(errors, object)),
        other => other,
    }
}

/// The spec as stored and compared: each file's content as a digest
/// (the SHA-256 of its JSON text, `play_model::apply::digest`).
fn redacted(spec: &Value) -> Value {
    let mut out = spec.clone();
    if let Some(files) = out.get("files").and_then(Value::as_array) {
        let digests: serde_json::Map<String, Value> = files
            .iter()
            .filter_map(|f| {
                let path = f.get("path")?.as_str()?;
                let content = f.get("content")?.as_str()?;
                Some((path.to_owned(), json!(format!("digest:{}", play_model::apply::digest(&json!(content))))))
            })
            .collect();
        out["files"] = Value::Object(digests);
    }
    out
}

fn live(repository: &Repository, head: Option<&str>) -> Value {
    json!({ "description": repository.description, "private": repository.private, "head": head })
}

pub async fn apply(cx: &mut Cx<'_>, object: &Object) -> Result<Outcome, Error> {
    let spec: Spec = parse_value(&object.spec, &object.field("spec")).map_err(Error::Validation)?;
    let mut errors = FieldErrors::new();
    let on = choice(&mut errors, spec.provider.clone(), spec.installation_id);
    let request = CreateRequest {
        name: object.name.clone(),
        description: spec.description.clone().unwrap_or_default(),
        private: spec.private.unwrap_or(true),
        auto_init: false,
        on,
    };
    if let Err(Error::Validation(found)) = flows::check_create(&request) {
        errors.extend(found);
    }
    if let Some(Err(message)) = spec.branch.as_deref().map(play_model::playzone::branch_name) {
        play_model::error::push_field_error(&mut errors, "branch", message);
    }
    let files = match spec.files {
        Some(list) => {
            let list = list.into_iter().map(|f| PushFile { path: f.path, content: f.content.into_bytes() }).collect();
            let message = spec.message.as_deref().unwrap_or(DEFAULT_MESSAGE);
            match PushFiles::check(list, message).map_err(Error::from) {
                Ok(files) => Some(files),
                Err(Error::Validation(found)) => {
                    errors.extend(found);
                    None
                }
                Err(e) => return Err(e),
            }
        }
        None => None,
    };
    if !errors.is_empty() {
        return Err(Error::Validation(rekey(errors, object)));
    }
    let redacted = redacted(&object.spec);
    let account = cx.account();
    let current = match cx.last(object).map(|row| row.object_id) {
        Some(id) => found(repositories::get_in(&mut *cx.conn, account, id).await)?,
        None => None,
    };
    let env = cx.env;
    let (store, hosts) = (env.store, &env.limits.hosts);
    let Some(repository) = current else {
        let decision = decide(cx, object, &redacted, None);
        let caller = Caller { by: cx.principal.acting(), limits: env.limits.quotas };
        let target = hosts.choose(store, account, on).await.map_err(|e| rekeyed(e, object))?;
        let reservations = cx.reservations;
        let reserved = |full: &play_model::scm::FullName| reservations.get(full).copied();
        let (repository, host) =
            flows::record_new_in(cx.conn, &caller, &request, target, reserved).await.map_err(|e| match e {
                Error::Conflict(_) => Error::field(
                    object.field("metadata.name"),
                    format!(
                        "a repository named {} exists that this manifest did not make: delete it (play repo delete) \
                     or give this one another name",
                        object.name
                    ),
                ),
                other => rekeyed(other, object),
            })?;
        let id = repository.id;
        let base = live(&repository, None);
        let plan = Planned { repository, host, create: true, settings_before: None, push: files, branch: spec.branch };
        let plan = cx.repos.plan(plan);
        cx.pending.push(Pending { object: object.clone(), spec: redacted, live: base, id, plan });
        return Ok(Outcome::of(id, decision, None));
    };
    let mut moved = Vec::new();
    if on.provider.is_some_and(|p| p != repository.provider) {
        moved.push(("provider", format!("is {}", repository.provider)));
    }
    if on.installation_id.is_some_and(|i| i != repository.installation_id) {
        moved.push(("installation_id", format!("is {}", repository.installation_id)));
    }
    if !moved.is_empty() {
        let mut errors = FieldErrors::new();
        for (field, now) in moved {
            let message = format!(
                "{now}: a repository does not move between hosts; give it another name to make a new one there"
            );
            play_model::error::push_field_error(&mut errors, object.field(&format!("spec.{field}")), message);
        }
        return Err(Error::Validation(errors));
    }
    let host = hosts.of_repository(store, &repository).await?;
    let branch = spec.branch.clone().unwrap_or_else(|| repository.default_branch.clone());
    // Read before the transaction: no host is called with it open.
    let Some(head) = cx.heads.get(&(repository.id, branch.clone())).cloned() else {
        return Err(Error::Conflict(format!(
            "repository {} changed while this apply ran: apply again",
            repository.full_name
        )));
    };
    let before = live(&repository, head.as_deref());
    let decision = decide(cx, object, &redacted, Some(&before));
    if decision.action == Action::Unchanged {
        return Ok(Outcome::of(repository.id, decision, None));
    }
    let settings_before = (request.description != repository.description || request.private != repository.private)
        .then(|| (repository.description.clone(), repository.private));
    if settings_before.is_some() {
        repositories::set_settings_in(&mut *cx.conn, repository.id, &request.description, request.private).await?;
    }
    let push = files.filter(|_| !decision.diff.is_empty() || !decision.drift.is_empty());
    if push.is_some()
        && let Some(refusal) = hosts.push_refusal(store, &repository).await?
    {
        return Err(Error::field(object.field("spec.files"), refusal));
    }
    let id = repository.id;
    let repository = Repository { description: request.description, private: request.private, ..repository };
    let base = live(&repository, None);
    let plan = Planned { repository, host, create: false, settings_before, push, branch: spec.branch };
    let plan = cx.repos.plan(plan);
    cx.pending.push(Pending { object: object.clone(), spec: redacted, live: base, id, plan });
    Ok(Outcome::of(id, decision, None))
}

/// Reads [`Heads`] for `objects` with no transaction open (issue #49,
/// item 5: a host is never called while the store's write lock is held).
/// A Repository object whose record or branch cannot be read is left out:
/// the apply's own checks say why.
pub async fn read_heads(env: &Env<'_>, account_id: i64, objects: &[Object]) -> Result<Heads, Error> {
    let mut heads = Heads::new();
    let wanted: Vec<&Object> = objects.iter().filter(|o| o.kind == Kind::Repository).collect();
    if wanted.is_empty() {
        return Ok(heads);
    }
    let rows = play_store::applied::list(env.store, account_id).await?;
    let mut conn = env.store.conn().await?;
    for object in wanted {
        let Some(row) = rows.iter().find(|r| r.kind == Kind::Repository && r.name == object.name) else { continue };
        let Ok(repository) = repositories::get_in(&mut conn, account_id, row.object_id).await else { continue };
        let branch = match object.spec.get("branch").and_then(Value::as_str) {
            Some(b) if play_model::playzone::branch_name(b).is_ok() => b.to_owned(),
            Some(_) => continue,
            None => repository.default_branch.clone(),
        };
        let host = env.limits.hosts.of_repository(env.store, &repository).await?;
        let head = host.head(&repository.full_name, &branch).await.map_err(|e| name_error(object, Error::from(e)))?;
        heads.insert((repository.id, branch), head);
    }
    Ok(heads)
}

/// The error of the object whose plan `failure` came from.
pub fn failed(pending: &[super::context::Pending], failure: Failure) -> Error {
    let Failure { index, error } = failure;
    let object = pending.iter().find(|p| p.plan == index).map(|p| &p.object);
    match (object, error) {
        (Some(object), Error::Validation(errors)) => Error::Validation(rekey(errors, object)),
        (Some(object), other) => name_error(object, other),
        (None, other) => other,
    }
}

/// Records what the hosts did for the set (`executed`, by plan index, made
/// by the first run's writes of the same plan): default branches and
/// pushes, then the applied rows with the heads they left.
pub async fn record(cx: &mut Cx<'_>, executed: Vec<Executed>) -> Result<(), Error> {
    if cx.repos.is_empty() {
        return Ok(());
    }
    let actor = cx.principal.actor();
    let pending = std::mem::take(&mut cx.pending);
    let staged = std::mem::take(&mut cx.repos);
    let written = staged.record_in(cx.conn, executed, actor).await.map_err(|f| failed(&pending, f))?;
    cx.repos = staged;
    for item in pending {
        let mut live = item.live;
        live["head"] = json!(written.executed.get(item.plan).and_then(|e| e.head.clone()));
        cx.record(&item.object, item.spec, live, item.id, None).await?;
    }
    Ok(())
}
