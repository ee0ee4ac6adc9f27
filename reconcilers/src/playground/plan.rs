//! The pure plan: what to do next, from what should be ([`Desired`]) and what
//! is ([`Observed`]).
//!
//! A plan holds only steps whose preconditions hold *now*: a container whose
//! dependencies are not yet satisfied on the host gets a [`Step::Wait`]
//! instead of being created. The reconciler applies a plan, observes again
//! and plans again, so dependency order falls out of re-planning and a pass
//! interrupted anywhere is resumed by the next one.
//!
//! Invariants (each unit-tested):
//! - desired == observed (every object present, every container running
//!   with the desired hash) gives an empty plan;
//! - a container whose config hash differs is removed and recreated, and no
//!   other container is touched;
//! - never two containers per service: extra ones are removed;
//! - containers labelled for the Playground but for no desired service are
//!   removed;
//! - the destroy plan removes every observed object (volumes only unless
//!   persisted), containers first;
//! - a container that is not running is drift, and is started again,
//!   whatever its exit code (a `docker stop` exits 0 too), with two
//!   exceptions: a [`one_shot`] dependency (the target of another service's
//!   `service_completed_successfully`) that exited 0 without a restart
//!   policy has finished its work, and in job mode ([`plan_keeping`]) the
//!   exited container of a watched service is left as it is: its exit ends
//!   the job.
//! - a zero-downtime service ([`ServiceSpec::zero_downtime`]) whose
//!   serving container is outdated gets its new container beside the old
//!   one ([`Step::RunBeside`]), then a [`Step::SwitchOver`] (health gate,
//!   edge switch, drain, the old one removed); its two containers are not
//!   "extras". A rollout whose config hash failed before
//!   (`Desired::failed_rollouts`) is not tried again: the old container
//!   keeps serving, and a leftover new one is removed (these steps are
//!   planned in `plan_zero_downtime.rs`);
//! - a service's source volume (`svc/source_mount`, a relative source of
//!   the Compose file from the repository) that is not known
//!   complete ([`Observed::complete_sources`]) is filled
//!   ([`Step::FillSource`]) before the service's container runs; a source
//!   volume no longer desired (an older commit) is removed once no
//!   outdated container is left to use it, and neither a hard restart nor
//!   destroy keeps one for `persist_volumes`: it is a cache of the
//!   repository;
//! - the shared edge network is created when missing and never removed by
//!   a Playground's destroy; if a race between replicas left several
//!   networks of its name (the engine allows that, and containers cannot
//!   join an ambiguous name), all but one are removed.

use std::collections::{BTreeMap, BTreeSet};

use play_model::compose::model::DependencyCondition;
use play_model::playground::{ServiceState, ServiceStatus};
use play_model::time::Timestamp;

use super::spec::{Desired, ServiceSpec};

/// What is on the host for one Playground (found by its label).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    pub networks: BTreeSet<String>,
    pub volumes: BTreeSet<String>,
    /// The restart epoch of each observed volume (0 when unlabelled).
    pub volume_epochs: BTreeMap<String, i64>,
    /// The observed volumes play made for services' sources (their key
    /// label is a source key: `play_model::desired::is_source_key`).
    pub source_volumes: BTreeSet<String>,
    /// When the engine created each of them (its `CreatedAt`): a volume
    /// removed and made again under its name is another volume.
    pub source_created: BTreeMap<String, String>,
    /// The desired source volumes whose fill completed (see
    /// `super::source`).
    pub complete_sources: BTreeSet<String>,
    /// The desired images already present on the host.
    pub images: BTreeSet<String>,
    pub containers: Vec<ObservedContainer>,
    /// Networks shared between Playgrounds (the edge network), found by
    /// exact name, not by the Playground's label.
    pub shared_networks: Vec<SharedNetwork>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedContainer {
    pub id: String,
    pub name: String,
    pub service: Option<String>,
    pub config_hash: Option<String>,
    /// The restart epoch it was made in (0 when unlabelled).
    pub epoch: i64,
    pub state: State,
    pub health: Option<Health>,
    /// When the container last exited (job mode reports the latest exit
    /// of its watched services as `completed_at`).
    pub finished_at: Option<Timestamp>,
}

// A container's state and health as the engine reports them, read in
// `crate::docker::inspect` (the one place that reads them).
pub use crate::docker::edge_network::SharedNetwork;
pub use crate::docker::inspect::{Health, State};

#[path = "plan_step.rs"]
mod step;
pub use step::Step;

#[path = "plan_zero_downtime.rs"]
mod zero_downtime;
pub use zero_downtime::held_back;
use zero_downtime::{serving_outdated, zero_downtime_steps};

