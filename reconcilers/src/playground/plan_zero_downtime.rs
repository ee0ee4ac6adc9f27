//! The plan of a zero-downtime service ([`ServiceSpec::zero_downtime`]) in
//! a rollout: its new container beside the outdated one that still serves
//! ([`Step::RunBeside`]), then the [`Step::SwitchOver`]; a config hash whose
//! rollout failed before is not tried again, and the old container keeps
//! serving ([`held_back`]). Kept apart from the rest of the plan because
//! only here may a service have two containers at once; the switch-over
//! itself is applied by `super::super::rollout`.

use std::collections::BTreeMap;

use super::super::spec::{Desired, ServiceSpec};
use super::{Observed, ObservedContainer, State, Step, by_service, current, wait_step};

/// The outdated container of a zero-downtime service that still serves it,
/// if the service is in a rollout (see the invariants of [`super`]).
pub(super) fn serving_outdated<'a>(
    service: &ServiceSpec,
    observed_here: &[&'a ObservedContainer],
) -> Option<&'a ObservedContainer> {
    service.zero_downtime.as_ref()?;
    observed_here
        .iter()
        .copied()
        .find(|c| c.config_hash.as_deref() != Some(service.config_hash.as_str()) && c.state == State::Running)
}

/// The steps of a zero-downtime service in a rollout; `None` when it is
/// not in one (the ordinary rules apply).
pub(super) fn zero_downtime_steps(
    desired: &Desired,
    service: &ServiceSpec,
    observed_here: &[&ObservedContainer],
    containers: &BTreeMap<&str, Vec<&ObservedContainer>>,
) -> Option<Vec<Step>> {
    let old = serving_outdated(service, observed_here)?;
    let new = current(service, containers);
    let remove =
        |c: &ObservedContainer| Step::RemoveContainer { id: c.id.clone(), service: Some(service.name.clone()) };
    // Anything but the serving old one and the new one goes.
    let mut steps: Vec<Step> = observed_here
        .iter()
        .filter(|c| c.id != old.id && new.is_none_or(|n| n.id != c.id))
        .map(|c| remove(c))
        .collect();
    if desired.failed_rollouts.get(&service.name) == Some(&service.config_hash) {
        steps.extend(new.map(remove));
        return Some(steps);
    }
    match new {
        None => steps.push(wait_step(desired, service, containers).unwrap_or_else(|| Step::RunBeside {
            service: service.name.clone(),
            name: play_model::desired::beside_name(&service.container_name, &old.name),
        })),
        Some(new) => steps.push(Step::SwitchOver {
            service: service.name.clone(),
            new: new.id.clone(),
            new_name: new.name.clone(),
            old: observed_here.iter().filter(|c| c.id != new.id).map(|c| c.id.clone()).collect(),
        }),
    }
    Some(steps)
}

/// Whether a failed zero-downtime rollout holds a service on its old
/// container: the Playground stays failed, serving the old version, until
/// a rollout or hard restart.
pub fn held_back(desired: &Desired, observed: &Observed) -> bool {
    let containers = by_service(desired, observed);
    desired.services.iter().any(|s| {
        desired.failed_rollouts.get(&s.name) == Some(&s.config_hash)
            && serving_outdated(s, containers.get(s.name.as_str()).map(Vec::as_slice).unwrap_or_default()).is_some()
    })
}
