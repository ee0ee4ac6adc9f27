//! Which stopped containers may stay stopped: only a one-shot dependency
//! (the target of another service's `service_completed_successfully`) that
//! exited 0 without a restart policy, and, in job mode, a watched service
//! that exited. Every other container that is not running is drift and is
//! started again, whatever its exit code: `docker stop` on a process that
//! exits 0 on SIGTERM must not leave a service down while the Playground
//! reports `running`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::collections::BTreeSet;

use super::tests::{container, desired_from, playground};
use super::*;

const COMPOSE: &str = r#"
services:
  migrate:
    image: play-test/busybox:1
    command: "true"
  init:
    image: play-test/busybox:1
    command: "true"
  app:
    image: play-test/busybox:1
    command: sleep 3600
    depends_on:
      migrate:
        condition: service_completed_successfully
      init:
        condition: service_started
  web:
    image: play-test/busybox:1
    command: sleep 3600
    restart: "no"
  cron:
    image: play-test/busybox:1
    command: sleep 3600
    restart: always
"#;

fn desired() -> Desired {
    desired_from(COMPOSE, &playground(&[], &[]))
}

/// Everything present: `migrate` done (exited 0), the rest running.
fn converged_observed(d: &Desired) -> Observed {
    Observed {
        networks: d.networks.iter().map(|n| n.name.clone()).collect(),
        images: d.services.iter().map(|s| s.container.image.clone()).collect(),
        containers: ["migrate", "init", "app", "web", "cron"]
            .iter()
            .map(|s| container(d, s, if *s == "migrate" { State::Exited(0) } else { State::Running }, None))
            .collect(),
        ..Observed::default()
    }
}

/// A service, its container's state, the job's watched services, then the
/// plan and whether the Playground counts as converged.
type Case<'a> = (&'a str, State, &'a [&'a str], &'a [Step], bool);

fn start(service: &str) -> Step {
    Step::StartContainer { service: service.into(), id: format!("id-{service}") }
}

#[test]
fn only_one_shot_dependencies_count_as_one_shot() {
    let d = desired();
    let one_shot: Vec<&str> = d.services.iter().filter(|s| one_shot(&d, s)).map(|s| s.name.as_str()).collect();
    assert_eq!(one_shot, ["migrate"], "init is only a service_started dependency");
    let o = converged_observed(&d);
    assert_eq!(plan(&d, &o), vec![]);
    assert!(converged(&d, &o));
}

#[test]
fn a_stopped_container_is_drift_unless_it_may_finish() {
    let cases: &[Case<'_>] = &[
        // `docker stop` of a service whose process exits 0 on SIGTERM.
        ("web", State::Exited(0), &[], &[start("web")], false),
        ("web", State::Exited(143), &[], &[start("web")], false),
        ("web", State::Exited(137), &[], &[start("web")], false),
        ("web", State::Created, &[], &[start("web")], false),
        // A dependency others only wait to have started is a service too.
        ("init", State::Exited(0), &[], &[start("init")], false),
        // A restart policy does not make a clean exit a finish.
        ("cron", State::Exited(0), &[], &[start("cron")], false),
        // The one-shot dependency: done after exit 0, retried after a
        // failure.
        ("migrate", State::Exited(0), &[], &[], true),
        ("migrate", State::Exited(1), &[], &[start("migrate")], false),
        // Job mode: a watched service's exit ends the job, whatever its
        // code; an unwatched one is still repaired.
        ("web", State::Exited(0), &["web"], &[], true),
        ("web", State::Exited(3), &["web"], &[], true),
        ("init", State::Exited(0), &["web"], &[start("init")], false),
        // Paused, restarting, dead: the engine's business, not a step.
        ("web", State::Other, &[], &[], false),
    ];
    let d = desired();
    for (service, state, watched, steps, is_converged) in cases {
        let mut o = converged_observed(&d);
        let c = o.containers.iter_mut().find(|c| c.service.as_deref() == Some(*service)).unwrap();
        c.state = *state;
        let keep: BTreeSet<String> = watched.iter().map(|s| (*s).to_owned()).collect();
        let case = format!("{service} {state:?} watched {watched:?}");
        assert_eq!(plan_keeping(&d, &o, &keep), steps.to_vec(), "{case}");
        assert_eq!(converged_keeping(&d, &o, &keep), *is_converged, "{case}");
    }
}

#[test]
fn a_dependant_waits_for_a_clean_exited_dependency_to_run_again() {
    let d = desired();
    let mut o = converged_observed(&d);
    o.containers.retain(|c| c.service.as_deref() != Some("app"));
    o.containers.iter_mut().find(|c| c.service.as_deref() == Some("init")).unwrap().state = State::Exited(0);
    assert_eq!(
        plan(&d, &o),
        vec![
            start("init"),
            Step::Wait { service: "app".into(), on: "init".into(), condition: DependencyCondition::ServiceStarted },
        ]
    );
    // The one-shot dependency that finished satisfies its dependant.
    o.containers.iter_mut().find(|c| c.service.as_deref() == Some("init")).unwrap().state = State::Running;
    assert_eq!(plan(&d, &o), vec![Step::RunContainer("app".into())]);
}