/// The observed containers of each service; the one to keep first.
fn by_service<'a>(desired: &Desired, observed: &'a Observed) -> BTreeMap<&'a str, Vec<&'a ObservedContainer>> {
    let mut map: BTreeMap<&str, Vec<&ObservedContainer>> = BTreeMap::new();
    for c in &observed.containers {
        if let Some(service) = c.service.as_deref() {
            map.entry(service).or_default().push(c);
        }
    }
    for (service, containers) in &mut map {
        let hash = desired.services.iter().find(|s| s.name == *service).map(|s| s.config_hash.as_str());
        // Keep: the desired hash first, running first, then by name/id for
        // a stable choice.
        containers.sort_by_key(|c| {
            (c.config_hash.as_deref() != hash, c.state != State::Running, c.name.clone(), c.id.clone())
        });
    }
    map
}

/// The container kept for `service`, when it has the desired hash.
fn current<'a>(
    service: &ServiceSpec,
    by_service: &BTreeMap<&str, Vec<&'a ObservedContainer>>,
) -> Option<&'a ObservedContainer> {
    by_service
        .get(service.name.as_str())
        .and_then(|cs| cs.first())
        .copied()
        .filter(|c| c.config_hash.as_deref() == Some(service.config_hash.as_str()))
}

/// Each desired service's container as the plan keeps it, when it has the
/// desired config hash (services without one are left out).
pub fn current_containers<'a>(
    desired: &'a Desired,
    observed: &'a Observed,
) -> BTreeMap<&'a str, &'a ObservedContainer> {
    let containers = by_service(desired, observed);
    desired.services.iter().filter_map(|s| Some((s.name.as_str(), current(s, &containers)?))).collect()
}

/// Whether another service waits for `service` to exit 0
/// (`depends_on: {condition: service_completed_successfully}`): the Compose
/// file marks it as a one-shot dependency (a migration, a seed), the only
/// kind of service that may finish outside a job.
pub fn one_shot(desired: &Desired, service: &ServiceSpec) -> bool {
    desired.services.iter().any(|s| {
        s.depends_on.iter().any(|(dep, condition)| {
            *dep == service.name && *condition == DependencyCondition::ServiceCompletedSuccessfully
        })
    })
}

/// The service ran to completion: a [`one_shot`] dependency that exited 0
/// and is not restarted by Docker. Any other service that exited, even with
/// 0 (a `docker stop` whose process exits cleanly on SIGTERM), is drift.
fn completed(desired: &Desired, service: &ServiceSpec, c: &ObservedContainer) -> bool {
    c.state == State::Exited(0) && !service.restarts() && one_shot(desired, service)
}

fn up(service: &ServiceSpec, c: &ObservedContainer) -> bool {
    c.state == State::Running && (!service.has_healthcheck() || c.health == Some(Health::Healthy))
}

fn satisfied(
    desired: &Desired,
    dep: &ServiceSpec,
    c: Option<&ObservedContainer>,
    condition: DependencyCondition,
) -> bool {
    let Some(c) = c else { return false };
    match condition {
        DependencyCondition::ServiceStarted => c.state == State::Running || completed(desired, dep, c),
        DependencyCondition::ServiceHealthy => up(dep, c) || completed(desired, dep, c),
        DependencyCondition::ServiceCompletedSuccessfully => c.state == State::Exited(0),
    }
}

/// The [`Step::Wait`] of `service` when one of its dependencies does not
/// satisfy its condition yet (a dependency that cannot be built never
/// does); `None` when it may start.
fn wait_step(
    desired: &Desired,
    service: &ServiceSpec,
    containers: &BTreeMap<&str, Vec<&ObservedContainer>>,
) -> Option<Step> {
    let (on, condition) = service.depends_on.iter().find(|(dep, condition)| {
        desired.services.iter().find(|s| &s.name == dep).is_some_and(|dep_spec| {
            unbuilt(dep_spec) || !satisfied(desired, dep_spec, current(dep_spec, containers), *condition)
        })
    })?;
    Some(Step::Wait { service: service.name.clone(), on: on.clone(), condition: *condition })
}

/// A hard restart's teardown: every container of an older restart epoch,
/// then (once those are gone, and unless volumes persist) every named volume
/// of an older epoch. Nothing of the new epoch is made until this is empty,
/// so a hard restart really starts from scratch, and a pass interrupted
/// half-way resumes the teardown.
fn teardown(desired: &Desired, observed: &Observed) -> Vec<Step> {
    let old: Vec<Step> = observed
        .containers
        .iter()
        .filter(|c| c.epoch < desired.epoch)
        .map(|c| Step::RemoveContainer { id: c.id.clone(), service: c.service.clone() })
        .collect();
    if !old.is_empty() {
        return old;
    }
    observed
        .volume_epochs
        .iter()
        .filter(|(name, epoch)| {
            **epoch < desired.epoch && (!desired.persist_volumes || observed.source_volumes.contains(*name))
        })
        .map(|(name, _)| Step::RemoveVolume(name.clone()))
        .collect()
}

