//! What every kind's apply shares: the transaction, the account's applied
//! rows, the references resolved so far, and the writes of an applied row.

use std::collections::{BTreeMap, BTreeSet};

use crate::Error;
use play_model::FieldErrors;
use play_model::apply::model::{Applied, AppliedFields};
use play_model::scopes::Scope;
use play_model::{
    apply as rules,
    apply::{Action, Decision, DiffEntry, Kind},
};
use play_store::applied;
use play_store::names::{self, Named};
use play_store::{Conn, Tx};

use super::Env;
use super::Object;
use super::Principal;

/// One object's result, before it is shaped for the answer.
#[derive(Debug)]
pub struct Outcome {
    pub id: i64,
    pub action: Action,
    pub diff: Vec<DiffEntry>,
    pub drift: Vec<String>,
    pub revision: Option<String>,
}

impl Outcome {
    /// The outcome of `decision` for the object now at `id`.
    pub fn of(id: i64, decision: Decision, revision: Option<String>) -> Self {
        Outcome { id, action: decision.action, drift: drift_lines(&decision.drift), diff: decision.diff, revision }
    }
}

/// Branch heads of the set's existing repositories, by repository id
/// and branch, read before the apply's transaction opens
/// ([`super::repository::read_heads`]).
pub type Heads = BTreeMap<(i64, String), Option<String>>;

/// An object whose applied row waits for its host writes (a Repository:
/// the row holds the branch head they leave); `plan` is its index in
/// [`Cx::repos`].
#[derive(Debug)]
pub struct Pending {
    pub object: Object,
    pub spec: serde_json::Value,
    pub live: serde_json::Value,
    pub id: i64,
    pub plan: usize,
}

/// The apply in progress.
pub struct Cx<'a> {
    pub env: &'a Env<'a>,
    pub principal: &'a Principal,
    pub conn: &'a mut Conn,
    apply_set: Option<String>,
    applied: BTreeMap<(Kind, String), Applied>,
    resolved: BTreeMap<(Kind, String), i64>,
    failed: BTreeSet<(Kind, String)>,
    /// The pure checks, made before the transaction ([`super::prepare`]).
    pub prepared: &'a super::prepare::Prepared,
    /// Branch heads of the set's repositories, read before the
    /// transaction ([`super::repository::read_heads`]).
    pub heads: &'a Heads,
    /// The names this apply reserved for the repositories it creates (its
    /// second run, once the hosts made them; empty before).
    pub reservations: &'a BTreeMap<play_model::scm::FullName, i64>,
    /// Repository writes, made on the hosts once the set is valid.
    pub repos: crate::scm::staged::Staged,
    /// Repositories whose applied rows wait for those writes.
    pub pending: Vec<Pending>,
}

impl std::fmt::Debug for Cx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cx").field("apply_set", &self.apply_set).field("resolved", &self.resolved).finish()
    }
}

impl<'a> Cx<'a> {
    pub fn new(
        env: &'a Env<'a>,
        principal: &'a Principal,
        tx: &'a mut Tx,
        rows: Vec<Applied>,
        apply_set: Option<String>,
        before: &'a super::Before,
    ) -> Self {
        let applied = rows.into_iter().map(|r| ((r.kind, r.name.clone()), r)).collect();
        Cx {
            env,
            principal,
            conn: &mut *tx,
            apply_set,
            applied,
            resolved: BTreeMap::new(),
            failed: BTreeSet::new(),
            prepared: &before.prepared,
            heads: &before.heads,
            reservations: &before.reservations,
            repos: Default::default(),
            pending: Vec::new(),
        }
    }

    pub fn account(&self) -> i64 {
        self.principal.account_id
    }

    /// What the last apply of `object` left, if any.
    pub fn last(&self, object: &Object) -> Option<&Applied> {
        self.applied.get(&(object.kind, object.name.clone()))
    }

    pub fn resolved(&mut self, object: &Object, id: i64) {
        self.resolved.insert((object.kind, object.name.clone()), id);
    }

    pub fn failed(&mut self, object: &Object) {
        self.failed.insert((object.kind, object.name.clone()));
    }

