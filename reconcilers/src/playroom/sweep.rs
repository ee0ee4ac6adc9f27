//! The Playroom sweep: removes host objects labelled for Playgrounds that no
//! longer exist.
//!
//! A reconciler keyed by Playroom id. One pass:
//! 1. List the containers (running or not) and networks on the Playroom's
//!    engine that carry `dev.play.installation=<this installation>` **and** a
//!    `dev.play.playground` label, and the volumes likewise.
//! 2. Ask the store which of the Playground ids found still have a row.
//! 3. Remove what belongs to ids without a row: containers first (forced,
//!    with their anonymous volumes), then networks. Named volumes are kept.
//!
//! # Why "no row" means orphan (race safety)
//!
//! - A Playground's row is committed before any object is labelled with its
//!   id (the API writes the row; only a reconcile pass over a committed row
//!   creates objects), and ids are never reused (see
//!   `play_store::sweep`). Step 1 runs before step 2, so every object
//!   listed was created after its row: if the row is missing at step 2 it
//!   was deleted, and no new Playground can take the id.
//! - A row is deleted only by a destroy pass once the host showed nothing of
//!   the Playground left (`playground_status::finish_destroy`). What the
//!   sweep finds for a deleted id was left behind by something else: a
//!   replica that lost its lease mid-pass, or an object created by hand.
//! - A Playground being destroyed still has its row: the sweep leaves it to
//!   its own pass. So does any Playground with a row on another Playroom,
//!   because two Playrooms may reach the same engine.
//!
//! # After a restore (issue #53)
//!
//! A store restored from a backup has no rows for the Playgrounds made
//! after the backup, yet their objects are still on the hosts, labelled
//! with ids above the backup's highest. For the grace period the operator
//! gave `play restore` (`play_store::restores`), the sweep does not remove
//! them: it stops their containers, keeps everything, and lists them in
//! the store (`play orphans`), so a restore never deletes work made after
//! the backup. After the grace period they are orphans like any other.
//!
//! # What is never touched
//!
//! Objects of other installations (the installation label must match),
//! objects without a `dev.play.playground` label (unlabelled objects, and
//! installation-wide ones such as a shared edge network), objects whose
//! playground label is not an id, and named volumes: a destroy that found
//! `persist_volumes` keeps the Playground's volumes on purpose, and once the
//! row is gone nothing tells such a volume from a leaked one, so deleting
//! data is left to the operator (they are logged).
//!
//! # Errors and scheduling
//!
//! A Playroom that cannot be reached (or listed) fails the pass: retried with
//! backoff. An engine refusing one removal (a network still used by a
//! container play does not manage) is logged and the pass carries on; the
//! next sweep tries again. The runtime running this reconciler should resync
//! every [`SweepConfig::interval`] (the resync is what visits every Playroom);
//! each pass also asks to be run again after it. Passes write nothing to the
//! store, so they need no fencing: removing an orphan twice is harmless.
//!
//! # Edges of Playrooms that are gone
//!
//! The same pass removes edge objects (labelled `dev.play.edge-playroom`)
//! of this installation whose Playroom has no live row: the container in
//! any state, its volumes, and the shared edge network once nothing is
//! attached. A deleted Playroom's own edge pass does this before its row
//! is purged; the sweep covers a pass cut short.
//!
//! This module owns the sweep's decision ([`plan`]); the label filters,
//! the ownership check and the removals are `crate::docker`'s, shared with
//! the Playground reconciler, and are not written again here.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bollard::Docker;
use play_model::ids::{ObjectId, PlayroomId};
use play_model::model::restore::QuarantinedObject;
use play_model::secrets::SecretBox;
use play_store::{Store, playrooms, restores, sweep};

use play_model::desired::{edge_network_name, legacy_edge_network_name};

use crate::docker::ownership::playground_of;
use crate::docker::{labels, remove};
use crate::edge::container::{remove_everything, remove_network_if_unused};
use crate::host::DockerHostGateway;
use crate::runtime::{Action, Ctx, Reconciler};
use crate::{Error, Result};

/// Tuning of the sweep.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// How often each Playroom is swept.
    pub interval: Duration,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig { interval: Duration::from_secs(600) }
    }
}

