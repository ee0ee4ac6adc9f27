#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use play_model::compose::{Policy, parse_compose};
use play_model::playground::{CreationStep, Playground, ServiceSettings, ServiceState};

use super::super::spec::{self, Desired};
use super::*;

const COMPOSE: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: sleep 3600
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
    volumes: ["data:/data"]
  web:
    image: play-test/busybox:1
    command: ["httpd", "-f", "-p", "80"]
    environment:
      MODE: base
    depends_on:
      db:
        condition: service_healthy
    ports: ["8080:80"]
  worker:
    image: play-test/busybox:1
    command: sh -c 'while true; do sleep 1; done'
volumes:
  data: {}
"#;

/// The shared fixture with `env` as overrides, `worker_env` as the worker's
/// variables and the short project name the assertions below use.
pub(crate) fn playground(env: &[(&str, &str)], worker_env: &[(&str, &str)]) -> Playground {
    let mut p = play_model::testing::playground();
    p.env_overrides = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    p.service_settings.insert(
        "worker".to_owned(),
        ServiceSettings {
            env_vars: worker_env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            ..ServiceSettings::default()
        },
    );
    p.compose_project = "play-7-pr-7".into();
    p
}

pub(crate) fn desired_from(compose: &str, p: &Playground) -> Desired {
    let (report, model) = parse_compose(compose, &Policy::UNTRUSTED);
    assert!(report.valid, "{:?}", report.errors);
    spec::desired(&spec::Inputs::new(p, &model.unwrap())).unwrap()
}

fn desired() -> Desired {
    desired_from(COMPOSE, &playground(&[], &[]))
}

pub(crate) fn container(d: &Desired, service: &str, state: State, health: Option<Health>) -> ObservedContainer {
    let s = d.services.iter().find(|s| s.name == service).unwrap();
    ObservedContainer {
        id: format!("id-{service}"),
        name: s.container_name.clone(),
        service: Some(service.into()),
        config_hash: Some(s.config_hash.clone()),
        epoch: d.epoch,
        state,
        health,
        finished_at: None,
    }
}

/// Everything present, running and healthy.
pub(crate) fn converged_observed(d: &Desired) -> Observed {
    Observed {
        networks: d.networks.iter().map(|n| n.name.clone()).collect(),
        volumes: d.volumes.iter().map(|v| v.name.clone()).collect(),
        volume_epochs: d.volumes.iter().map(|v| (v.name.clone(), d.epoch)).collect(),
        source_volumes: d.services.iter().flat_map(|s| &s.sources).map(|s| s.volume.clone()).collect(),
        source_created: Default::default(),
        complete_sources: d.services.iter().flat_map(|s| &s.sources).map(|s| s.volume.clone()).collect(),
        images: d.services.iter().map(|s| s.container.image.clone()).collect(),
        containers: vec![
            container(d, "db", State::Running, Some(Health::Healthy)),
            container(d, "web", State::Running, None),
            container(d, "worker", State::Running, None),
        ],
        shared_networks: d.edge_network.iter().map(|name| edge(name, "edge-1", 10, 1)).collect(),
    }
}

fn edge(name: &str, id: &str, created: i64, endpoints: usize) -> SharedNetwork {
    SharedNetwork { name: name.into(), id: id.into(), created, endpoints }
}

/// COMPOSE with `web` exposed (it publishes a port) on a Playroom with a
/// domain.
pub(crate) fn routed() -> Desired {
    let p = playground(&[], &[]);
    let (report, model) = parse_compose(COMPOSE, &Policy::UNTRUSTED);
    assert!(report.valid, "{:?}", report.errors);
    let model = model.unwrap();
    let definitions = play_model::compose::classify(&model);
    let domains = vec!["apps.example.com".to_owned()];
    let edge = play_model::desired::EdgeInputs {
        settings: play_model::edge::EdgeSettings::default(),
        domains: &domains,
        acme_email: None,
        local: false,
        host: "203.0.113.9",
    };
    spec::desired(&spec::Inputs::new(&p, &model).with_edge(edge).with_definitions(&definitions)).unwrap()
}

