//! Zero-downtime rollouts in the plan: the new container beside the old,
//! then the switch-over; a failed hash is not tried again.

use std::time::Duration;

use play_model::desired::ZeroDowntime;

use super::tests::{container, converged_observed, routed};
use super::*;

/// `routed()` with `web` labelled zero-downtime.
fn zero_downtime() -> Desired {
    let mut d = routed();
    let web = d.services.iter_mut().find(|s| s.name == "web").unwrap();
    web.zero_downtime = Some(ZeroDowntime {
        path: "/health".into(),
        port: 80,
        interval: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        retries: 3,
        start_period: Duration::ZERO,
    });
    d
}

/// `d` converged, except that `web` runs an older config.
fn outdated_web(d: &Desired) -> Observed {
    let mut o = converged_observed(d);
    let web = o.containers.iter_mut().find(|c| c.service.as_deref() == Some("web")).unwrap();
    web.config_hash = Some("old".into());
    web.id = "id-web-old".into();
    o
}

#[test]
fn an_outdated_zero_downtime_service_gets_its_new_container_beside_the_old_one() {
    let d = zero_downtime();
    let o = outdated_web(&d);
    let steps = plan(&d, &o);
    let web = &d.services.iter().find(|s| s.name == "web").unwrap().container_name;
    let beside = web.strip_suffix("-1").map(|s| format!("{s}-2")).unwrap();
    assert_eq!(steps, [Step::RunBeside { service: "web".into(), name: beside }], "the old one is not removed");
    // Without the label: stop-then-start, as before.
    let plain = routed();
    let steps = plan(&plain, &outdated_web(&plain));
    assert_eq!(
        steps,
        [
            Step::RemoveContainer { id: "id-web-old".into(), service: Some("web".into()) },
            Step::RunContainer("web".into())
        ]
    );
}

#[test]
fn with_both_running_the_plan_asks_for_the_switch_over_and_status_names_the_old_one() {
    let d = zero_downtime();
    let mut o = outdated_web(&d);
    let mut new = container(&d, "web", State::Running, None);
    new.id = "id-web-new".into();
    new.name = "p-web-2".into();
    o.containers.push(new);
    let steps = plan(&d, &o);
    assert_eq!(
        steps,
        [Step::SwitchOver {
            service: "web".into(),
            new: "id-web-new".into(),
            new_name: "p-web-2".into(),
            old: vec!["id-web-old".into()],
        }]
    );
    assert!(!converged(&d, &o), "a rollout in progress is not converged");
    let web = services_status(&d, &o).into_iter().find(|s| s.name == "web").unwrap();
    let old_name = &d.services.iter().find(|s| s.name == "web").unwrap().container_name;
    assert_eq!(web.container.as_ref(), Some(old_name), "the old one serves until the switch");
    // The switch-over is the pass's, not an engine group's.
    assert!(super::super::apply::groups(steps).is_empty());
}

#[test]
fn a_failed_hash_is_not_tried_again_and_holds_the_service_on_the_old_container() {
    let mut d = zero_downtime();
    let hash = d.services.iter().find(|s| s.name == "web").unwrap().config_hash.clone();
    d.failed_rollouts.insert("web".into(), hash);
    let o = outdated_web(&d);
    assert!(plan(&d, &o).is_empty(), "{:?}", plan(&d, &o));
    assert!(held_back(&d, &o));
    // A leftover new container of the failed hash goes; the old one stays.
    let mut with_new = o.clone();
    let mut new = container(&d, "web", State::Exited(1), None);
    new.id = "id-web-new".into();
    with_new.containers.push(new);
    assert_eq!(plan(&d, &with_new), [Step::RemoveContainer { id: "id-web-new".into(), service: Some("web".into()) }]);
    // Another hash (a new rollout) is tried.
    d.failed_rollouts.insert("web".into(), "some-other-hash".into());
    assert!(matches!(plan(&d, &o).as_slice(), [Step::RunBeside { .. }]));
    assert!(!held_back(&d, &o));
}

#[test]
fn a_stopped_outdated_container_is_replaced_stop_then_start() {
    // Nothing serves: there is no traffic to keep, so no rollout beside it.
    let d = zero_downtime();
    let mut o = outdated_web(&d);
    o.containers.iter_mut().find(|c| c.id == "id-web-old").unwrap().state = State::Exited(137);
    let steps = plan(&d, &o);
    assert_eq!(
        steps,
        [
            Step::RemoveContainer { id: "id-web-old".into(), service: Some("web".into()) },
            Step::RunContainer("web".into())
        ]
    );
}