/// What kind of host object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Container,
    Network,
    Volume,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Container => "container",
            Kind::Network => "network",
            Kind::Volume => "volume",
        }
    }
}

/// A host object carrying this installation's label and a Playground id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labelled {
    pub kind: Kind,
    /// What the engine removes it by: container or network id, volume name.
    pub id: String,
    /// For logs.
    pub name: String,
    pub playground: i64,
}

/// What one pass does with what it found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepPlan {
    /// Removed first, so networks are free of them.
    pub containers: Vec<Labelled>,
    pub networks: Vec<Labelled>,
    /// Orphaned named volumes, kept (see the module documentation).
    pub kept_volumes: Vec<Labelled>,
    /// Objects of Playgrounds made after a restored backup, in its grace
    /// period: containers stopped, everything kept and listed.
    pub quarantined: Vec<Labelled>,
}

/// The plan for objects `found` on a host when the Playground ids in
/// `existing` still have rows; the orphans of a Playground `quarantine`
/// says yes to are quarantined instead. Pure.
pub fn plan(found: &[Labelled], existing: &BTreeSet<i64>, quarantine: impl Fn(i64) -> bool) -> SweepPlan {
    let mut plan = SweepPlan::default();
    for object in found.iter().filter(|o| !existing.contains(&o.playground)) {
        let list = match object.kind {
            _ if quarantine(object.playground) => &mut plan.quarantined,
            Kind::Container => &mut plan.containers,
            Kind::Network => &mut plan.networks,
            Kind::Volume => &mut plan.kept_volumes,
        };
        list.push(object.clone());
    }
    plan
}

/// Every container, network and volume of `installation` on the engine that
/// names a Playground. The engine filters by both labels; each object's
/// labels are checked again ([`playground_of`]).
pub async fn list_labelled(docker: &Docker, installation: &str) -> Result<Vec<Labelled>> {
    let filters = labels::of_any_playground(installation);
    let mut found = Vec::new();
    for c in labels::containers(docker, &filters).await? {
        let labels = c.labels.unwrap_or_default();
        if let (Some(playground), Some(id)) = (playground_of(&labels, installation), c.id) {
            let name = c.names.and_then(|n| n.into_iter().next()).unwrap_or_default();
            let name = name.trim_start_matches('/').to_owned();
            found.push(Labelled { kind: Kind::Container, id, name, playground });
        }
    }
    for n in labels::networks(docker, &filters).await? {
        let labels = n.labels.unwrap_or_default();
        if let (Some(playground), Some(id)) = (playground_of(&labels, installation), n.id) {
            found.push(Labelled { kind: Kind::Network, id, name: n.name.unwrap_or_default(), playground });
        }
    }
    for v in labels::volumes(docker, &filters).await? {
        if let Some(playground) = playground_of(&v.labels, installation) {
            found.push(Labelled { kind: Kind::Volume, id: v.name.clone(), name: v.name, playground });
        }
    }
    Ok(found)
}

/// Removes one object (forced: an orphan has no pass to wait for); gone
/// already or being removed is success. Volumes are kept.
async fn remove_orphan(docker: &Docker, object: &Labelled) -> Result<()> {
    match object.kind {
        Kind::Container => remove::container(docker, &object.id, "remove orphan").await,
        Kind::Network => remove::network(docker, &object.id, "remove orphan").await,
        Kind::Volume => Ok(()),
    }
}

/// See the [module documentation](self).
#[derive(Debug)]
pub struct PlayroomSweep {
    store: Store,
    secrets: SecretBox,
    gateway: DockerHostGateway,
    config: SweepConfig,
}

impl PlayroomSweep {
    pub fn new(store: Store, secrets: SecretBox, gateway: DockerHostGateway) -> Self {
        PlayroomSweep { store, secrets, gateway, config: SweepConfig::default() }
    }

    pub fn with_config(mut self, config: SweepConfig) -> Self {
        self.config = config;
        self
    }

