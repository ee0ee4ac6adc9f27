//! The routes a Playroom's edge should serve: every routed service that is
//! running, of every Playground on the Playroom whose desired state is
//! `running`, computed by the one desired-state builder
//! (`play_core::playground::desired_for`) the Playground reconciler and
//! the API's views use, and read with `Desired::routes`.
//!
//! Each route's upstream is the container the Playground reconciler says
//! serves the service (`ServiceStatus::container`), else the service's
//! canonical container name.
//!
//! A Playground whose desired objects cannot be computed (its Playspec
//! gone, a Compose the Playroom's policy refuses) contributes no route: it
//! is failed by its own reconciler, and must not hold the edge back for
//! the others.

use std::collections::BTreeSet;

use play_core::model::playroom::Playroom;
use play_core::playground::{self, DesiredState, PlaygroundStatus, Power};
use play_core::routing::Route;
use play_core::store::{Store, playground_status, playspec_files, playspecs, sweep};

use crate::Result;

/// A route and whose it is.
#[derive(Clone, Debug)]
pub struct Wanted {
    pub playground_id: i64,
    pub service: String,
    pub route: Route,
    /// Its Playground sleeps (or is waking): the edge's waking route
    /// serves it (`play_core::edge::waking`).
    pub sleeping: bool,
    /// Its Playground may sleep: its requests count as activity.
    pub watched: bool,
}

/// See the [module documentation](self).
/// `sleep_after` is the installation's default (`EdgeConfig::sleep_after`).
pub async fn wanted(store: &Store, room: &Playroom, sleep_after: Option<std::time::Duration>) -> Result<Vec<Wanted>> {
    let mut out = Vec::new();
    for id in sweep::playgrounds_in(store, room.id).await? {
        let Some(p) = playground_status::load(store, id).await? else { continue };
        if p.desired_state != DesiredState::Running || p.playroom_id != room.id {
            continue;
        }
        let running: BTreeSet<&str> = p.services.iter().filter(|s| s.running).map(|s| s.name.as_str()).collect();
        // Asleep, or woken but not yet running again: every route is the
        // waking one, whatever runs.
        let sleeping = p.sleep.power == Power::Asleep || p.status == PlaygroundStatus::Sleeping;
        let watched = sleeping || p.sleep.after(p.job_mode, sleep_after).is_some();
        if running.is_empty() && !sleeping {
            continue;
        }
        let Some(spec_id) = p.playspec_id else { continue };
        let spec = match playspecs::get(store, p.account_id, spec_id).await {
            Ok(spec) => spec,
            Err(play_core::Error::NotFound(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        // The mounted files decide whether relative sources resolve, so
        // whether the Compose can run at all.
        let files = playspec_files::list_files(store, spec.id).await?;
        let computed = match playground::desired_for(&p, Some(&spec), &files, room, &Default::default()) {
            Ok(computed) => computed,
            Err(error) => {
                tracing::debug!(playground = id, %error, "no routes: its desired objects cannot be computed");
                continue;
            }
        };
        for (service, mut route) in computed.desired.routes() {
            if !sleeping && !running.contains(service.as_str()) {
                continue;
            }
            // The container that serves it: during a zero-downtime rollout
            // the Playground reconciler names the old one until the new one
            // is healthy.
            if let Some(serving) = p.services.iter().find(|s| s.name == service).and_then(|s| s.container.clone()) {
                route.upstream = serving;
            }
            out.push(Wanted { playground_id: p.id, service, route, sleeping, watched });
        }
    }
    Ok(out)
}
