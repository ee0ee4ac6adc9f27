//! The plan under rollout and hard restart: a hard restart (a new restart
//! epoch) tears down every older container, then older volumes unless they
//! persist, then provisions afresh pulling every image; a rollout (same
//! epoch) touches only what changed.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use play_model::compose::{Policy, parse_compose};
use play_model::desired::{self, Desired, Inputs};
use play_model::playground::Playground;

use super::*;

const COMPOSE: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: sleep 3600
    volumes: ["data:/data"]
  web:
    image: play-test/busybox:1
    command: ["httpd", "-f", "-p", "80"]
volumes:
  data: {}
"#;

fn playground(epoch: i64, pulled: i64, env: &[(&str, &str)]) -> Playground {
    let mut p = play_model::testing::playground();
    p.restart_epoch = epoch;
    p.pulled_epoch = pulled;
    p.env_overrides = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    p
}

fn desired_for(p: &Playground, persist: bool) -> Desired {
    let model = parse_compose(COMPOSE, &Policy::UNTRUSTED).1.unwrap();
    desired::desired(&Inputs::new(p, &model).with_persist_volumes(persist)).unwrap()
}

/// Everything of `d` on the host, running, made in `epoch`.
fn host_of(d: &Desired, epoch: i64) -> Observed {
    Observed {
        networks: d.networks.iter().map(|n| n.name.clone()).collect(),
        volumes: d.volumes.iter().map(|v| v.name.clone()).collect(),
        volume_epochs: d.volumes.iter().map(|v| (v.name.clone(), epoch)).collect(),
        source_volumes: Default::default(),
        source_created: Default::default(),
        complete_sources: Default::default(),
        images: d.services.iter().map(|s| s.container.image.clone()).collect(),
        containers: d
            .services
            .iter()
            .map(|s| ObservedContainer {
                id: format!("id-{}", s.name),
                name: s.container_name.clone(),
                service: Some(s.name.clone()),
                config_hash: Some(s.config_hash.clone()),
                epoch,
                state: State::Running,
                health: None,
                finished_at: None,
            })
            .collect(),
        shared_networks: Vec::new(),
    }
}

#[test]
fn a_new_epoch_changes_every_hash_and_labels_it() {
    let before = desired_for(&playground(0, 0, &[]), false);
    let after = desired_for(&playground(1, 0, &[]), false);
    for (b, a) in before.services.iter().zip(&after.services) {
        assert_ne!(b.config_hash, a.config_hash, "{}", a.name);
        assert_eq!(a.labels(&after)[desired::LABEL_EPOCH], "1");
    }
    assert!(after.force_pull && !before.force_pull);
    // Epoch 0 leaves the hash as it was before epochs existed: no field.
    let json = serde_json::to_string(&before.services[0].container).unwrap();
    assert!(!json.contains("epoch"), "{json}");
}

#[test]
fn hard_restart_tears_down_containers_then_volumes_then_provisions_with_pulls() {
    let old = desired_for(&playground(0, 0, &[]), false);
    let new = desired_for(&playground(1, 0, &[]), false);
    let mut host = host_of(&old, 0);

    // 1. Every old container goes, and nothing else happens yet.
    let steps = plan(&new, &host);
    assert_eq!(steps.len(), 2);
    assert!(steps.iter().all(|s| matches!(s, Step::RemoveContainer { .. })), "{steps:?}");

    // 2. Containers gone: the old volume goes (data is not kept).
    host.containers.clear();
    assert_eq!(plan(&new, &host), vec![Step::RemoveVolume("play-3fa91c-7-pr-7_data".into())]);

    // 3. Clean: provision afresh, pulling the present image again.
    host.volumes.clear();
    host.volume_epochs.clear();
    let steps = plan(&new, &host);
    assert!(steps.contains(&Step::CreateVolume("play-3fa91c-7-pr-7_data".into())));
    assert!(steps.contains(&Step::PullImage("play-test/busybox:1".into())));
    assert!(steps.contains(&Step::RunContainer("db".into())));

    // 4. Once pulled (pulled_epoch = 1) a present image is not pulled again.
    let pulled = desired_for(&playground(1, 1, &[]), false);
    assert!(!plan(&pulled, &host).iter().any(|s| matches!(s, Step::PullImage(_))));

    // 5. The new epoch converged: nothing to do.
    assert!(plan(&pulled, &host_of(&pulled, 1)).is_empty());
}

#[test]
fn persisted_volumes_survive_a_hard_restart() {
    let old = desired_for(&playground(0, 0, &[]), true);
    let new = desired_for(&playground(1, 1, &[]), true);
    let mut host = host_of(&old, 0);
    host.containers.clear();
    let steps = plan(&new, &host);
    assert!(!steps.iter().any(|s| matches!(s, Step::RemoveVolume(_) | Step::CreateVolume(_))), "{steps:?}");
    assert!(steps.contains(&Step::RunContainer("db".into())));
}

#[test]
fn a_rollout_recreates_only_what_changed_and_pulls_nothing_present() {
    let old = desired_for(&playground(0, 0, &[]), false);
    let host = host_of(&old, 0);
    // A changed override reaches every service's env: both are replaced
    // (one removal + one run each), volumes and images untouched.
    let new = desired_for(&playground(0, 0, &[("MODE", "x")]), false);
    let steps = plan(&new, &host);
    assert!(!steps.iter().any(|s| matches!(s, Step::PullImage(_) | Step::RemoveVolume(_))), "{steps:?}");
    assert_eq!(steps.iter().filter(|s| matches!(s, Step::RunContainer(_))).count(), 2);
    // Nothing changed: nothing to do.
    assert!(plan(&old, &host).is_empty());
}
