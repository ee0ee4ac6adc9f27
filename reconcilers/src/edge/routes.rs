//! The routes a Playroom's edge should serve: every routed service that is
//! running, of every Playground on the Playroom whose desired state is
//! `running`, computed by the one desired-state builder
//! (`play_model::playground::desired_for`) the Playground reconciler and
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
//!
//! The routes computed for a Playground are kept ([`RouteCache`]) by what
//! they are computed from: its generation (every change of its settings or
//! Playspec bumps it), its Playspec's revision (`updated_at`), its mounted
//! files and its Playroom's revision. The edge looks at every Playground of
//! its Playroom every check interval; before, each look parsed and
//! validated its Compose file again (issue #33). It reads them in three
//! queries per Playroom (its running Playgrounds, their Playspecs, their
//! mounted files), not several per Playground.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use play_model::model::playspec::{MountedFile, Playspec};
use play_model::playground::Playground;
use play_model::time::Timestamp;

use play_model::model::playroom::Playroom;
use play_model::playground::{self, PlaygroundStatus, Power};
use play_model::routing::Route;
use play_store::{Store, playgrounds, playspec_files, playspecs};

use crate::Result;

/// A route and whose it is.
#[derive(Clone, Debug)]
pub struct Wanted {
    pub playground_id: i64,
    pub service: String,
    pub route: Route,
    /// Its Playground sleeps (or is waking): the edge's waking route
    /// serves it (`play_model::edge::waking`).
    pub sleeping: bool,
    /// Its Playground may sleep: its requests count as activity.
    pub watched: bool,
    /// When its Playground was last asked to sleep or woken: a wake line
    /// written before is stale (a log read again must not wake it).
    pub power_changed_at: Option<Timestamp>,
}

/// The most Playgrounds whose routes are kept; full, the cache starts
/// over (a cache, not a store).
pub const MAX_CACHED: usize = 50_000;

/// What a Playground's routes are computed from (see the [module
/// documentation](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Inputs {
    generation: i64,
    playspec: (i64, Timestamp),
    files: Vec<(i64, String, Timestamp)>,
    playroom: (i64, Timestamp, bool),
}

impl Inputs {
    fn of(p: &Playground, spec: &Playspec, files: &[MountedFile], room: &Playroom) -> Self {
        Inputs {
            generation: p.generation,
            playspec: (spec.id, spec.updated_at),
            files: files.iter().map(|f| (f.id, f.sha256.clone(), f.updated_at)).collect(),
            playroom: (room.id, room.updated_at, room.trusted),
        }
    }
}

/// A Playground's routable services and their routes, or `None` when its
/// desired objects cannot be computed.
type Routes = Option<BTreeMap<String, Route>>;

/// The routes computed per Playground, by their [`Inputs`].
#[derive(Debug, Default)]
pub struct RouteCache {
    kept: Mutex<HashMap<i64, (Inputs, Routes)>>,
}

impl RouteCache {
    /// `p`'s routes: kept ones when their inputs are the same, else
    /// computed and kept.
    fn routes(&self, p: &Playground, spec: &Playspec, files: &[MountedFile], room: &Playroom) -> Routes {
        let inputs = Inputs::of(p, spec, files, room);
        if let Ok(kept) = self.kept.lock()
            && let Some((at, routes)) = kept.get(&p.id)
            && *at == inputs
        {
            return routes.clone();
        }
        let routes = match playground::desired_for(p, Some(spec), files, room, &Default::default()) {
            Ok(computed) => Some(computed.desired.routes()),
            Err(error) => {
                tracing::debug!(playground = p.id, %error, "no routes: its desired objects cannot be computed");
                None
            }
        };
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() >= MAX_CACHED && !kept.contains_key(&p.id) {
                kept.clear();
            }
            kept.insert(p.id, (inputs, routes.clone()));
        }
        routes
    }
}