#[test]
fn spec_names_objects_like_compose_and_orders_by_dependency() {
    let d = desired();
    let names: Vec<_> = d.services.iter().map(|s| s.container_name.as_str()).collect();
    assert_eq!(names, ["play-7-pr-7-db-1", "play-7-pr-7-web-1", "play-7-pr-7-worker-1"]);
    assert_eq!(d.networks.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["play-7-pr-7_default"]);
    assert_eq!(d.volumes.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["play-7-pr-7_data"]);
    let db = &d.services[0];
    assert_eq!(db.container.mounts[0].source.as_deref(), Some("play-7-pr-7_data"));
    assert_eq!(db.container.networks["play-7-pr-7_default"], ["db"]);
    assert_eq!(db.container.healthcheck.as_ref().unwrap().interval, Some(1_000_000_000));
    let worker = &d.services[2];
    assert_eq!(worker.container.command.as_ref().unwrap(), &["sh", "-c", "while true; do sleep 1; done"]);
    let web = &d.services[1];
    assert_eq!(web.container.ports[0].container_port, "80/tcp");
    assert_eq!(web.container.ports[0].host_port.as_deref(), Some("8080"));
    let labels = web.labels(&d);
    assert_eq!(labels["com.docker.compose.project"], "play-7-pr-7");
    assert_eq!(labels["com.docker.compose.service"], "web");
    assert_eq!(labels["com.docker.compose.oneoff"], "False");
    assert_eq!(labels["dev.play.playground"], "7");
    assert_eq!(labels["com.docker.compose.config-hash"], web.config_hash);
}

#[test]
fn env_layers_compose_then_overrides_then_service_vars_then_system_keys() {
    let p = playground(&[("MODE", "override"), ("PLAY_PLAYGROUND_ID", "spoof")], &[("QUEUE", "q1")]);
    let d = desired_from(COMPOSE, &p);
    let web = d.services.iter().find(|s| s.name == "web").unwrap();
    assert_eq!(web.container.env["MODE"], "override");
    assert_eq!(web.container.env["PLAY_PLAYGROUND_ID"], "7");
    assert_eq!(web.container.env["PLAY_COMPOSE_PROJECT"], "play-7-pr-7");
    assert!(!web.container.env.contains_key("QUEUE"));
    let worker = d.services.iter().find(|s| s.name == "worker").unwrap();
    assert_eq!(worker.container.env["QUEUE"], "q1");
}

#[test]
fn a_changed_env_changes_only_that_services_hash() {
    let before = desired();
    let after = desired_from(COMPOSE, &playground(&[], &[("QUEUE", "q2")]));
    for (b, a) in before.services.iter().zip(&after.services) {
        assert_eq!(b.config_hash == a.config_hash, b.name != "worker", "{}", b.name);
    }
    // Stable: the same desired state hashes the same.
    assert_eq!(desired(), before);
    // The generation is not part of the hash.
    let mut p = playground(&[], &[]);
    p.generation = 5;
    let bumped = desired_from(COMPOSE, &p);
    assert!(before.services.iter().zip(&bumped.services).all(|(b, a)| b.config_hash == a.config_hash));
}

#[test]
fn converged_state_plans_nothing() {
    let d = desired();
    let o = converged_observed(&d);
    assert_eq!(plan(&d, &o), Vec::<Step>::new());
    assert!(converged(&d, &o));
    let status = services_status(&d, &o);
    assert_eq!(status.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["db", "web", "worker"]);
    assert!(status.iter().all(|s| s.running && s.status == ServiceState::Running));
    assert_eq!(status[0].health.as_deref(), Some("healthy"));
    assert_eq!(status[2].health, None);
}