    /// The repository writes to undo if the transaction does not commit
    /// (or to finish if it does), and the objects waiting for them. (The
    /// loops the set's changes concern are woken by the commit:
    /// `play_store::wakes`.)
    pub fn finish(self) -> (crate::scm::staged::Staged, Vec<Pending>) {
        (self.repos, self.pending)
    }

    /// The keyed digest of a secret value: equal values give equal
    /// digests (so an unchanged secret is unchanged), and the value
    /// cannot be read back or guessed offline without the server's pepper.
    pub fn secret_digest(&self, value: &str) -> String {
        let full = self.env.pepper.digest(&format!("apply-secret:{value}"));
        format!("hmac:{}", &full[..full.len().min(16)])
    }

    /// `spec` with the values at `paths` replaced by digests.
    pub fn redact(&self, spec: &serde_json::Value, paths: &[rules::SecretPath]) -> serde_json::Value {
        let mut out = spec.clone();
        rules::redact(&mut out, paths, &|v| self.secret_digest(v));
        out
    }

    /// The id a reference names: an object of this set (resolved earlier,
    /// kinds run in reference order), else one an earlier apply created,
    /// else an API object of that name. `field` is where the error goes.
    pub async fn reference(&mut self, kind: Kind, name: &str, field: String) -> Result<i64, Error> {
        let key = (kind, name.to_owned());
        if self.failed.contains(&key) {
            return Err(Error::field(field, format!("the {kind} {name:?} of this set is invalid (see its errors)")));
        }
        if let Some(id) = self.resolved.get(&key) {
            return Ok(*id);
        }
        if let Some(row) = self.applied.get(&key) {
            return Ok(row.object_id);
        }
        let named = match kind {
            Kind::Playroom => Named::Playroom,
            Kind::Playspec => Named::Playspec,
            Kind::Playzone => Named::Playzone,
            Kind::Repository => {
                let message = format!(
                    "no Repository {name:?} in this set or made by an earlier apply (a repository made otherwise is \
                     attached: POST /api/playzones/attach)"
                );
                return Err(Error::field(field, message));
            }
            _ => return Err(Error::field(field, format!("no {kind} {name:?} in this set"))),
        };
        let account = self.account();
        match names::id_of(&mut *self.conn, named, account, name).await? {
            Some(id) => Ok(id),
            None => Err(Error::field(field, format!("no {kind} named {name:?} in this set or the account"))),
        }
    }

    /// Records what this apply left for `object` (nothing when unchanged).
    pub async fn record(
        &mut self,
        object: &Object,
        spec: serde_json::Value,
        live: serde_json::Value,
        object_id: i64,
        revision: Option<String>,
    ) -> Result<(), Error> {
        let fields = AppliedFields {
            apply_set: self.apply_set.clone(),
            object_id,
            labels: object.labels.clone(),
            digest: digest(&spec),
            spec,
            live,
            revision,
        };
        match self.applied.get(&(object.kind, object.name.clone())) {
            Some(row) => applied::update_in(self.conn, row, &fields).await?,
            None => applied::insert_in(self.conn, self.account(), object.kind, &object.name, &fields).await?,
        }
        Ok(())
    }

    /// Whether labels or apply set differ from the last apply: a change of
    /// either alone is `configured` and rewrites only the applied row.
    pub fn metadata_changed(&self, object: &Object) -> bool {
        self.last(object).is_some_and(|row| row.labels != object.labels || row.apply_set != self.apply_set)
    }
}

pub use play_model::apply::digest;

