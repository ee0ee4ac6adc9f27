//! The plan of `svc/source_mount`: fill a source volume that is missing
//! or incomplete before its service runs, leave a complete one alone, and
//! remove an older commit's once nothing outdated can use it.

use play_model::playground::CreationStep;

use super::super::spec::Desired;
use super::tests::{container, playground};
use super::*;

const COMPOSE: &str = r#"
services:
  app:
    build: .
    command: ["sleep", "3600"]
    labels:
      svc/source_mount: /src
"#;

fn desired_at(commit: char) -> Desired {
    let pins = vec![play_model::testing::pin("app", commit)];
    play_model::testing::pinned_desired(&playground(&[], &[]), COMPOSE, pins).unwrap()
}

fn volume(d: &Desired) -> String {
    d.services[0].sources[0].volume.clone()
}

/// The image present, the network and volumes there; the source volume
/// complete only when `complete`; the app running when `running`.
fn host(d: &Desired, complete: bool, running: bool) -> Observed {
    Observed {
        networks: d.networks.iter().map(|n| n.name.clone()).collect(),
        volumes: d.volumes.iter().map(|v| v.name.clone()).collect(),
        volume_epochs: d.volumes.iter().map(|v| (v.name.clone(), d.epoch)).collect(),
        source_volumes: [volume(d)].into(),
        complete_sources: if complete { [volume(d)].into() } else { Default::default() },
        images: d.services.iter().map(|s| s.container.image.clone()).collect(),
        containers: if running { vec![container(d, "app", State::Running, None)] } else { vec![] },
        ..Observed::default()
    }
}

#[test]
fn a_missing_source_volume_is_created_and_filled_before_the_service_runs() {
    let d = desired_at('a');
    let steps = plan(&d, &Observed { images: [d.services[0].container.image.clone()].into(), ..Observed::default() });
    assert!(steps.contains(&Step::CreateVolume(volume(&d))), "{steps:?}");
    assert!(steps.contains(&Step::FillSource("app".into())), "{steps:?}");
    assert_eq!(Step::FillSource("app".into()).creation_step(), CreationStep::ImageBuild);
    let groups = super::super::apply::groups(steps);
    let at = |step: &Step| groups.iter().position(|g| g.contains(step)).unwrap();
    let fill = at(&Step::FillSource("app".into()));
    assert!(at(&Step::CreateVolume(volume(&d))) < fill);
    assert!(fill < at(&Step::RunContainer("app".into())), "{groups:?}");
    assert!(!converged(&d, &host(&d, false, true)), "an incomplete source is not converged");
}

#[test]
fn a_present_but_incomplete_volume_is_filled_again_a_complete_one_is_not() {
    let d = desired_at('a');
    assert_eq!(plan(&d, &host(&d, false, false)), [Step::FillSource("app".into()), Step::RunContainer("app".into())]);
    assert_eq!(plan(&d, &host(&d, false, true)), [Step::FillSource("app".into())]);
    assert_eq!(plan(&d, &host(&d, true, false)), [Step::RunContainer("app".into())]);
    assert_eq!(plan(&d, &host(&d, true, true)), []);
    assert!(converged(&d, &host(&d, true, true)));
}

#[test]
fn an_older_commits_volume_goes_once_its_container_is_gone() {
    let old = desired_at('a');
    let new = desired_at('b');
    let mut o = host(&old, true, true);
    o.volumes.insert(volume(&new));
    o.complete_sources.insert(volume(&new));
    o.images.insert(new.services[0].container.image.clone());
    // The old container still runs: it is replaced, its volume stays.
    let steps = plan(&new, &o);
    assert!(steps.contains(&Step::RunContainer("app".into())), "{steps:?}");
    assert!(!steps.contains(&Step::RemoveVolume(volume(&old))), "{steps:?}");
    // Replaced: the old volume goes.
    o.containers = vec![container(&new, "app", State::Running, None)];
    assert_eq!(plan(&new, &o), [Step::RemoveVolume(volume(&old))]);
    // A Compose volume that is not desired any more is not a source: kept.
    o.source_volumes.clear();
    assert_eq!(plan(&new, &o), []);
}

#[test]
fn persist_volumes_keeps_no_source_volume() {
    let mut d = desired_at('a');
    d.persist_volumes = true;
    let mut o = host(&d, true, true);
    o.volumes.insert("play-7-pr-7_data".into());
    let steps = destroy_plan(&o, true);
    assert!(steps.contains(&Step::RemoveVolume(volume(&d))), "{steps:?}");
    assert!(!steps.contains(&Step::RemoveVolume("play-7-pr-7_data".into())), "{steps:?}");
    // A hard restart (a newer epoch) removes the old epoch's source too.
    o.containers.clear();
    o.volume_epochs.insert("play-7-pr-7_data".into(), d.epoch);
    d.epoch += 1;
    assert_eq!(teardown(&d, &o), [Step::RemoveVolume(volume(&d))]);
}
