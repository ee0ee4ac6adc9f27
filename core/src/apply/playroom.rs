//! Applying a Playroom: its spec is the create body of `POST
//! /api/playrooms` without `name` (that is `metadata.name`).
//!
//! A spec lists the Playroom whole: on `configured` every field it leaves
//! out goes back to its default, except what play learns or the operator
//! sets outside manifests: the pinned host key (kept unless the spec gives
//! one), trust (kept unless the spec says), and a key pair made with
//! `generate_ssh_key` (kept unless the spec gives `ssh_private_key`).
//!
//! `launchDefault` (not a field of the API's Playroom) makes the Playroom
//! the account's launch default (`/api/launch_defaults`) when `true`, and
//! stops it being so when `false`; left out, apply does not touch the
//! default. Naming it needs `playgrounds:write`, as the route does.

use crate::Error;
use play_model::apply::Action;
use play_model::model::playroom::Playroom;
use play_model::scopes::Scope;
use play_store::{launch_defaults, playrooms};
use serde_json::{Value, json};

use super::Object;
use super::context::{Cx, Outcome, decide, found, rekeyed};
use crate::input::playrooms::{PlayroomInput, authorise_trust, fields};
use play_model::json::parse_value;

/// The fields apply sets, as they are on the Playroom: a change made
/// outside apply shows here. `default` is the account's launch default.
fn live(room: &Playroom, spec: &Value, default: Option<i64>) -> Value {
    let mut view = json!({
        "connection": room.connection.as_str(),
        "host": room.host,
        "port": room.port,
        "user": room.user,
        "docker_socket": room.docker_socket,
        "domains": room.domains,
        "acme_email": room.acme_email,
        "tutorial": room.tutorial,
        "edge": serde_json::to_value(room.edge).unwrap_or(Value::Null),
    });
    if spec.get("trusted").is_some() {
        view["trusted"] = json!(room.trusted);
    }
    if spec.get("ssh_private_key").is_some() {
        view["ssh_public_key"] = json!(room.ssh_public_key);
    }
    if spec.get("host_key").is_some() {
        view["host_key"] = json!(room.host_key);
    }
    if spec.get(LAUNCH_DEFAULT).is_some() {
        view[LAUNCH_DEFAULT] = json!(default == Some(room.id));
    }
    view
}

const LAUNCH_DEFAULT: &str = "launchDefault";

/// The spec's `launchDefault`, checked: a boolean, and `true` only with
/// `playgrounds:write` (the settings that take it launch Playgrounds).
fn launch_default(cx: &Cx<'_>, object: &Object) -> Result<Option<bool>, Error> {
    let Some(value) = object.spec.get(LAUNCH_DEFAULT) else { return Ok(None) };
    let field = object.field(&format!("spec.{LAUNCH_DEFAULT}"));
    let Some(wanted) = value.as_bool() else { return Err(Error::field(field, "must be true or false")) };
    if wanted && !cx.principal.scopes.grants(Scope::PlaygroundsWrite) {
        let mut details = play_model::FieldErrors::new();
        let why = format!("the account's launch default needs the scope {}", Scope::PlaygroundsWrite);
        details.insert(field, vec![why.clone()]);
        return Err(Error::Forbidden { message: why, details });
    }
    Ok(Some(wanted))
}

/// Makes Playroom `id` the account's launch default, or stops it being
/// so, as `wanted` says; the schedules and triggers that take it are
/// woken once the apply committed.
async fn set_launch_default(cx: &mut Cx<'_>, id: i64, wanted: bool) -> Result<(), Error> {
    let account = cx.account();
    let now = launch_defaults::get_in(&mut *cx.conn, account).await?;
    let playroom_id = match (wanted, now.playroom_id == Some(id)) {
        (true, false) => Some(id),
        (false, true) => None,
        _ => return Ok(()),
    };
    let may_read_playzones = cx.principal.scopes.grants(Scope::PlayzonesRead);
    let defaults = play_model::model::schedule::LaunchDefaults { playroom_id, may_read_playzones };
    launch_defaults::set_in(&mut *cx.conn, account, defaults).await?;
    Ok(())
}

pub async fn apply(cx: &mut Cx<'_>, object: &Object) -> Result<Outcome, Error> {
    if object.spec.get("name").is_some() {
        return Err(Error::field(object.field("spec.name"), "the name is metadata.name"));
    }
    let wanted_default = launch_default(cx, object)?;
    let mut fields_only = object.spec.clone();
    if let Some(spec) = fields_only.as_object_mut() {
        spec.remove(LAUNCH_DEFAULT);
    }
    let mut input: PlayroomInput = parse_value(&fields_only, &object.field("spec")).map_err(Error::Validation)?;
    input.name = Some(object.name.clone());
    if input.acme_email.is_none() {
        input.acme_email = Some(None);
    }
    authorise_trust(&cx.principal.scopes, &input)?;
    let allow_local = cx.env.allow_local_playrooms;
    let mut fields = fields(input, true, allow_local).map_err(|e| rekeyed(e, "playroom", object))?;
    fields.caller_may_trust = cx.principal.scopes.grants(Scope::PlayroomsTrust);
    let spec = cx.redact(&object.spec, &[play_model::apply::path("ssh_private_key")]);
    let account = cx.account();
    let current = match cx.last(object).map(|row| row.object_id) {
        Some(id) => found(playrooms::get(&mut *cx.conn, account, id).await)?,
        None => None,
    };
    let default = launch_defaults::get_in(&mut *cx.conn, account).await?.playroom_id;
    let before = current.as_ref().map(|room| live(room, &object.spec, default));
    let decision = decide(cx, object, &spec, before.as_ref());
    let id = match (decision.action, &current) {
        (Action::Unchanged, Some(room)) => room.id,
        (Action::Configured, Some(room)) => {
            let updated = playrooms::update(&mut *cx.conn, cx.env.secrets, cx.principal.acting(), room.id, fields)
                .await
                .map_err(|e| rekeyed(e, "playroom", object))?;
            updated.id
        }
        _ => {
            let created =
                playrooms::create(&mut *cx.conn, cx.env.secrets, cx.principal.acting(), fields, cx.env.limits.quotas)
                    .await
                    .map_err(|e| rekeyed(e, "playroom", object))?;
            created.id
        }
    };
    if decision.action != Action::Unchanged {
        if let Some(wanted) = wanted_default {
            set_launch_default(cx, id, wanted).await?;
        }
        let default = launch_defaults::get_in(&mut *cx.conn, account).await?.playroom_id;
        let room = playrooms::get(&mut *cx.conn, account, id).await?;
        cx.record(object, spec, live(&room, &object.spec, default), id, None).await?;
    }
    Ok(Outcome::of(id, decision, None))
}
