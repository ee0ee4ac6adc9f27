//! The desired routes of running Playgrounds, cached per replica.
//!
//! Computing them loads the Playspec and renders its Compose file (parse,
//! interpolate, normalise) on the CPU pool: most of the detail view's cost
//! (BENCHMARKS.md, "API throughput"). The answer depends on nothing that
//! can change without changing the key:
//! - the Playground's settings (subdomains, overrides): every change bumps
//!   its `generation`;
//! - its Playspec: locked, hence unchanged, while the Playground is not
//!   destroyed, and only a running Playground has routes;
//! - what `play_model::playground::desired_for` reads of its Playroom
//!   (trust, which decides the policy; address, domains, ACME email and
//!   edge settings, which make the URLs): the key holds them
//!   ([`RouteKey::playroom_routing`], from
//!   `play_model::playground::playroom_inputs`), so a change is a miss
//!   whatever the clock says.
//!
//! Only computed answers are kept (a failure is computed again next
//! time). The map is bounded: when full it is emptied, so memory stays
//! bounded and the next requests refill it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use play_model::model::playroom::Playroom;
use play_model::routing::Route;

/// Most cached Playgrounds per replica.
pub const CAPACITY: usize = 10_000;

/// What the routes of a running Playground depend on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RouteKey {
    pub playground: i64,
    pub generation: i64,
    pub playspec: Option<i64>,
    pub playroom: i64,
    pub playroom_routing: String,
}

impl RouteKey {
    /// What `desired_for` reads of a Playroom, as one comparable text
    /// (`play_model::playground::playroom_inputs`, kept beside it).
    pub fn playroom_routing(room: &Playroom) -> String {
        play_model::playground::playroom_inputs(room)
    }
}

/// Service -> route.
pub type Routes = Arc<BTreeMap<String, Route>>;

#[derive(Debug, Default)]
pub struct RouteCache {
    entries: Mutex<HashMap<RouteKey, Routes>>,
}

impl RouteCache {
    pub fn get(&self, key: &RouteKey) -> Option<Routes> {
        self.entries.lock().ok()?.get(key).cloned()
    }

    pub fn insert(&self, key: RouteKey, routes: Routes) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= CAPACITY {
                entries.clear();
            }
            entries.insert(key, routes);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(playground: i64, generation: i64) -> RouteKey {
        RouteKey { playground, generation, playspec: Some(1), playroom: 1, playroom_routing: "ssh|h|[]".into() }
    }

    #[test]
    fn a_new_generation_misses_and_the_map_stays_bounded() {
        let cache = RouteCache::default();
        let k = key(1, 1);
        cache.insert(k.clone(), Arc::new(BTreeMap::new()));
        assert!(cache.get(&k).is_some());
        assert!(cache.get(&RouteKey { generation: 2, ..k.clone() }).is_none());
        for i in 0..(CAPACITY as i64 + 5) {
            cache.insert(key(i + 10, 1), Arc::new(BTreeMap::new()));
        }
        assert!(cache.len() <= CAPACITY);
    }
}
