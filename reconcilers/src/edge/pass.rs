//! One pass over one Playroom's edge (see the [parent module](super) for
//! the order and the guarantees). Owns the order of a pass and its store
//! writes; the container is [`container`]'s, the admin API [`admin`]'s,
//! the routes [`routes`]'.

use std::time::Instant;

use bollard::Docker;
use play_model::edge::claims::{self, Decision};
use play_model::edge::model::PassOutcome;
use play_model::edge::waking::Sleeping;
use play_model::edge::{
    config as caddy,
    config::{Acme, EdgeConfig as ConfigInputs},
};
use play_model::host::HostTarget;
use play_model::model::playroom::Playroom;
use play_model::routing::Route;
use play_store::edges;
use play_store::fence::Fence;
use play_store::playrooms;
use play_store::sweep;
use serde_json::Value;

use super::admin::Admin;
use super::container::{self, EdgeSpec, Observed};
use super::{EdgeReconciler, activity, routes};
use crate::runtime::{Action, Ctx};
use crate::{Error, Result};

pub(super) async fn run(r: &EdgeReconciler, id: i64, ctx: &Ctx) -> Result<Action> {
    let fence = ctx.fence();
    let found = playrooms::target_any(&r.store, &r.secrets, id).await.map_err(|e| match e {
        play_core::Error::InvalidState(message) => Error::InvalidTarget(message),
        other => other.into(),
    });
    let (room, target) = match found {
        Ok(Some(pair)) => pair,
        // The row is gone: nothing reaches its host any more; only what
        // play recorded about its edge is cleared.
        Ok(None) => {
            edges::forget(&r.store, fence, id).await?.held()?;
            return Ok(Action::await_change());
        }
        Err(e) => {
            let account = sweep::playroom_account(&r.store, id).await?.unwrap_or_default();
            return fail(r, fence, account, id, e).await;
        }
    };
    let account = room.account_id;
    match converge(r, fence, &room, &target).await {
        Ok(action) => Ok(action),
        Err(e @ Error::LeaseLost) => Err(e),
        Err(e) => fail(r, fence, account, id, e).await,
    }
}

/// Records `error` as the Playroom's edge error (best effort) and returns it.
async fn fail(r: &EdgeReconciler, fence: Fence<'_>, account: i64, id: i64, error: Error) -> Result<Action> {
    if let Err(write) = edges::record_error(&r.store, fence, account, id, &error.to_string()).await {
        tracing::warn!(playroom = id, error = %write, "could not record the edge error");
    }
    Err(error)
}

async fn converge(r: &EdgeReconciler, fence: Fence<'_>, room: &Playroom, target: &HostTarget) -> Result<Action> {
    let installation = r.store.installation().await?;
    let spec = EdgeSpec::new(&installation, room.id, &room.edge, &r.config.image, &r.config.admin_dir);
    let docker = r.gateway.docker(target).await?;
    let observed = container::observe(&docker, &spec.name).await?;
    if room.deleted_at.is_some() {
        // A deleted Playroom leaves nothing of its edge behind: container
        // in any state, volumes (certificates, ACME keys), and the shared
        // network once unused. Its row waited for this and goes now.
        container::remove_everything(&docker, &installation, room.id, &spec.network).await?;
        edges::forget(&r.store, fence, room.id).await?.held()?;
        playrooms::purge(&r.store, room.id).await?;
        return Ok(Action::await_change());
    }
    if !room.edge.enabled {
        // Disabled, not deleted: the volumes keep the certificates for
        // when it is enabled again.
        if observed.is_some() {
            container::remove(&docker, &spec.name).await?;
        }
        edges::forget(&r.store, fence, room.id).await?.held()?;
        return Ok(Action::await_change());
    }

    let wanted = routes::wanted(&r.store, &r.routes, room, &r.life).await?;
    let stored: Vec<claims::Claim> = {
        let mut conn = r.store.pool().acquire().await.map_err(play_core::Error::from)?;
        edges::routes_on(&mut conn, room.id).await?.into_iter().map(|row| row.claim).collect()
    };
    let asks: Vec<claims::Wanted> = wanted
        .iter()
        .map(|w| claims::Wanted {
            playground_id: w.playground_id,
            service: w.service.clone(),
            host: w.route.fqdn.clone(),
        })
        .collect();
    let decisions: Vec<Decision> = claims::decide(&asks, &stored, play_model::time::now());
    // Every route carries the matcher set validation made of its path
    // rule, so none can break the config: only lost claims are left out.
    let served: Vec<Route> =
        wanted.iter().zip(&decisions).filter(|(_, d)| d.lost_to.is_none()).map(|(w, _)| w.route.clone()).collect();
    let sleep = sleeping(&wanted, &served);
    let acme = Acme {
        email: room.acme_email.clone().filter(|e| !e.is_empty()),
        directory: r.config.acme_directory.clone(),
        trusted_roots: r.config.acme_root.as_ref().map(|_| vec![container::ACME_ROOT.to_owned()]).unwrap_or_default(),
    };
    let desired = caddy::caddy_config(&ConfigInputs { settings: room.edge, acme, routes: &served, sleep: &sleep });
    let hash = caddy::config_hash(&desired);

    let (container_id, restored) = ensure_container(r, &docker, &spec, observed, room, &desired).await?;
    let admin = Admin { gateway: &r.gateway, target, socket: &spec.host_socket() };
    let live = live_config(r, &admin).await?;
    let upstreams = served
        .iter()
        .filter_map(|route| {
            let w = wanted.iter().find(|w| w.route.id == route.id)?;
            Some(((w.playground_id, w.service.clone()), format!("{}:{}", route.upstream, route.port)))
        })
        .collect();
    let mut outcome = PassOutcome { decisions, restored, upstreams, ..PassOutcome::default() };
    if live == desired {
        outcome.applied = Some((hash, container_id));
    } else {
        match admin.load(&desired).await? {
            Ok(()) => outcome.applied = Some((hash, container_id)),
            Err(message) => outcome.error = Some(format!("Caddy refused the edge config: {message}")),
        }
    }
    edges::record_pass(&r.store, fence, room.account_id, room.id, &outcome).await?.held()?;
    let source = activity::Source { target: target.clone(), container: spec.name.clone(), socket: spec.host_socket() };
    let cx = activity::Context {
        store: r.store.clone(),
        gateway: r.gateway.clone(),
        playgrounds: r.playgrounds.clone(),
        check_interval: r.config.check_interval,
        metrics: r.gateway.metrics().clone(),
    };
    r.monitors.ensure(&cx, room.id, source, snapshot(&wanted, &served));
    Ok(Action::requeue_after(r.config.check_interval))
}