/// Whether `c` stays as it is although it is not running: a one-shot
/// dependency that ran to completion, or a service in `keep_exited` (a
/// job's watched services) that exited. Nothing else may stop.
fn done(desired: &Desired, service: &ServiceSpec, c: &ObservedContainer, keep_exited: &BTreeSet<String>) -> bool {
    completed(desired, service, c) || (matches!(c.state, State::Exited(_)) && keep_exited.contains(&service.name))
}

/// The observed networks named `name`, the one to keep first: the one
/// containers are attached to, then the oldest, then by id.
fn shared<'a>(observed: &'a Observed, name: &str) -> Vec<&'a SharedNetwork> {
    let mut found: Vec<&SharedNetwork> = observed.shared_networks.iter().filter(|n| n.name == name).collect();
    found.sort_by(|a, b| b.endpoints.cmp(&a.endpoints).then(a.created.cmp(&b.created)).then(a.id.cmp(&b.id)));
    found
}

/// The steps that bring `observed` closer to `desired`, in order.
pub fn plan(desired: &Desired, observed: &Observed) -> Vec<Step> {
    plan_keeping(desired, observed, &BTreeSet::new())
}

/// [`plan`], except that an exited container of a `keep_exited` service is
/// never started again, whatever its exit code: job mode passes its watched
/// services, whose exit ends the job.
pub fn plan_keeping(desired: &Desired, observed: &Observed, keep_exited: &BTreeSet<String>) -> Vec<Step> {
    let teardown = teardown(desired, observed);
    if !teardown.is_empty() {
        return teardown;
    }
    let mut steps = Vec::new();
    for network in &desired.networks {
        if !observed.networks.contains(&network.name) {
            steps.push(Step::CreateNetwork(network.name.clone()));
        }
    }
    if let Some(edge) = &desired.edge_network {
        match shared(observed, edge).split_first() {
            None => steps.push(Step::CreateSharedNetwork(edge.clone())),
            Some((_, extra)) => {
                steps.extend(extra.iter().map(|n| Step::RemoveSharedNetwork { name: n.name.clone(), id: n.id.clone() }))
            }
        }
    }
    for volume in &desired.volumes {
        if !observed.volumes.contains(&volume.name) {
            steps.push(Step::CreateVolume(volume.name.clone()));
        }
    }
    let mut pulls = BTreeSet::new();
    for service in desired.services.iter().filter(|s| !s.build) {
        let image = &service.container.image;
        if (desired.force_pull || !observed.images.contains(image)) && pulls.insert(image.clone()) {
            steps.push(Step::PullImage(image.clone()));
        }
    }
    for service in desired.services.iter().filter(|s| s.build) {
        match &service.built {
            // Present: built before, by this Playground or another of the
            // account with the same inputs (a cache hit).
            Some(built) if observed.images.contains(&built.image) => {}
            Some(_) => steps.push(Step::BuildImage(service.name.clone())),
            None => steps.push(Step::BuildUnavailable(service.name.clone())),
        }
    }
    for service in &desired.services {
        if service.sources.iter().any(|src| !observed.complete_sources.contains(&src.volume)) {
            steps.push(Step::FillSource(service.name.clone()));
        }
    }

    let containers = by_service(desired, observed);
    let wanted: BTreeSet<&str> = desired.services.iter().map(|s| s.name.as_str()).collect();
    for c in &observed.containers {
        if !c.service.as_deref().is_some_and(|s| wanted.contains(s)) {
            steps.push(Step::RemoveContainer { id: c.id.clone(), service: c.service.clone() });
        }
    }
    for service in &desired.services {
        let observed_here = containers.get(service.name.as_str()).map(Vec::as_slice).unwrap_or_default();
        if let Some(rollout) = zero_downtime_steps(desired, service, observed_here, &containers) {
            steps.extend(rollout);
            continue;
        }
        // Never two containers per service: all but the first go.
        for extra in observed_here.iter().skip(1) {
            steps.push(Step::RemoveContainer { id: extra.id.clone(), service: Some(service.name.clone()) });
        }
        if unbuilt(service) {
            continue;
        }
        let keep = current(service, &containers);
        let needs_start = match keep {
            None => true,
            Some(c) => match c.state {
                State::Running | State::Other => false,
                State::Exited(_) if done(desired, service, c, keep_exited) => false,
                State::Created | State::Exited(_) => true,
            },
        };
        if !needs_start {
            continue;
        }
        if let Some(wait) = wait_step(desired, service, &containers) {
            steps.push(wait);
            continue;
        }
        match (keep, observed_here.first()) {
            (Some(c), _) => steps.push(Step::StartContainer { service: service.name.clone(), id: c.id.clone() }),
            (None, outdated) => {
                if let Some(old) = outdated {
                    steps.push(Step::RemoveContainer { id: old.id.clone(), service: Some(service.name.clone()) });
                }
                steps.push(Step::RunContainer(service.name.clone()));
            }
        }
    }
    steps.extend(stale_sources(desired, observed));
    steps
}

