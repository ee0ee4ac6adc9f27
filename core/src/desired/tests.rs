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
