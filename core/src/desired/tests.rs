use std::collections::BTreeMap;

use super::*;
use crate::compose::Policy;

/// A Playground as the store returns it, with `env` as its overrides.
pub(crate) fn playground(env: &[(&str, &str)]) -> Playground {
    let now = crate::time::now();
    Playground {
        installation: "3fa91c0d4e5f6a7b".into(),
        id: 7,
        account_id: 1,
        name: "pr-7".into(),
        status: "in_progress".into(),
        playspec_id: Some(1),
        playspec_name: Some("shop".into()),
        playroom_id: 1,
        job_mode: false,
        watched_services: Vec::new(),
        env_overrides: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        service_subdomains: BTreeMap::new(),
        service_settings: BTreeMap::new(),
        compose_project: "play-3fa91c-7-pr-7".into(),
        desired_state: "running".into(),
        generation: 1,
        observed_generation: 0,
        creation_step: None,
        error_message: None,
        error_step: None,
        needs_recreation: false,
        services: Vec::new(),
        expires_at: None,
        last_applied_at: None,
        created_at: now,
        updated_at: now,
    }
}

#[test]
fn env_overrides_feed_compose_interpolation() {
    let yaml = "services:\n  web:\n    image: \"busybox:${TAG:-1}\"\n    command: [\"echo\", \"${GREETING}\"]\n";
    let p = playground(&[("TAG", "2"), ("GREETING", "hi")]);
    let model = model_for(yaml, &Policy::UNTRUSTED, &p).unwrap();
    let d = desired(&Inputs::new(&p, &model)).unwrap();
    assert_eq!(d.services[0].container.image, "busybox:2");
    assert_eq!(d.services[0].container.command.as_deref(), Some(&["echo".to_owned(), "hi".to_owned()][..]));

    // Without overrides the defaults apply and a changed override changes the hash.
    let bare = playground(&[]);
    let model = model_for(yaml, &Policy::UNTRUSTED, &bare).unwrap();
    let d2 = desired(&Inputs::new(&bare, &model)).unwrap();
    assert_eq!(d2.services[0].container.image, "busybox:1");
    assert_ne!(d.services[0].config_hash, d2.services[0].config_hash);
}

#[test]
fn a_required_variable_left_unset_cannot_run() {
    let yaml = "services:\n  web:\n    image: \"busybox:${TAG:?set TAG}\"\n";
    let err = model_for(yaml, &Policy::UNTRUSTED, &playground(&[])).unwrap_err();
    assert!(err.contains("set TAG"), "{err}");
    assert!(model_for(yaml, &Policy::UNTRUSTED, &playground(&[("TAG", "1")])).is_ok());
}

#[test]
fn container_names_are_the_shared_form() {
    let p = playground(&[]);
    let model = model_for("services:\n  web:\n    image: x\n", &Policy::UNTRUSTED, &p).unwrap();
    let d = desired(&Inputs::new(&p, &model)).unwrap();
    assert_eq!(d.services[0].container_name, crate::store::playgrounds::container_name(&p.compose_project, "web"));
}

const ENV_COMPOSE: &str = r#"
services:
  web:
    image: x
    environment:
      MODE: web
      SHARED: from-web
      FROM_HOST:
  worker:
    image: x
    environment:
      SHARED: from-worker
      QUEUE: default-queue
  tools:
    image: x
    profiles: [debug]
    environment:
      TOOL: "1"
"#;

fn env_playground() -> Playground {
    let mut p = playground(&[("MODE", "override"), ("PLAY_PLAYGROUND_ID", "spoof")]);
    let settings = crate::store::playgrounds::ServiceSettings {
        env_vars: [("QUEUE".to_owned(), "q1".to_owned())].into(),
        ..Default::default()
    };
    p.service_settings.insert("worker".into(), settings);
    p
}

#[test]
fn env_metadata_of_one_service_is_its_container_environment() {
    let p = env_playground();
    let model = model_for(ENV_COMPOSE, &Policy::UNTRUSTED, &p).unwrap();
    let inputs = Inputs::new(&p, &model);
    let d = desired(&inputs).unwrap();
    for service in ["web", "worker"] {
        let env = env_metadata(&inputs, Some(service)).unwrap();
        let container = &d.services.iter().find(|s| s.name == service).unwrap().container;
        assert_eq!(env.merged, container.env, "{service}");
    }
    let worker = env_metadata(&inputs, Some("worker")).unwrap();
    let entry = |name: &str| (worker.metadata[name].value.as_str(), worker.metadata[name].source);
    assert_eq!(entry("QUEUE"), ("q1", EnvSource::Override), "the service's env_vars");
    assert_eq!(entry("SHARED"), ("from-worker", EnvSource::Default));
    assert_eq!(entry("MODE"), ("override", EnvSource::Override), "env_overrides apply to every service");
    assert_eq!(entry("PLAY_PLAYGROUND_ID"), ("7", EnvSource::System), "system keys cannot be overridden");
    assert_eq!(worker.system_keys, SYSTEM_KEYS);
    assert!(worker.generated_keys.is_empty());
    let web = env_metadata(&inputs, Some("web")).unwrap();
    assert!(!web.merged.contains_key("QUEUE"), "another service's env_vars");
    assert!(!web.merged.contains_key("FROM_HOST"), "a bare key is not set by play");
}

#[test]
fn env_metadata_of_the_playground_is_the_union_first_service_winning() {
    let p = env_playground();
    let model = model_for(ENV_COMPOSE, &Policy::UNTRUSTED, &p).unwrap();
    let env = env_metadata(&Inputs::new(&p, &model), None).unwrap();
    assert_eq!(env.metadata["SHARED"], EnvEntry { value: "from-web".into(), source: EnvSource::Default });
    assert_eq!(env.metadata["QUEUE"], EnvEntry { value: "default-queue".into(), source: EnvSource::Default });
    assert_eq!(env.metadata["MODE"].source, EnvSource::Override);
    assert!(!env.merged.contains_key("TOOL"), "a service under a profile does not run");
    assert_eq!(env.merged.len(), env.metadata.len());
    assert!(env.metadata.iter().all(|(k, e)| env.merged[k] == e.value));

    let inputs = Inputs::new(&p, &model);
    assert!(env_metadata(&inputs, Some("nope")).unwrap_err().contains("no service"));
    assert!(env_metadata(&inputs, Some("tools")).unwrap_err().contains("profile"));
}