#[test]
fn empty_host_creates_in_dependency_order_and_waits_for_health() {
    let d = desired();
    let steps = plan(&d, &Observed::default());
    assert_eq!(
        steps,
        vec![
            Step::CreateNetwork("play-7-pr-7_default".into()),
            Step::CreateVolume("play-7-pr-7_data".into()),
            Step::PullImage("play-test/busybox:1".into()),
            Step::RunContainer("db".into()),
            Step::Wait { service: "web".into(), on: "db".into(), condition: DependencyCondition::ServiceHealthy },
            Step::RunContainer("worker".into()),
        ]
    );
    assert!(!converged(&d, &Observed::default()));

    // db running but still starting: web still waits; the wait is a
    // healthcheck step.
    let mut o = converged_observed(&d);
    o.containers = vec![
        container(&d, "db", State::Running, Some(Health::Starting)),
        container(&d, "worker", State::Running, None),
    ];
    let steps = plan(&d, &o);
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].creation_step(), CreationStep::Healthcheck);
    // db healthy: web runs.
    o.containers[0].health = Some(Health::Healthy);
    assert_eq!(plan(&d, &o), vec![Step::RunContainer("web".into())]);
}

#[test]
fn present_images_are_not_pulled() {
    let d = desired();
    let mut o = converged_observed(&d);
    o.containers.clear();
    assert!(!plan(&d, &o).iter().any(|s| matches!(s, Step::PullImage(_))));
    o.images.clear();
    assert_eq!(plan(&d, &o).iter().filter(|s| matches!(s, Step::PullImage(_))).count(), 1);
}

#[test]
fn completed_successfully_waits_for_exit_zero() {
    let compose = r#"
services:
  migrate:
    image: play-test/busybox:1
    command: "true"
  app:
    image: play-test/busybox:1
    depends_on:
      migrate:
        condition: service_completed_successfully
"#;
    let d = desired_from(compose, &playground(&[], &[]));
    let mut o = Observed {
        networks: d.networks.iter().map(|n| n.name.clone()).collect(),
        images: ["play-test/busybox:1".to_owned()].into(),
        containers: vec![container(&d, "migrate", State::Running, None)],
        ..Observed::default()
    };
    assert!(matches!(plan(&d, &o).as_slice(), [Step::Wait { on, .. }] if on == "migrate"));
    o.containers[0].state = State::Exited(0);
    assert_eq!(plan(&d, &o), vec![Step::RunContainer("app".into())]);
    o.containers.push(container(&d, "app", State::Running, None));
    assert_eq!(plan(&d, &o), vec![]);
    assert!(converged(&d, &o), "a completed one-shot service counts as done");
}

#[test]
fn drift_a_changed_hash_recreates_only_that_service() {
    let d = desired();
    let mut o = converged_observed(&d);
    o.containers[2].config_hash = Some("old".into());
    assert_eq!(
        plan(&d, &o),
        vec![
            Step::RemoveContainer { id: "id-worker".into(), service: Some("worker".into()) },
            Step::RunContainer("worker".into()),
        ]
    );
    assert!(!converged(&d, &o));
}

#[test]
fn drift_a_missing_or_killed_container_is_run_again() {
    let d = desired();
    let mut o = converged_observed(&d);
    o.containers.retain(|c| c.service.as_deref() != Some("worker"));
    assert_eq!(plan(&d, &o), vec![Step::RunContainer("worker".into())]);

    let mut o = converged_observed(&d);
    o.containers[2].state = State::Exited(137);
    assert_eq!(plan(&d, &o), vec![Step::StartContainer { service: "worker".into(), id: "id-worker".into() }]);
    o.containers[2].state = State::Created;
    assert_eq!(plan(&d, &o), vec![Step::StartContainer { service: "worker".into(), id: "id-worker".into() }]);
}

#[test]
fn never_two_containers_per_service() {
    let d = desired();
    let mut o = converged_observed(&d);
    let mut twin = container(&d, "worker", State::Running, None);
    twin.id = "id-worker-twin".into();
    twin.name = "zz".into();
    o.containers.push(twin);
    assert_eq!(
        plan(&d, &o),
        vec![Step::RemoveContainer { id: "id-worker-twin".into(), service: Some("worker".into()) }]
    );
    assert!(!converged(&d, &o));
    // An outdated twin goes, the current one stays, whatever the order.
    o.containers.pop();
    let mut old = container(&d, "worker", State::Running, None);
    old.id = "id-old".into();
    old.config_hash = Some("old".into());
    o.containers.insert(0, old);
    assert_eq!(plan(&d, &o), vec![Step::RemoveContainer { id: "id-old".into(), service: Some("worker".into()) }]);
}