/// See the [module documentation](self).
/// `life` says which Playgrounds may sleep (so whose requests are logged).
pub async fn wanted(
    store: &Store,
    cache: &RouteCache,
    room: &Playroom,
    life: &play_model::playground::LifePolicy,
) -> Result<Vec<Wanted>> {
    let mut out = Vec::new();
    // Three reads per Playroom, whatever its number of Playgrounds: the
    // routes themselves are computed again only when their inputs changed.
    let playgrounds = playgrounds::running_in(store, room.id).await?;
    if playgrounds.is_empty() {
        return Ok(out);
    }
    let specs: HashMap<i64, Playspec> =
        playspecs::of_running_in(store, room.id).await?.into_iter().map(|spec| (spec.id, spec)).collect();
    let mut files: HashMap<i64, Vec<MountedFile>> = HashMap::new();
    for (spec_id, file) in playspec_files::of_running_in(store, room.id).await? {
        files.entry(spec_id).or_default().push(file);
    }
    for p in playgrounds {
        let running: BTreeSet<&str> = p.services.iter().filter(|s| s.running).map(|s| s.name.as_str()).collect();
        // Asleep, or woken but not yet running again: every route is the
        // waking one, whatever runs.
        let sleeping = p.sleep.power == Power::Asleep || p.status == PlaygroundStatus::Sleeping;
        let watched = sleeping || life.sleep_after(&p).is_some();
        if running.is_empty() && !sleeping {
            continue;
        }
        let Some(spec) = p.playspec_id.and_then(|id| specs.get(&id)).filter(|spec| spec.account_id == p.account_id)
        else {
            continue;
        };
        // The mounted files decide whether relative sources resolve, so
        // whether the Compose can run at all.
        let files = files.get(&spec.id).map_or(&[][..], Vec::as_slice);
        let Some(routes) = cache.routes(&p, spec, files, room) else { continue };
        for (service, mut route) in routes {
            if !sleeping && !running.contains(service.as_str()) {
                continue;
            }
            // The container that serves it: during a zero-downtime rollout
            // the Playground reconciler names the old one until the new one
            // is healthy.
            if let Some(serving) = p.services.iter().find(|s| s.name == service).and_then(|s| s.container.clone()) {
                route.upstream = serving;
            }
            let power_changed_at = p.sleep.power_changed_at;
            out.push(Wanted { playground_id: p.id, service, route, sleeping, watched, power_changed_at });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {

    use super::*;
    use play_store::{accounts, playrooms};

    #[tokio::test]
    async fn routes_are_computed_again_only_when_their_inputs_change() {
        let db = play_store::testing::store().await;
        let store = &db.store;
        let (account, _) = accounts::create_account(store, "a").await.unwrap();
        let room_id = play_store::testing::insert_playroom(store, account.id, "box").await;
        let room = playrooms::get(store, account.id, room_id).await.unwrap();
        let now = play_model::time::now();
        let mut spec = Playspec {
            id: 1,
            account_id: account.id,
            name: "shop".into(),
            description: String::new(),
            // Not Compose: its desired objects cannot be computed.
            base_compose_yaml: "services: [".into(),
            services: serde_json::json!([]),
            persist_volumes: false,
            playzone_id: None,
            sleep_after: Default::default(),
            created_at: now,
            updated_at: now,
        };
        let mut p = play_model::testing::playground();
        p.playroom_id = room.id;
        let cache = RouteCache::default();
        assert_eq!(cache.routes(&p, &spec, &[], &room), None);
        // The same revision: the kept answer, even though the text moved
        // (a revision is never rewritten in place; this shows reuse).
        spec.base_compose_yaml = "services:\n  web:\n    image: x\n".into();
        assert_eq!(cache.routes(&p, &spec, &[], &room), None);
        // A new revision of the Playspec is computed again.
        spec.updated_at = now + chrono::Duration::seconds(1);
        assert_eq!(cache.routes(&p, &spec, &[], &room), Some(BTreeMap::new()));
        // So is a new generation of the Playground.
        spec.base_compose_yaml = "services: [".into();
        assert_eq!(cache.routes(&p, &spec, &[], &room), Some(BTreeMap::new()));
        p.generation += 1;
        assert_eq!(cache.routes(&p, &spec, &[], &room), None);
    }
}
