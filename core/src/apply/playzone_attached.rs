//! Applying a Playzone with `repositoryRef` (see [`super::playzone`]): a
//! Playzone attached to a Repository, reached through its host.

use crate::Error;
use play_model::apply::{Action, Kind};
use play_model::playzone::Changes;
use play_model::playzone::model::Playzone;
use play_store::{playzone_access, playzones, repositories};
use serde_json::{Value, json};

use super::Object;
use super::context::{Cx, Outcome, decide, found, rekeyed};

fn live(zone: &Playzone, repository: &str) -> Value {
    json!({
        "repository": repository,
        "default_branch": if zone.default_branch_pinned { zone.default_branch.clone() } else { None },
    })
}

pub async fn apply(
    cx: &mut Cx<'_>,
    object: &Object,
    name: &str,
    default_branch: Option<String>,
    private: Option<bool>,
    credentials: Option<String>,
) -> Result<Outcome, Error> {
    let mut errors = play_model::FieldErrors::new();
    for (field, given) in [("private", private.is_some()), ("credentials", credentials.is_some())] {
        if given {
            let message = "comes from the repository with repositoryRef (it is read through its host, with no token)";
            play_model::error::push_field_error(&mut errors, object.field(&format!("spec.{field}")), message);
        }
    }
    if let Some(Err(message)) = default_branch.as_deref().map(play_model::playzone::branch_name) {
        play_model::error::push_field_error(&mut errors, object.field("spec.default_branch"), message);
    }
    if !errors.is_empty() {
        return Err(Error::Validation(errors));
    }
    let account = cx.account();
    let id = cx.reference(Kind::Repository, name, object.field("spec.repositoryRef")).await?;
    let repository = repositories::get_in(&mut *cx.conn, account, id).await?;
    let full = repository.full_name.to_string();
    let redacted = object.spec.clone();
    let current = match cx.last(object).map(|row| row.object_id) {
        Some(zone) => found(playzones::get(&mut *cx.conn, account, zone).await)?,
        None => None,
    };
    if let Some(zone) = &current
        && playzone_access::repository_of_in(&mut *cx.conn, zone.id).await? != Some(repository.id)
    {
        let message = format!(
            "this Playzone reads {}: it does not move to repository {full}; give it another name to make a \
             Playzone on that repository",
            zone.scm_url
        );
        return Err(Error::field(object.field("spec.repositoryRef"), message));
    }
    let before = current.as_ref().map(|z| live(z, &full));
    let decision = decide(cx, object, &redacted, before.as_ref());
    let pinned = || Changes {
        name: None,
        scm_url: None,
        default_branch: Some(default_branch.clone()),
        private: None,
        credentials: None,
        ssh_host_key: None,
    };
    let by = cx.principal.acting();
    let zone = match (decision.action, current) {
        (Action::Unchanged, Some(zone)) => return Ok(Outcome::of(zone.id, decision, None)),
        (Action::Configured, Some(zone)) => playzones::update(&mut *cx.conn, cx.env.secrets, by, zone.id, pinned())
            .await
            .map_err(|e| rekeyed(e, "playzone", object))?,
        _ => {
            let Some(urls) = cx.env.limits.hosts.urls(repository.provider, &repository.full_name) else {
                return Err(crate::Error::ScmAppRequired(format!(
                    "repository {full} is on {}, which this play no longer serves: ask the operator",
                    repository.provider
                )));
            };
            let limits = &cx.env.limits.quotas;
            let zone = playzone_access::attach_in(
                cx.conn,
                by,
                &repository,
                play_model::playzone::Attach { name: &object.name, scm_url: &urls.clone_url, default_branch: None },
                limits,
            )
            .await
            .map_err(|e| match e {
                crate::Error::Conflict(_) => Error::field(
                    object.field("spec.repositoryRef"),
                    format!(
                        "repository {full} is attached to another Playzone of this account already: name that \
                             Playzone in the manifest, or delete it"
                    ),
                ),
                other => rekeyed(other, "playzone", object),
            })?;
            match default_branch {
                Some(_) => playzones::update(&mut *cx.conn, cx.env.secrets, by, zone.id, pinned())
                    .await
                    .map_err(|e| rekeyed(e, "playzone", object))?,
                None => zone,
            }
        }
    };
    cx.record(object, redacted, live(&zone, &full), zone.id, None).await?;
    Ok(Outcome::of(zone.id, decision, None))
}
