//! Creating Playgrounds: the transactions behind `POST /api/playgrounds`,
//! `POST /api/launch` and `POST /api/import_templates/{id}/launch`.
//!
//! A create records one checked [`NewPlayground`] (status `in_progress`,
//! step `queued`) after the account's quota check, in the caller's
//! transaction or its own. A launch records a Playspec and, optionally, a
//! Playground that runs it, in one transaction, so a launch that fails
//! (a quota, a name taken) leaves nothing behind.
//!
//! Owns the order of those writes and the quota checks; the rows are
//! written by `crate::store` and the requests are checked before they get
//! here.

use super::model::{NewPlayground, Playground};
use crate::Result;
use crate::store::events::Actor;
use crate::store::playspecs::{self, Playspec, PlayspecFields};
use crate::store::quotas::{self, QuotaLimits, Resource};
use crate::store::{Backend, Conn, Store, playgrounds, templates};

/// Records a checked Playground inside the caller's transaction, after the
/// account's Playground quota.
pub async fn create_in(
    conn: &mut Conn,
    backend: Backend,
    account_id: i64,
    new: &NewPlayground,
    limits: &QuotaLimits,
    actor: Actor,
) -> Result<Playground> {
    quotas::check(conn, backend, account_id, Resource::Playgrounds, limits).await?;
    playgrounds::insert_in(conn, account_id, new, actor).await
}

/// [`create_in`] in a transaction of its own.
pub async fn create(
    store: &Store,
    account_id: i64,
    new: &NewPlayground,
    limits: &QuotaLimits,
    actor: Actor,
) -> Result<Playground> {
    let mut tx = store.write().await?;
    let playground = create_in(&mut tx, store.backend(), account_id, new, limits, actor).await?;
    tx.commit().await?;
    Ok(playground)
}

/// The name of a launched Playspec.
#[derive(Clone, Debug)]
pub enum LaunchName {
    /// As the request gave it (trimmed).
    Given(String),
    /// None given: the template's name and a random suffix not yet taken
    /// in the account, chosen inside the transaction.
    FromTemplate(String),
}

/// The Playground a launch records beside its Playspec (named like it,
/// with no per-service settings).
#[derive(Clone, Copy, Debug)]
pub struct LaunchedPlayground {
    pub playroom_id: i64,
    pub job_mode: bool,
    pub ttl: chrono::Duration,
}

/// A checked launch: the Playspec's fields (but its name) and, optionally,
/// the Playground that runs it.
#[derive(Clone, Debug)]
pub struct Launch {
    pub name: LaunchName,
    pub playspec: PlayspecFields,
    pub playground: Option<LaunchedPlayground>,
}

/// Records a launch in one transaction: the Playspec (quota, unique name),
/// then the Playground on the Playroom the caller checked the Compose
/// against.
pub async fn record_launch(
    store: &Store,
    account_id: i64,
    launch: Launch,
    limits: &QuotaLimits,
    actor: Actor,
) -> Result<(Playspec, Option<Playground>)> {
    let Launch { name, mut playspec, playground } = launch;
    let mut tx = store.write().await?;
    playspec.name = Some(match name {
        LaunchName::Given(name) => name,
        LaunchName::FromTemplate(template) => {
            templates::unused_playspec_name_in(&mut tx, account_id, &template).await?
        }
    });
    let playspec = playspecs::create_in(&mut tx, store.backend(), account_id, playspec, limits, actor).await?;
    let playground = match playground {
        Some(launched) => {
            let new = NewPlayground {
                name: playspec.name.clone(),
                playspec_id: playspec.id,
                playroom_id: launched.playroom_id,
                job_mode: launched.job_mode,
                watched_services: Vec::new(),
                env_overrides: Default::default(),
                service_subdomains: Default::default(),
                service_settings: Default::default(),
                ttl: launched.ttl,
            };
            Some(create_in(&mut tx, store.backend(), account_id, &new, limits, actor).await?)
        }
        None => None,
    };
    tx.commit().await?;
    Ok((playspec, playground))
}