/// A read of the object an applied row names: `None` when it is gone.
pub fn found<T>(read: crate::Result<T>) -> Result<Option<T>, Error> {
    match read {
        Ok(value) => Ok(Some(value)),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A reference's id; a validation error goes to `errors` (`None`), so
/// every bad reference of an object is reported at once.
pub async fn resolve(
    cx: &mut Cx<'_>,
    kind: Kind,
    name: &str,
    field: String,
    errors: &mut FieldErrors,
) -> Result<Option<i64>, Error> {
    match cx.reference(kind, name, field).await {
        Ok(id) => Ok(Some(id)),
        Err(Error::Validation(e)) => {
            errors.extend(e);
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Drift entries as the answer lists them.
pub fn drift_lines(entries: &[DiffEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            let show = |v: &Option<serde_json::Value>| v.as_ref().map_or("(none)".to_owned(), |v| v.to_string());
            format!("{} changed outside apply: {} -> {}", e.path, show(&e.old), show(&e.new))
        })
        .collect()
}

/// The decision for `object`, with a labels or apply-set change counted
/// as `configured`.
pub fn decide(cx: &Cx<'_>, object: &Object, spec: &serde_json::Value, live: Option<&serde_json::Value>) -> Decision {
    let last = cx.last(object).filter(|_| live.is_some()).map(|row| (&row.spec, &row.live));
    let mut decision = Decision::decide(last, spec, live);
    if decision.action == Action::Unchanged && cx.metadata_changed(object) {
        decision.action = Action::Configured;
    }
    decision
}

/// Re-keys a resource's field errors (`playroom.host`) under the object
/// (`objects[2].spec.host`); other keys go under the object as they are.
pub fn rekey(errors: FieldErrors, resource: &str, object: &Object) -> FieldErrors {
    let prefix = format!("{resource}.");
    errors
        .into_iter()
        .map(|(key, messages)| {
            let key = match key.strip_prefix(&prefix) {
                Some("name") => object.field("metadata.name"),
                Some(rest) => object.field(&format!("spec.{rest}")),
                None => object.field(&format!("spec.{key}")),
            };
            (key, messages)
        })
        .collect()
}

/// `error` of a resource call, validation errors re-keyed ([`rekey`]).
pub fn rekeyed(error: Error, resource: &str, object: &Object) -> Error {
    match error {
        Error::Validation(errors) => Error::Validation(rekey(errors, resource, object)),
        other => other,
    }
}

/// A non-validation error names the object it is about.
pub fn name_error(object: &Object, error: Error) -> Error {
    let prefix = |m: String| format!("{} {:?}: {m}", object.kind, object.name);
    match error {
        Error::Conflict(m) => Error::Conflict(prefix(m)),
        Error::Locked(m) => Error::Locked(prefix(m)),
        Error::InvalidState(m) => Error::InvalidState(prefix(m)),
        Error::NotFound(what) => Error::field(object.field("spec"), format!("the {what} it names does not exist")),
        other => other,
    }
}

/// The read, write and delete scopes of each kind.
fn scopes(kind: Kind) -> (Scope, Scope, Scope) {
    match kind {
        Kind::Playroom => (Scope::PlayroomsRead, Scope::PlayroomsWrite, Scope::PlayroomsDelete),
        // The contract has no repos:delete; DELETE /api/repos/{owner}/{name} needs repos:write too.
        Kind::Repository => (Scope::ReposRead, Scope::ReposWrite, Scope::ReposWrite),
        Kind::Playzone => (Scope::PlayzonesRead, Scope::PlayzonesWrite, Scope::PlayzonesDelete),
        Kind::Playspec => (Scope::PlayspecsRead, Scope::PlayspecsWrite, Scope::PlayspecsDelete),
        Kind::Playground => (Scope::PlaygroundsRead, Scope::PlaygroundsWrite, Scope::PlaygroundsDelete),
        Kind::ImportTemplate => (Scope::ImportTemplatesRead, Scope::ImportTemplatesWrite, Scope::ImportTemplatesWrite),
        Kind::WebhookEndpoint => (Scope::WebhooksRead, Scope::WebhooksWrite, Scope::WebhooksDelete),
    }
}

/// The read scope of `kind` (listing applied objects shows only kinds the
/// key may read).
pub fn read_scope(kind: Kind) -> Scope {
    scopes(kind).0
}

/// 403 naming the first scope the key lacks for this apply.
pub fn authorise(principal: &Principal, objects: &[Object], pruned: &[Applied], dry_run: bool) -> Result<(), Error> {
    let mut needed = Vec::new();
    for kind in objects.iter().map(|o| o.kind).chain(pruned.iter().map(|r| r.kind)) {
        let (read, write, _) = scopes(kind);
        needed.push(read);
        if !dry_run {
            needed.push(write);
        }
    }
    if !dry_run {
        needed.extend(pruned.iter().map(|r| scopes(r.kind).2));
    }
    match needed.into_iter().find(|s| !principal.scopes.grants(*s)) {
        Some(missing) => Err(missing.missing().into()),
        None => Ok(()),
    }
}
