use super::*;
use crate::compose::Policy;

/// The fixture Playground with `env` as its overrides.
fn playground(env: &[(&str, &str)]) -> Playground {
    let mut p = crate::testing::playground();
    p.env_overrides = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    p
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

#[test]
fn a_playspec_may_leave_required_variables_to_its_playgrounds() {
    let yaml = "services:\n  web:\n    image: \"busybox:${TAG:?set TAG}\"\n";
    let blueprint = crate::compose::validate_blueprint(yaml, &Policy::UNTRUSTED);
    assert!(blueprint.valid, "{:?}", blueprint.errors);
    assert!(blueprint.warnings.iter().any(|w| w.message.contains("`TAG` is required")), "{:?}", blueprint.warnings);
    // Outside a blueprint (a Playground's Compose), it is an error.
    assert!(!crate::compose::validate_compose(yaml, &Policy::UNTRUSTED).valid);
}