    /// Removes `plan`'s containers then networks. An engine refusal is
    /// logged and skipped; losing the host fails the pass.
    async fn apply(&self, room: i64, docker: &Docker, plan: &SweepPlan) -> Result<()> {
        for object in plan.containers.iter().chain(&plan.networks) {
            match remove_orphan(docker, object).await {
                Ok(()) => tracing::info!(
                    playroom = room,
                    playground = object.playground,
                    kind = ?object.kind,
                    name = %object.name,
                    id = %object.id,
                    "sweep: removed an object of a Playground that no longer exists"
                ),
                Err(e @ Error::Host(_)) => return Err(e),
                Err(e) => tracing::warn!(
                    playroom = room,
                    playground = object.playground,
                    kind = ?object.kind,
                    name = %object.name,
                    error = %e,
                    "sweep: could not remove an orphaned object; trying again next sweep"
                ),
            }
        }
        if !plan.kept_volumes.is_empty() {
            let names: Vec<&str> = plan.kept_volumes.iter().map(|v| v.name.as_str()).collect();
            tracing::info!(
                playroom = room,
                volumes = ?names,
                "sweep: keeping named volumes of Playgrounds that no longer exist (persisted, or leaked: remove by hand if unwanted)"
            );
        }
        Ok(())
    }
}

impl PlayroomSweep {
    /// Stops the containers of `objects` (kept, with everything else of
    /// theirs) and makes them the Playroom's quarantined objects in the
    /// store (`play orphans`). Losing the host fails the pass.
    async fn quarantine(&self, room: i64, docker: &Docker, objects: &[Labelled]) -> Result<()> {
        let now = play_model::time::now();
        let listed: Vec<QuarantinedObject> = objects
            .iter()
            .map(|o| QuarantinedObject {
                playroom_id: room,
                object_id: o.id.clone(),
                kind: o.kind.as_str().to_owned(),
                name: o.name.clone(),
                playground_id: o.playground,
                quarantined_at: now,
            })
            .collect();
        // Listed before stopped: a stopped container is always one the
        // operator finds in `play orphans`.
        restores::replace_quarantined(&self.store, room, &listed).await?;
        if !objects.is_empty() {
            let names: Vec<&str> = objects.iter().map(|o| o.name.as_str()).collect();
            tracing::info!(
                playroom = room,
                objects = ?names,
                "sweep: quarantined (stopped and kept) the objects of Playgrounds made after the restored backup"
            );
        }
        for object in objects.iter().filter(|o| o.kind == Kind::Container) {
            match remove::stop(docker, &object.id).await {
                Ok(()) => {}
                Err(e @ Error::Host(_)) => return Err(e),
                Err(e) => {
                    tracing::warn!(playroom = room, name = %object.name, error = %e, "sweep: could not stop a quarantined container; trying again next sweep")
                }
            }
        }
        Ok(())
    }

    /// Removes the edge objects (containers in any state, volumes, then the
    /// shared edge network once unused) of Playrooms of this installation
    /// that no longer live on this engine's rows: a delete pass cut short,
    /// or a row purged meanwhile. Host first, rows second, as above: an
    /// edge is only ever made for a committed, live Playroom.
    async fn sweep_edges(&self, room: i64, docker: &Docker, installation: &str) -> Result<()> {
        let filters = labels::of_any_edge(installation);
        let edge_of = |labels: Option<&std::collections::HashMap<String, String>>| {
            labels?.get(labels::LABEL_EDGE_PLAYROOM)?.parse::<i64>().ok()
        };
        let mut ids = BTreeSet::new();
        for c in labels::containers(docker, &filters).await? {
            ids.extend(edge_of(c.labels.as_ref()));
        }
        for v in labels::volumes(docker, &filters).await? {
            ids.extend(edge_of(Some(&v.labels)));
        }
        // The installation-wide edge network of older versions goes once
        // unused (every Playroom's edge moved to a network of its own).
        remove_network_if_unused(docker, &legacy_edge_network_name(installation)).await?;
        if ids.is_empty() {
            return Ok(());
        }
        let listed: Vec<i64> = ids.iter().copied().collect();
        let live = sweep::live_playrooms(&self.store, &listed).await?;
        for gone in ids.difference(&live) {
            let network = edge_network_name(installation, *gone);
            match remove_everything(docker, installation, *gone, &network).await {
                Ok(()) => tracing::info!(
                    playroom = room,
                    edge_of = gone,
                    "sweep: removed the edge of a Playroom that no longer exists"
                ),
                Err(e @ Error::Host(_)) => return Err(e),
                Err(e) => {
                    tracing::warn!(playroom = room, edge_of = gone, error = %e, "sweep: could not remove a left-over edge; trying again next sweep")
                }
            }
        }
        Ok(())
    }
}