/// Source volumes no longer desired (their service moved to another
/// commit, or lost its label), once every observed container has its
/// service's desired hash: an outdated container may still mount one, and
/// the engine refuses to remove a volume in use.
fn stale_sources(desired: &Desired, observed: &Observed) -> Vec<Step> {
    let outdated = observed.containers.iter().any(|c| {
        !desired
            .services
            .iter()
            .any(|s| Some(&s.name) == c.service.as_ref() && c.config_hash.as_ref() == Some(&s.config_hash))
    });
    if outdated {
        return Vec::new();
    }
    observed
        .source_volumes
        .iter()
        .filter(|v| !desired.volumes.iter().any(|d| &d.name == *v))
        .map(|v| Step::RemoveVolume(v.clone()))
        .collect()
}

/// Removes everything observed with the Playground's label, containers
/// first; volumes only when not `persist_volumes`. Shared networks are
/// never removed: other Playgrounds use them.
pub fn destroy_plan(observed: &Observed, persist_volumes: bool) -> Vec<Step> {
    let mut steps: Vec<Step> = observed
        .containers
        .iter()
        .map(|c| Step::RemoveContainer { id: c.id.clone(), service: c.service.clone() })
        .collect();
    steps.extend(observed.networks.iter().map(|n| Step::RemoveNetwork(n.clone())));
    steps.extend(
        observed
            .volumes
            .iter()
            .filter(|v| !persist_volumes || observed.source_volumes.contains(*v))
            .map(|v| Step::RemoveVolume(v.clone())),
    );
    steps
}

/// Whether every service is up (healthy where it has a healthcheck) or, for
/// a one-shot service, completed, each with the desired config hash.
pub fn converged(desired: &Desired, observed: &Observed) -> bool {
    converged_keeping(desired, observed, &BTreeSet::new())
}

/// [`converged`], counting an exited `keep_exited` service as done (see
/// [`plan_keeping`]).
pub fn converged_keeping(desired: &Desired, observed: &Observed, keep_exited: &BTreeSet<String>) -> bool {
    let containers = by_service(desired, observed);
    let extra = observed.containers.len() != desired.services.len();
    !extra
        && desired.services.iter().all(|s| {
            current(s, &containers).is_some_and(|c| up(s, c) || done(desired, s, c, keep_exited))
                && containers.get(s.name.as_str()).is_some_and(|cs| cs.len() == 1)
        })
        && desired.networks.iter().all(|n| observed.networks.contains(&n.name))
        && desired.edge_network.as_ref().is_none_or(|edge| shared(observed, edge).len() == 1)
        && desired.volumes.iter().all(|v| observed.volumes.contains(&v.name))
        && desired.services.iter().flat_map(|s| &s.sources).all(|src| observed.complete_sources.contains(&src.volume))
}

/// `services_status` as the API shows it, in dependency order.
pub fn services_status(desired: &Desired, observed: &Observed) -> Vec<ServiceStatus> {
    let containers = by_service(desired, observed);
    desired
        .services
        .iter()
        .map(|s| {
            let here = containers.get(s.name.as_str()).map(Vec::as_slice).unwrap_or_default();
            // In a zero-downtime rollout the old container serves until the
            // switch (which records the new one itself).
            let c = serving_outdated(s, here).or_else(|| here.first().copied());
            let running = c.is_some_and(|c| c.state == State::Running);
            ServiceStatus {
                name: s.name.clone(),
                status: if running { ServiceState::Running } else { ServiceState::Stopped },
                health: c.and_then(|c| c.health).map(|h| {
                    match h {
                        Health::Starting => "starting",
                        Health::Healthy => "healthy",
                        Health::Unhealthy => "unhealthy",
                    }
                    .to_owned()
                }),
                running,
                container: c.map(|c| c.name.clone()),
            }
        })
        .collect()
}

/// A service built from source without a pinned build: nothing of it can
/// run (its `BuildUnavailable` step fails the pass).
fn unbuilt(service: &ServiceSpec) -> bool {
    service.build && service.built.is_none()
}

#[cfg(test)]
#[path = "plan_tests.rs"]
pub(super) mod tests;

#[cfg(test)]
#[path = "plan_restart_tests.rs"]
mod restart_tests;

#[cfg(test)]
#[path = "plan_exit_tests.rs"]
mod exit_tests;

#[cfg(test)]
#[path = "plan_rollout_tests.rs"]
mod rollout_tests;

#[cfg(test)]
#[path = "plan_source_tests.rs"]
mod source_tests;
