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

#[test]
fn mounted_files_go_to_their_services_and_their_content_is_in_the_hash() {
    let now = crate::time::now();
    let file = |id: i64, path: &str, targets: &[&str], sha: &str| crate::store::playspec_files::MountedFile {
        id,
        name: "f".into(),
        mount_path: path.into(),
        target_services: targets.iter().map(|t| (*t).to_owned()).collect(),
        readonly: true,
        size: 1,
        sha256: sha.into(),
        created_at: now,
        updated_at: now,
    };
    let p = playground(&[]);
    let model = model_for("services:\n  web:\n    image: x\n  db:\n    image: y\n", &Policy::UNTRUSTED, &p).unwrap();
    let files =
        [file(1, "/etc/web.conf", &["web"], "aaaaaaaaaaaaaaaa"), file(2, "/etc/all.conf", &[], "bbbbbbbbbbbbbbbb")];
    let d = desired(&Inputs::new(&p, &model).with_files(&files)).unwrap();
    let web = d.services.iter().find(|s| s.name == "web").unwrap();
    let db = d.services.iter().find(|s| s.name == "db").unwrap();
    let targets = |s: &ServiceSpec| s.container.files.iter().map(|f| f.target.clone()).collect::<Vec<_>>();
    assert_eq!(targets(web), ["/etc/all.conf", "/etc/web.conf"]);
    assert_eq!(targets(db), ["/etc/all.conf"]);
    assert_eq!(web.container.files[1].rel_path, "1-aaaaaaaaaaaa/file");
    assert!(d.volumes.iter().any(|v| v.name == files_volume(&p.compose_project)));

    // New content for web's file: web's hash changes, db's does not.
    let changed = [file(1, "/etc/web.conf", &["web"], "cccccccccccccccc"), files[1].clone()];
    let d2 = desired(&Inputs::new(&p, &model).with_files(&changed)).unwrap();
    let hash = |d: &Desired, n: &str| d.services.iter().find(|s| s.name == n).unwrap().config_hash.clone();
    assert_ne!(hash(&d, "web"), hash(&d2, "web"));
    assert_eq!(hash(&d, "db"), hash(&d2, "db"));

    // No files: no files volume.
    assert!(desired(&Inputs::new(&p, &model)).unwrap().volumes.is_empty());
}