impl Reconciler for PlayroomSweep {
    const NAME: &'static str = "playroom_sweep";
    const KIND: play_core::wake::Kind = play_core::wake::Kind::Playroom;
    type Id = PlayroomId;

    async fn reconcile(&self, id: PlayroomId, _ctx: &Ctx) -> Result<Action> {
        let id = id.get();
        let Some(account_id) = sweep::playroom_account(&self.store, id).await? else {
            return Ok(Action::await_change());
        };
        let installation = self.store.installation().await?;
        let (_, target) = playrooms::target(&self.store, &self.secrets, account_id, id).await?;
        let docker = self.gateway.docker(&target).await?;
        // Host first, rows second: see "race safety" above.
        let found = list_labelled(&docker, &installation).await?;
        let ids: Vec<i64> = found.iter().map(|o| o.playground).collect::<BTreeSet<_>>().into_iter().collect();
        let existing = sweep::existing_playgrounds(&self.store, &ids).await?;
        let restore = restores::latest(&self.store).await?;
        let now = play_model::time::now();
        let plan = plan(&found, &existing, |pg| restore.as_ref().is_some_and(|r| r.quarantines(pg, now)));
        let per_playground: BTreeMap<i64, usize> =
            plan.containers.iter().chain(&plan.networks).fold(BTreeMap::new(), |mut m, o| {
                *m.entry(o.playground).or_default() += 1;
                m
            });
        tracing::debug!(playroom = id, found = found.len(), orphans = ?per_playground, "sweep pass");
        self.apply(id, &docker, &plan).await?;
        if restore.is_some() {
            self.quarantine(id, &docker, &plan.quarantined).await?;
        }
        self.sweep_edges(id, &docker, &installation).await?;
        Ok(Action::requeue_after(self.config.interval))
    }

    async fn list(&self) -> Result<Vec<PlayroomId>> {
        Ok(sweep::playroom_ids(&self.store).await?.into_iter().map(PlayroomId).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: Kind, id: &str, playground: i64) -> Labelled {
        Labelled { kind, id: id.into(), name: id.into(), playground }
    }

    #[test]
    fn only_objects_of_playgrounds_without_a_row_are_removed_and_volumes_are_kept() {
        let found = vec![
            object(Kind::Network, "net-7", 7),
            object(Kind::Container, "live", 3),
            object(Kind::Volume, "vol-7", 7),
            object(Kind::Container, "c-7", 7),
            object(Kind::Network, "net-3", 3),
            object(Kind::Volume, "vol-3", 3),
            object(Kind::Container, "c-9", 9),
        ];
        let plan = plan(&found, &BTreeSet::from([3]), |_| false);
        assert_eq!(plan.containers, vec![object(Kind::Container, "c-7", 7), object(Kind::Container, "c-9", 9)]);
        assert_eq!(plan.networks, vec![object(Kind::Network, "net-7", 7)]);
        assert_eq!(plan.kept_volumes, vec![object(Kind::Volume, "vol-7", 7)]);
        assert_eq!(super::plan(&found, &BTreeSet::from([3, 7, 9]), |_| true), SweepPlan::default(), "nothing orphaned");
    }

    #[test]
    fn orphans_newer_than_a_restored_backup_are_quarantined_whatever_their_kind() {
        let found = vec![
            object(Kind::Container, "c-7", 7),
            object(Kind::Container, "c-12", 12),
            object(Kind::Network, "net-12", 12),
            object(Kind::Volume, "vol-12", 12),
            object(Kind::Container, "live-13", 13),
        ];
        let plan = plan(&found, &BTreeSet::from([13]), |pg| pg > 10);
        assert_eq!(plan.containers, vec![object(Kind::Container, "c-7", 7)]);
        assert!(plan.networks.is_empty() && plan.kept_volumes.is_empty());
        assert_eq!(plan.quarantined, found[1..4].to_vec());
    }
}
