//! Applying a Playzone: the create body of `POST /api/playzones` without
//! `name` (that is `metadata.name`). Dynamic services of Playspecs in the
//! same set name it with `playzoneRef`.
//!
//! The access token (`credentials`, from `valueFrom`) is kept when the
//! spec leaves it out, like a Playroom's key; `default_branch` left out
//! follows the remote's default branch. A created or changed Playzone is
//! synced by its loop (woken after the commit).
//!
//! `repositoryRef: NAME` instead of `scm_url` names a Repository of the
//! set (or of an earlier apply): the Playzone is attached to it, as `POST
//! /api/playzones/attach` does, and reads it through its host with no
//! token (so `private` and `credentials` do not apply). Only its
//! `default_branch` changes later; a Playzone never moves to another
//! repository.

use crate::Error;
use play_model::apply::Action;
use play_model::playzone::model::Playzone;
use play_model::playzone::{Input, Stored};
use play_store::playzones;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Object;
use super::context::{Cx, Outcome, decide, found, rekeyed};
use crate::input::playzones::changes;
use play_model::json::parse_value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    scm_url: Option<String>,
    #[serde(rename = "repositoryRef")]
    repository_ref: Option<String>,
    default_branch: Option<String>,
    private: Option<bool>,
    credentials: Option<String>,
}

fn live(zone: &Playzone) -> Value {
    json!({
        "scm_url": zone.scm_url,
        "default_branch": if zone.default_branch_pinned { zone.default_branch.clone() } else { None },
        "private": zone.private,
        "has_credentials": zone.has_credentials,
    })
}

pub async fn apply(cx: &mut Cx<'_>, object: &Object) -> Result<Outcome, Error> {
    let spec: Spec = parse_value(&object.spec, &object.field("spec")).map_err(Error::Validation)?;
    let scm_url = match (spec.scm_url.clone(), spec.repository_ref.clone()) {
        (Some(url), None) => url,
        (None, Some(name)) => {
            return super::playzone_attached::apply(
                cx,
                object,
                &name,
                spec.default_branch,
                spec.private,
                spec.credentials,
            )
            .await;
        }
        (Some(_), Some(_)) => {
            return Err(Error::field(
                object.field("spec.repositoryRef"),
                "give either scm_url or repositoryRef, not both",
            ));
        }
        (None, None) => return Err(Error::field(object.field("spec.scm_url"), "is required (or repositoryRef)")),
    };
    let redacted = cx.redact(&object.spec, &[play_model::apply::path("credentials")]);
    let account = cx.account();
    let current = match cx.last(object).map(|row| row.object_id) {
        Some(id) => found(playzones::get(&mut *cx.conn, account, id).await)?,
        None => None,
    };
    let input = Input {
        name: Some(object.name.clone()),
        scm_url: Some(scm_url),
        default_branch: Some(spec.default_branch.clone()),
        private: Some(spec.private.unwrap_or(false)),
        credentials: spec.credentials.clone(),
        ssh_host_key: None,
    };
    if let Some(zone) = &current
        && play_store::playzone_access::repository_of_in(&mut *cx.conn, zone.id).await?.is_some()
    {
        let message = "this Playzone is attached to a repository (repositoryRef): it does not move to a URL; give it \
                       another name to make a Playzone on that URL";
        return Err(Error::field(object.field("spec.scm_url"), message));
    }
    let stored = current.as_ref().map(|z| Stored {
        private: z.private,
        has_token: z.has_credentials,
        attached: z.attached,
        scm_url: &z.scm_url,
    });
    let checked = changes(input, stored, cx.env.limits.repositories).map_err(|e| rekeyed(e, "playzone", object))?;
    let before = current.as_ref().map(live);
    let decision = decide(cx, object, &redacted, before.as_ref());
    let id = match (decision.action, &current) {
        (Action::Unchanged, Some(z)) => z.id,
        (Action::Configured, Some(z)) => {
            playzones::update(&mut *cx.conn, cx.env.secrets, cx.principal.acting(), z.id, checked)
                .await
                .map_err(|e| rekeyed(e, "playzone", object))?
                .id
        }
        _ => {
            let quotas = &cx.env.limits.quotas;
            playzones::create(&mut *cx.conn, Some(cx.env.secrets), cx.principal.acting(), checked, false, quotas)
                .await
                .map_err(|e| rekeyed(e, "playzone", object))?
                .id
        }
    };
    if decision.action != Action::Unchanged {
        let zone = playzones::get(&mut *cx.conn, account, id).await?;
        cx.record(object, redacted, live(&zone), id, None).await?;
    }
    Ok(Outcome::of(id, decision, None))
}
