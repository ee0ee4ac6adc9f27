//! `--prune`: deleting what an apply set created and no longer lists, and
//! the Playspec revisions no Playground holds any more.
//!
//! Pruning runs in reverse reference order (Playgrounds first). A pruned
//! Playground is destroyed the way `DELETE /api/playgrounds/{id}` does it
//! (the reconciler tears it down); its Playspec revision stays locked
//! until that is done, so a pruned or replaced revision is *retired* and
//! deleted by the first apply of the account that finds it unused.

use crate::Error;
use play_model::apply::Action;
use play_model::apply::model::Applied;
use play_model::playground::DesiredState;
use play_store::applied;
use play_store::{playrooms, playspecs, playzones, repositories, templates, webhooks};

use super::ApplyResult;
use super::context::Cx;

/// The rows to prune, dependants first.
pub fn order(mut rows: Vec<Applied>) -> Vec<Applied> {
    rows.sort_by(|a, b| b.kind.cmp(&a.kind).then_with(|| a.name.cmp(&b.name)));
    rows
}

fn gone(error: &crate::Error) -> bool {
    matches!(error, crate::Error::NotFound(_))
}

/// Deletes the object of `row` (if it still exists) and forgets the row.
pub async fn prune(cx: &mut Cx<'_>, row: &Applied) -> Result<ApplyResult, Error> {
    use play_model::apply::Kind;
    let account = cx.account();
    let actor = cx.principal.actor();
    let named = |e: crate::Error| {
        let message = format!("cannot prune {} {:?}: {e}", row.kind, row.name);
        match e {
            crate::Error::Conflict(_) => crate::Error::Conflict(message),
            crate::Error::Locked(_) => crate::Error::Locked(message),
            other => other,
        }
    };
    match row.kind {
        Kind::Playground => match play_store::playgrounds::get(&mut *cx.conn, account, row.object_id).await {
            Ok(p) if p.desired_state != DesiredState::Destroyed => {
                play_store::playgrounds::request_destroy_in(cx.conn, account, p.id, actor).await?;
            }
            Ok(_) => {}
            Err(e) if gone(&e) => {}
            Err(e) => return Err(e),
        },
        Kind::Playspec => applied::retire_in(cx.conn, account, row.object_id).await?,
        Kind::WebhookEndpoint => match webhooks::delete(&mut *cx.conn, account, row.object_id).await {
            Err(e) if !gone(&e) => return Err(e),
            _ => {}
        },
        Kind::Playroom => match playrooms::delete(&mut *cx.conn, account, row.object_id, actor).await {
            Ok(()) => {}
            Err(e) if gone(&e) => {}
            Err(e) => return Err(named(e)),
        },
        Kind::Playzone => {
            // Revisions this apply retired may still name it: gone first.
            collect_revisions(cx).await?;
            match playzones::delete(&mut *cx.conn, account, row.object_id, actor).await {
                Err(e) if !gone(&e) => return Err(named(e)),
                _ => {}
            }
        }
        Kind::Repository => match repositories::get_in(&mut *cx.conn, account, row.object_id).await {
            Ok(repository) => {
                let host = cx.env.limits.hosts.of_repository(cx.env.store, &repository).await?;
                repositories::delete_in(cx.conn, &repository, actor).await?;
                cx.repos.remove_after_commit(host, repository);
            }
            Err(e) if gone(&e) => {}
            Err(e) => return Err(e),
        },
        Kind::ImportTemplate => match templates::delete(&mut *cx.conn, account, row.object_id, actor).await {
            Ok(_) => {}
            Err(e) if !gone(&e) => return Err(e),
            Err(_) => {}
        },
    }
    applied::delete_in(cx.conn, row).await?;
    Ok(ApplyResult {
        kind: row.kind.as_str().to_owned(),
        name: row.name.clone(),
        id: Some(row.object_id),
        action: Action::Pruned,
        diff: play_model::apply::diff("spec", Some(&row.spec), None),
        drift: Vec::new(),
        revision: row.revision.clone(),
    })
}

/// Deletes the account's retired Playspec revisions that no Playground
/// holds; the others wait for a later apply.
pub async fn collect_revisions(cx: &mut Cx<'_>) -> Result<(), Error> {
    let account = cx.account();
    for id in applied::retired_in(cx.conn, account).await? {
        match playspecs::get(&mut *cx.conn, account, id).await {
            Ok(p) if playspecs::holders(&mut *cx.conn, p.id).await? > 0 => continue,
            Ok(p) => playspecs::delete(&mut *cx.conn, account, p.id, cx.principal.actor()).await?,
            Err(e) if gone(&e) => {}
            Err(e) => return Err(e),
        }
        applied::forget_retired_in(cx.conn, id).await?;
    }
    Ok(())
}