/// The sleep part of the config: the served routes of sleeping
/// Playgrounds, and the hosts of those that may sleep.
fn sleeping(wanted: &[routes::Wanted], served: &[Route]) -> Sleeping {
    let mut sleep = Sleeping::default();
    for w in wanted.iter().filter(|w| served.iter().any(|s| s.id == w.route.id)) {
        if w.sleeping {
            sleep.waking.insert(w.route.id.clone(), w.playground_id);
        }
        if w.watched {
            sleep.watched_hosts.insert(w.route.fqdn.clone());
        }
    }
    sleep
}

/// What the activity monitor watches: the same routes, by host and by
/// upstream.
fn snapshot(wanted: &[routes::Wanted], served: &[Route]) -> activity::Snapshot {
    let mut out = activity::Snapshot::default();
    for w in wanted.iter().filter(|w| w.watched) {
        let Some(route) = served.iter().find(|s| s.id == w.route.id) else { continue };
        out.hosts.insert(route.fqdn.to_ascii_lowercase(), w.playground_id);
        out.upstreams.insert(format!("{}:{}", route.upstream, route.port), w.playground_id);
        if w.sleeping {
            out.sleeping.insert(w.playground_id);
            if let Some(at) = w.power_changed_at {
                out.power_changed.insert(w.playground_id, at.timestamp_micros());
            }
        }
    }
    out
}

/// Makes the edge container exist, run, and match `spec`. Answers its id
/// and, when it had to be made again or restarted, why (drift).
async fn ensure_container(
    r: &EdgeReconciler,
    docker: &Docker,
    spec: &EdgeSpec,
    observed: Option<Observed>,
    room: &Playroom,
    desired: &Value,
) -> Result<(String, Option<String>)> {
    let seen_before = edges::status(&r.store, room.id).await?.and_then(|s| s.container_id);
    let acme_root = match &r.config.acme_root {
        Some(path) => Some(
            tokio::fs::read(path)
                .await
                .map_err(|e| Error::Edge(format!("reading the ACME root {}: {e}", path.display())))?,
        ),
        None => None,
    };
    let create = |why: Option<String>| async move {
        let id = container::create(docker, spec, desired, acme_root.as_deref(), r.config.pull_timeout).await?;
        Ok::<_, Error>((id, why))
    };
    match observed {
        None => {
            let why = seen_before.map(|_| "the edge container was removed".to_owned());
            create(why).await
        }
        Some(o) if o.digest.as_deref() != Some(spec.digest.as_str()) => {
            container::remove(docker, &spec.name).await?;
            create(None).await
        }
        Some(o) if !o.running => {
            container::start(docker, &o.id).await?;
            Ok((o.id, Some("the edge container had stopped".to_owned())))
        }
        Some(o) => Ok((o.id, None)),
    }
}

/// The live config, waiting up to `start_timeout` for a container that
/// just started to open its admin socket.
async fn live_config(r: &EdgeReconciler, admin: &Admin<'_>) -> Result<Value> {
    let started = Instant::now();
    loop {
        match admin.config().await {
            Ok(config) => return Ok(config),
            Err(e) if started.elapsed() >= r.config.start_timeout => return Err(e),
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
}
