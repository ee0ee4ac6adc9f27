//! A Playground asleep (issue #32): its containers stopped in reverse
//! dependency order, kept with their networks, volumes and pinned commits,
//! and the status `sleeping`; and the idle check that puts an awake one to
//! sleep (`play_model::playground::sleep` holds the rules, `store::power`
//! the writes).
//!
//! Converging asleep is level-triggered like the rest of a pass: every
//! container of the Playground that runs is stopped (one started behind
//! play's back is stopped again), nothing is created, removed or pulled, and
//! a container removed meanwhile is simply made again when it wakes. Waking
//! needs nothing here: desired power `awake` is an ordinary pass, whose
//! plan starts the stopped containers in dependency order (each waits for
//! what it depends on), and a rollout or hard restart recorded while it
//! slept is applied then.
//!
//! Services that do not depend on each other stop concurrently; a service
//! stops only after every service that depends on it has (the reverse of
//! `docker compose up`'s order), each with its own stop signal and grace
//! period (`stop_signal`, `stop_grace_period`).

use std::collections::{BTreeMap, BTreeSet};

use bollard::Docker;
use futures::future::try_join_all;
use play_model::playground::Playground;
use play_model::time::Timestamp;
use play_store::playground_status::Fence;
use play_store::power;

use super::plan::{self, Observed, State};
use super::spec::Desired;
use super::{PlaygroundReconciler, observe};
use crate::Result;
use crate::docker::remove::stop;
use crate::runtime::Action;

/// The running containers of `observed` in the order they stop: groups
/// that stop one after the other, each stopped concurrently. A service
/// comes after every service that depends on it; containers of no desired
/// service come first.
pub fn stop_order(desired: &Desired, observed: &Observed) -> Vec<Vec<String>> {
    // The depth of a service: 0 for one nothing depends on; else one more
    // than the deepest of those that depend on it. It stops at level
    // depth + 1.
    let mut dependents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in &desired.services {
        for (on, _) in &s.depends_on {
            dependents.entry(on.as_str()).or_default().push(s.name.as_str());
        }
    }
    fn depth<'a>(name: &'a str, dependents: &BTreeMap<&'a str, Vec<&'a str>>, seen: &mut BTreeSet<&'a str>) -> usize {
        if !seen.insert(name) {
            return 0; // a cycle (refused at validation): stop it early
        }
        let d =
            dependents.get(name).map_or(0, |ds| ds.iter().map(|d| depth(d, dependents, seen) + 1).max().unwrap_or(0));
        seen.remove(name);
        d
    }
    let mut levels: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for c in observed.containers.iter().filter(|c| c.state == State::Running) {
        let level = match c.service.as_deref().filter(|s| desired.services.iter().any(|d| d.name == *s)) {
            Some(service) => depth(service, &dependents, &mut BTreeSet::new()) + 1,
            None => 0,
        };
        levels.entry(level).or_default().push(c.id.clone());
    }
    // Containers of no desired service first (level 0), then the services
    // nothing depends on, down to the deepest dependencies.
    levels.into_values().collect()
}

/// Converges Playground `p` asleep on `docker` and records it `sleeping`.
pub(super) async fn converge_asleep(
    r: &PlaygroundReconciler,
    fence: Fence<'_>,
    docker: &Docker,
    p: &Playground,
    desired: &Desired,
) -> Result<Action> {
    let volumes: Vec<String> = desired.volumes.iter().map(|v| v.name.clone()).collect();
    let look = || observe::observe(docker, &desired.installation, p.id, &[], &volumes, None);
    let observed = look().await?;
    for group in stop_order(desired, &observed) {
        try_join_all(group.iter().map(|id| stop(docker, id))).await?;
    }
    let observed = look().await?;
    let services = plan::services_status(desired, &observed);
    if power::record_slept(&r.store, fence, p.id, &services, p.generation).await?.held()? {
        r.wake_edge(p.playroom_id);
    }
    // Still running (started again meanwhile): look again soon.
    let running = observed.containers.iter().any(|c| c.state == State::Running);
    Ok(super::pass::lifecycle::next_visit(p, None, running.then_some(r.config.poll_interval)))
}

/// When an awake Playground's idle deadline has passed at `now`: the
/// instant before which activity no longer keeps it awake (the store checks
/// it again as it puts the Playground to sleep: activity may have come
/// since the pass read it). `None` while it may stay awake.
pub(super) fn idle_cutoff(r: &PlaygroundReconciler, p: &Playground, now: Timestamp) -> Option<Timestamp> {
    let after = r.life.sleep_after(p)?;
    if p.sleep.sleeps_at(Some(after)).is_none_or(|at| at > now) {
        return None;
    }
    Some(now - chrono::Duration::from_std(after).ok()?)
}

/// When an awake Playground falls asleep if nothing happens before.
pub(super) fn deadline(r: &PlaygroundReconciler, p: &Playground) -> Option<play_model::time::Timestamp> {
    p.sleep.sleeps_at(r.life.sleep_after(p))
}

#[cfg(test)]
mod tests {

    use super::super::plan::tests::{desired_from, playground};
    use super::*;
    use crate::playground::plan::ObservedContainer;

    fn running(id: &str, service: &str) -> ObservedContainer {
        ObservedContainer {
            id: id.into(),
            name: id.into(),
            service: Some(service.into()),
            config_hash: None,
            epoch: 0,
            state: State::Running,
            health: None,
            finished_at: None,
        }
    }

    #[test]
    fn dependents_stop_before_what_they_depend_on_and_independent_ones_together() {
        let desired = desired_from(
            "services:\n  db: {image: busybox}\n  cache: {image: busybox}\n  \
             api: {image: busybox, depends_on: [db, cache]}\n  web: {image: busybox, depends_on: [api]}\n  \
             worker: {image: busybox, depends_on: [db]}\n",
            &playground(&[], &[]),
        );
        let mut observed = Observed::default();
        for s in ["db", "cache", "api", "web", "worker"] {
            observed.containers.push(running(s, s));
        }
        observed.containers.push(running("stray", "gone"));
        observed.containers.push(ObservedContainer { state: State::Exited(0), ..running("old", "web") });
        let order: Vec<Vec<String>> = stop_order(&desired, &observed)
            .into_iter()
            .map(|mut g| {
                g.sort();
                g
            })
            .collect();
        assert_eq!(
            order,
            vec![
                vec!["stray".to_owned()],
                vec!["web".into(), "worker".into()],
                vec!["api".into()],
                vec!["cache".into(), "db".into()]
            ]
        );
    }
}