#[test]
fn containers_of_unknown_services_are_removed() {
    let d = desired();
    let mut o = converged_observed(&d);
    let mut stray = container(&d, "worker", State::Running, None);
    stray.id = "id-stray".into();
    stray.service = Some("cache".into());
    o.containers.push(stray);
    assert_eq!(plan(&d, &o), vec![Step::RemoveContainer { id: "id-stray".into(), service: Some("cache".into()) }]);
}

#[test]
fn build_services_fail_at_image_build() {
    let compose = "services:\n  api:\n    build: ./api\n  web:\n    image: play-test/busybox:1\n";
    let d = desired_from(compose, &playground(&[], &[]));
    let steps = plan(&d, &Observed::default());
    let build = steps.iter().find(|s| matches!(s, Step::BuildUnavailable(_))).unwrap();
    assert_eq!(build, &Step::BuildUnavailable("api".into()));
    assert_eq!(build.creation_step(), CreationStep::ImageBuild);
    assert!(!steps.iter().any(|s| matches!(s, Step::RunContainer(n) if n == "api")));
}

/// A Compose with a built `api` (pinned to commit `c`) that `web` needs.
fn built_desired(commit: char) -> Desired {
    let compose =
        "services:\n  api:\n    build: ./api\n  web:\n    image: play-test/busybox:1\n    depends_on: [api]\n";
    let pins = vec![play_model::testing::pin("api", commit)];
    play_model::testing::pinned_desired(&playground(&[], &[]), compose, pins).unwrap()
}

#[test]
fn a_pinned_build_is_built_when_its_image_is_missing_then_run() {
    let d = built_desired('a');
    let api = d.services.iter().find(|s| s.name == "api").unwrap();
    let image = api.built.as_ref().unwrap().image.clone();
    assert_eq!(api.container.image, image, "the container runs the built image");
    let steps = plan(&d, &Observed::default());
    assert!(steps.contains(&Step::BuildImage("api".into())), "{steps:?}");
    assert_eq!(Step::BuildImage("api".into()).creation_step(), CreationStep::ImageBuild);
    assert!(steps.contains(&Step::RunContainer("api".into())), "a built service runs: {steps:?}");
    assert!(!steps.iter().any(|s| matches!(s, Step::PullImage(i) if i == &image)), "a built image is never pulled");
    // The image on the host: a cache hit, nothing to build.
    let o = Observed { images: [image, "play-test/busybox:1".to_owned()].into(), ..Observed::default() };
    let steps = plan(&d, &o);
    assert!(!steps.iter().any(|s| matches!(s, Step::BuildImage(_))), "{steps:?}");
    assert!(steps.contains(&Step::RunContainer("api".into())));
}

#[test]
fn a_new_commit_recreates_only_the_built_service() {
    let before = built_desired('a');
    let after = built_desired('b');
    let hash = |d: &Desired, name: &str| d.services.iter().find(|s| s.name == name).unwrap().config_hash.clone();
    assert_ne!(hash(&before, "api"), hash(&after, "api"));
    assert_eq!(hash(&before, "web"), hash(&after, "web"));
}

#[test]
fn destroy_removes_everything_labelled_containers_first() {
    let d = desired();
    let o = converged_observed(&d);
    let steps = destroy_plan(&o, false);
    assert_eq!(steps.len(), 5);
    assert!(steps[..3].iter().all(|s| matches!(s, Step::RemoveContainer { .. })));
    assert_eq!(steps[3], Step::RemoveNetwork("play-7-pr-7_default".into()));
    assert_eq!(steps[4], Step::RemoveVolume("play-7-pr-7_data".into()));
    let kept = destroy_plan(&o, true);
    assert!(!kept.iter().any(|s| matches!(s, Step::RemoveVolume(_))));
    assert_eq!(destroy_plan(&Observed::default(), false), vec![]);
}

