//! Where a Playground's routed services are opened: `urls` (service -> URL)
//! in the detail view, the list and the launch responses, and `routes`
//! (whether the edge serves each now, and why not) in the detail.
//!
//! - The detail view and launch compute the routes from the desired state
//!   (`play_model::playground::desired_for`, on the CPU pool), so a route
//!   shows as soon as it is asked for, with `live: false` until the edge
//!   serves it; the edge's decisions (`store::edges`) say whether it does.
//! - The list reads only the edge's stored decisions, one query per
//!   Playroom: no Compose is parsed per item, and a route is listed only
//!   while the edge serves it.
//! - Only a Playground whose desired state is `running` has routes: one
//!   being destroyed (or a finished job) has `{}` and `[]`, like one whose
//!   desired state cannot be computed.

use std::collections::{BTreeMap, BTreeSet};

use play_model::edge::hosts;
use play_model::edge::serving::{self, Decided};
use play_model::model::playroom::Playroom;
use play_model::playground::{Computed, DesiredState, Playground};
use play_model::routing::Route;
use play_store::edges;
use play_store::playrooms;
use serde::Serialize;
use utoipa::ToSchema;

use super::playground_views::load_for;
use crate::error::ApiResult;
use crate::route_cache::RouteKey;
use crate::state::AppState;

/// Service name -> URL.
pub type Urls = BTreeMap<String, String>;

/// A routed service and whether the edge serves it.
#[derive(Debug, Serialize, ToSchema)]
pub struct RouteView {
    pub service: String,
    pub url: String,
    /// The host the route answers for.
    pub host: String,
    /// Whether the edge serves the route under this host now.
    pub live: bool,
    /// Another Playground on the Playroom holds this host (it claimed it
    /// first): this route is held back.
    pub held_by_playground_id: Option<i64>,
    /// Why the route is not served (not running yet, the host held by
    /// another Playground, the edge not there yet or failing); `null` when
    /// it is.
    pub reason: Option<String>,
}

/// The routes the desired state of `playground` (on `playroom`) asks
/// for, by service; none when it does not run or cannot be computed.
pub async fn desired_routes(
    state: &AppState,
    playground: &Playground,
    playroom: Playroom,
) -> play_core::Result<BTreeMap<String, Route>> {
    if playground.desired_state != DesiredState::Running {
        return Ok(BTreeMap::new());
    }
    let key = RouteKey {
        playground: playground.id,
        generation: playground.generation,
        playspec: playground.playspec_id,
        playroom: playroom.id,
        playroom_routing: RouteKey::playroom_routing(&playroom),
    };
    if let Some(routes) = state.routes.get(&key) {
        return Ok((*routes).clone());
    }
    let loaded = match load_for(state, playground.clone(), playroom).await {
        Ok(loaded) => loaded,
        // The Playspec is gone: nothing can be computed, nothing is routed.
        Err(play_core::Error::NotFound(_)) => return Ok(BTreeMap::new()),
        Err(e) => return Err(e),
    };
    let Ok(Computed { desired, .. }) = loaded.desired(state).await? else { return Ok(BTreeMap::new()) };
    let routes = desired.routes();
    state.routes.insert(key, std::sync::Arc::new(routes.clone()));
    Ok(routes)
}

/// The URLs the desired state of `playground` asks for (launch).
pub async fn urls(state: &AppState, playground: &Playground) -> ApiResult<Urls> {
    let playroom = playrooms::get(&state.store, playground.account_id, playground.playroom_id).await?;
    let routes = desired_routes(state, playground, playroom).await?;
    Ok(routes.into_iter().map(|(service, route)| (service, route.url)).collect())
}

/// The detail view's `urls` and `routes`.
pub async fn urls_and_routes(state: &AppState, playground: &Playground) -> play_core::Result<(Urls, Vec<RouteView>)> {
    let playroom = playrooms::get(&state.store, playground.account_id, playground.playroom_id).await?;
    urls_and_routes_on(state, playground, playroom).await
}

/// [`urls_and_routes`] of `playground` on `playroom`, its Playroom as just
/// read.
pub async fn urls_and_routes_on(
    state: &AppState,
    playground: &Playground,
    playroom: Playroom,
) -> play_core::Result<(Urls, Vec<RouteView>)> {
    let routes = desired_routes(state, playground, playroom).await?;
    if routes.is_empty() {
        return Ok((Urls::new(), Vec::new()));
    }
    let decided = edges::routes_of(&state.store, playground.id).await?;
    let edge_error = edges::status(&state.store, playground.playroom_id).await?.and_then(|s| s.error);
    let running: BTreeSet<&str> = playground.services.iter().filter(|s| s.running).map(|s| s.name.as_str()).collect();
    let views = routes
        .iter()
        .map(|(service, route)| {
            let row = decided.get(service).map(|r| Decided {
                host: &r.claim.host,
                live: r.live,
                conflict_with: r.conflict_with,
            });
            let s = serving::serving(&route.fqdn, running.contains(service.as_str()), row, edge_error.as_deref());
            RouteView {
                service: service.clone(),
                url: route.url.clone(),
                host: route.fqdn.clone(),
                live: s.live,
                held_by_playground_id: s.held_by,
                reason: s.reason,
            }
        })
        .collect();
    Ok((routes.into_iter().map(|(service, route)| (service, route.url)).collect(), views))
}

/// The list's `urls`, by Playground id: the routes the edge serves now, from
/// its stored decisions (one query per Playroom of the listed Playgrounds).
pub async fn live_urls(
    state: &AppState,
    account_id: i64,
    playgrounds: &[Playground],
) -> ApiResult<BTreeMap<i64, Urls>> {
    let listed: BTreeSet<i64> =
        playgrounds.iter().filter(|p| p.desired_state == DesiredState::Running).map(|p| p.id).collect();
    let room_ids: BTreeSet<i64> = playgrounds.iter().map(|p| p.playroom_id).collect();
    let mut out: BTreeMap<i64, Urls> = BTreeMap::new();
    if listed.is_empty() {
        return Ok(out);
    }
    let rooms = playrooms::list(&state.store, account_id).await?;
    let mut conn = state.store.pool().acquire().await.map_err(play_core::Error::from)?;
    for room in rooms.iter().filter(|r| room_ids.contains(&r.id)) {
        for row in edges::routes_on(&mut conn, room.id).await? {
            if !row.live || !listed.contains(&row.claim.playground_id) {
                continue;
            }
            let url = hosts::url_for_host(&row.claim.host, &room.domains, room.acme_email.as_deref(), &room.edge);
            out.entry(row.claim.playground_id).or_default().insert(row.claim.service, url);
        }
    }
    Ok(out)
}