#[test]
fn words_split_like_a_shell() {
    assert_eq!(spec::split_words(r#"sh -c 'a b' "c \"d\"" e\ f"#), ["sh", "-c", "a b", "c \"d\"", "e f"]);
    assert_eq!(spec::split_words("  "), Vec::<String>::new());
    assert_eq!(spec::split_words("''"), [""]);
}

#[test]
fn dependency_cycles_and_missing_images_are_invalid_specs() {
    let (_, model) = parse_compose("services:\n  a:\n    image: x\n", &Policy::UNTRUSTED);
    let mut model = model.unwrap();
    model.services.get_mut("a").unwrap().image = None;
    assert!(spec::desired(&spec::Inputs::new(&playground(&[], &[]), &model)).unwrap_err().contains("neither"));
}

#[test]
fn the_edge_network_is_created_when_missing_then_nothing() {
    let d = routed();
    assert_eq!(d.edge_network.as_deref(), Some("play-3fa91c-room1-edge"));
    let o = converged_observed(&d);
    assert_eq!(plan(&d, &o), vec![], "an empty plan once it exists");
    assert!(converged(&d, &o));

    let mut missing = o.clone();
    missing.shared_networks.clear();
    assert_eq!(plan(&d, &missing), vec![Step::CreateSharedNetwork("play-3fa91c-room1-edge".into())]);
    assert!(!converged(&d, &missing));
    assert_eq!(Step::CreateSharedNetwork("x".into()).creation_step(), CreationStep::Network);

    // On an empty host it is created with the project networks, before
    // any container runs.
    let groups = super::super::apply::groups(plan(&d, &Observed::default()));
    assert!(groups[0].contains(&Step::CreateSharedNetwork("play-3fa91c-room1-edge".into())), "{groups:?}");
    assert!(groups[0].contains(&Step::CreateNetwork("play-7-pr-7_default".into())), "{groups:?}");

    // Another network whose name merely contains it does not count.
    let mut other = missing.clone();
    other.shared_networks.push(edge("play-3fa91c-room1-edge-old", "x", 1, 0));
    assert_eq!(plan(&d, &other), vec![Step::CreateSharedNetwork("play-3fa91c-room1-edge".into())]);
}

#[test]
fn duplicate_edge_networks_are_removed_keeping_the_attached_then_oldest() {
    let d = routed();
    let mut o = converged_observed(&d);
    o.shared_networks = vec![
        edge("play-3fa91c-room1-edge", "newer", 30, 0),
        edge("play-3fa91c-room1-edge", "attached", 20, 2),
        edge("play-3fa91c-room1-edge", "oldest", 10, 0),
    ];
    let removed = |o: &Observed| -> Vec<String> {
        let mut ids: Vec<String> = plan(&d, o)
            .into_iter()
            .map(|s| match s {
                Step::RemoveSharedNetwork { id, .. } => id,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(removed(&o), ["newer", "oldest"]);
    assert!(!converged(&d, &o));
    for n in &mut o.shared_networks {
        n.endpoints = 0;
    }
    assert_eq!(removed(&o), ["attached", "newer"], "none attached: the oldest stays");
}

#[test]
fn unrouted_playgrounds_leave_shared_networks_alone_and_destroy_never_removes_them() {
    let d = desired();
    assert_eq!(d.edge_network, None);
    let mut o = converged_observed(&d);
    o.shared_networks.push(edge("play-3fa91c-room1-edge", "e", 1, 3));
    assert_eq!(plan(&d, &o), vec![]);
    assert!(converged(&d, &o));

    let routed = routed();
    let o = converged_observed(&routed);
    assert!(!o.shared_networks.is_empty());
    let steps = destroy_plan(&o, false);
    assert!(!steps.iter().any(|s| matches!(s, Step::RemoveNetwork(n) if n.ends_with("-edge"))), "{steps:?}");
    assert!(!steps.iter().any(|s| matches!(s, Step::RemoveSharedNetwork { .. })), "{steps:?}");
}

#[test]
fn a_routed_service_joins_the_edge_network_and_changes_only_its_hash() {
    let plain = desired();
    let d = routed();
    for (a, b) in plain.services.iter().zip(&d.services) {
        assert_eq!(a.config_hash == b.config_hash, a.name != "web", "{}", a.name);
    }
    let web = d.services.iter().find(|s| s.name == "web").unwrap();
    assert!(web.container.networks.contains_key("play-3fa91c-room1-edge"));
    assert!(!web.container.labels.keys().any(|k| k.starts_with("traefik.")), "routes are the edge's config");
}
