use super::*;
use crate::compose::Policy;

/// The fixture Playground with `env` as its overrides.
pub(crate) fn playground(env: &[(&str, &str)]) -> Playground {
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

/// `svc/start_command` replaces the Compose `command` (split as Compose
/// splits a string), and a change of it changes the config hash, so the
/// service rolls out (issue #52, item 1); empty, the Compose command runs.
#[test]
fn the_start_command_label_replaces_the_command_and_rolls_the_service() {
    let run = |label: &str| {
        let yaml = format!(
            "services:\n  web:\n    image: busybox\n    command: [\"sleep\", \"1\"]\n    labels:\n      svc/start_command: '{label}'\n"
        );
        let p = playground(&[]);
        let model = model_for(&yaml, &Policy::UNTRUSTED, &p).unwrap();
        desired(&Inputs::new(&p, &model)).unwrap().services.remove(0)
    };
    let words = |v: &[&str]| v.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    let started = run(r#"httpd -f -p 8080 -h "/www root""#);
    assert_eq!(started.container.command, Some(words(&["httpd", "-f", "-p", "8080", "-h", "/www root"])));
    let other = run("httpd -f -p 9090");
    assert_ne!(started.config_hash, other.config_hash, "a new start command rolls the service out");
    assert_eq!(run("  ").container.command, Some(words(&["sleep", "1"])), "empty: the Compose command");
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
    assert_eq!(d.services[0].container_name, crate::playground::model::container_name(&p.compose_project, "web"));
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
    let file = |id: i64, path: &str, targets: &[&str], sha: &str| crate::model::playspec::MountedFile {
        id,
        name: "f".into(),
        mount_path: path.into(),
        path: None,
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
    let rel = &web.container.files[1].rel_path;
    assert!(rel.len() == 29 && rel.ends_with("/file") && !rel.contains("1-"), "{rel}");
    assert!(d.volumes.iter().any(|v| v.name == files_volume(&p.compose_project)));

    // New content for web's file: web's hash changes, db's does not.
    let changed = [file(1, "/etc/web.conf", &["web"], "cccccccccccccccc"), files[1].clone()];
    let d2 = desired(&Inputs::new(&p, &model).with_files(&changed)).unwrap();
    let hash = |d: &Desired, n: &str| d.services.iter().find(|s| s.name == n).unwrap().config_hash.clone();
    assert_ne!(hash(&d, "web"), hash(&d2, "web"));
    assert_eq!(hash(&d, "db"), hash(&d2, "db"));

    // The same files as new rows (another revision of the Playspec, as
    // `play apply` makes it): same paths, same hashes, nothing replaced.
    let copies =
        [file(11, "/etc/web.conf", &["web"], "aaaaaaaaaaaaaaaa"), file(12, "/etc/all.conf", &[], "bbbbbbbbbbbbbbbb")];
    let d3 = desired(&Inputs::new(&p, &model).with_files(&copies)).unwrap();
    for name in ["web", "db"] {
        assert_eq!(hash(&d, name), hash(&d3, name), "{name}");
    }
    let paths = |d: &Desired| {
        d.services.iter().flat_map(|s| s.container.files.iter().map(|f| f.rel_path.clone())).collect::<Vec<_>>()
    };
    assert_eq!(paths(&d), paths(&d3));
    assert_eq!(web.container.files[1].file_id, 1, "the reconciler still knows which row to write");

    // The same content at two places: two files, so a writable one is
    // never shared.
    let twins = [file(1, "/etc/a.conf", &[], "aaaaaaaaaaaaaaaa"), file(2, "/etc/b.conf", &[], "aaaaaaaaaaaaaaaa")];
    let d4 = desired(&Inputs::new(&p, &model).with_files(&twins)).unwrap();
    let files = &d4.services[0].container.files;
    assert_ne!(files[0].rel_path, files[1].rel_path);

    // Issue #27, item 9: the same content at the same place, once
    // read-only and once writable, or for other services, is two files:
    // a service that may write its copy never changes what another
    // service (or an old container of another revision) reads.
    let base = file(1, "/etc/a.conf", &["web"], "aaaaaaaaaaaaaaaa");
    let mut writable = base.clone();
    writable.readonly = !base.readonly;
    let mut elsewhere = base.clone();
    elsewhere.target_services = vec!["web".into(), "db".into()];
    let place = |f: &crate::model::playspec::MountedFile| super::files::rel_path(f, f.readonly);
    assert_ne!(place(&base), place(&writable));
    assert_ne!(place(&base), place(&elsewhere));
    let mut reordered = elsewhere.clone();
    reordered.target_services.reverse();
    assert_eq!(place(&elsewhere), place(&reordered), "the order says nothing");
    // Issue #49, item 12: a read-only mount of the writable file is a third
    // place. The first two are issue #27's, unchanged (pinned), so an
    // upgrade replaces no container that mounts a file as the file allows.
    let view = super::files::rel_path(&writable, true);
    assert!(view != place(&writable) && view != place(&base), "{view}");
    assert_eq!(place(&base), "e54943a2a7fecdec35d5eb2e/file");
    assert_eq!(place(&writable), "fce569db8c6fc6cf5c2d1aa5/file");
    assert_eq!(super::files::rel_path(&base, false), place(&base), "a read-only file is never mounted writable");

    // No files: no files volume.
    assert!(desired(&Inputs::new(&p, &model)).unwrap().volumes.is_empty());
}

/// A mounted file with a project path, for the web service only.
fn project_file(id: i64, path: &str, readonly: bool) -> crate::model::playspec::MountedFile {
    let now = crate::time::now();
    crate::model::playspec::MountedFile {
        id,
        name: "f".into(),
        mount_path: format!("/uploaded/{id}"),
        path: Some(path.into()),
        target_services: vec!["web".into()],
        readonly,
        size: 1,
        sha256: format!("{id:016}"),
        created_at: now,
        updated_at: now,
    }
}

#[test]
fn relative_sources_become_mounted_files_at_their_compose_targets() {
    let yaml = r#"
services:
  web:
    image: x
    volumes:
      - ./nginx.conf:/etc/app/app.conf
      - ./site:/srv/site:ro
      - data:/data
    secrets: [db_password]
    configs:
      - source: app
        target: /etc/app.ini
  db:
    image: y
    secrets: [db_password]
volumes:
  data:
secrets:
  db_password:
    file: ./db_password.txt
configs:
  app:
    file: app.ini
"#;
    let files = [
        project_file(1, "nginx.conf", false),
        project_file(2, "site/index.html", false),
        project_file(3, "db_password.txt", false),
        project_file(4, "app.ini", true),
    ];
    let p = playground(&[]);
    let policy = Policy::UNTRUSTED.with_project_files(files.iter().map(|f| f.path.as_deref()));
    let model = model_for(yaml, &policy, &p).unwrap();
    let d = desired(&Inputs::new(&p, &model).with_files(&files)).unwrap();
    let service = |n: &str| d.services.iter().find(|s| s.name == n).unwrap();
    let files_of = |n: &str| {
        service(n).container.files.iter().map(|f| (f.file_id, f.target.clone(), f.read_only)).collect::<Vec<_>>()
    };
    assert_eq!(
        files_of("web"),
        [
            (4, "/etc/app.ini".to_owned(), true),
            (1, "/etc/app/app.conf".to_owned(), false),
            (3, "/run/secrets/db_password".to_owned(), true),
            (2, "/srv/site/index.html".to_owned(), true),
            (1, "/uploaded/1".to_owned(), false),
            (2, "/uploaded/2".to_owned(), false),
            (3, "/uploaded/3".to_owned(), false),
            (4, "/uploaded/4".to_owned(), true),
        ]
    );
    // Issue #49, item 12: file 2 is writable at /uploaded/2 and `:ro` at
    // /srv/site: two places, so web's writes there never show under /srv.
    let place = |target: &str| {
        service("web").container.files.iter().find(|f| f.target == target).map(|f| f.rel_path.clone()).unwrap()
    };
    assert_ne!(place("/srv/site/index.html"), place("/uploaded/2"));
    assert_eq!(place("/etc/app/app.conf"), place("/uploaded/1"), "both writable: one copy, as in Compose");
    // The Compose file, not `target_services`, decides who gets a file it names.
    assert_eq!(files_of("db"), [(3, "/run/secrets/db_password".to_owned(), true)]);
    // Resolved binds are no host binds; the named volume stays.
    let mounts: Vec<_> = service("web").container.mounts.iter().map(|m| (m.kind, m.target.as_str())).collect();
    assert_eq!(mounts, [("volume", "/data")]);
    // Without its files the Compose cannot run on an untrusted Playroom.
    assert!(model_for(yaml, &Policy::UNTRUSTED, &p).unwrap_err().contains("add_mounted_file"));
}

/// Issue #49, item 12, as tried from outside: one writable file that `rw`
/// binds writable and `ro` binds `:ro`. The two got one place in the files
/// volume, so `ro` read what `rw` wrote; now `ro` has a copy of its own,
/// shared with no writer, and `rw`'s place is what it was.
#[test]
fn a_read_only_mount_never_shares_a_place_with_a_writable_one() {
    let yaml = r#"
services:
  rw:
    image: x
    volumes: ["./app.conf:/conf/app.conf"]
  ro:
    image: x
    volumes: ["./app.conf:/conf/app.conf:ro"]
    secrets: [app]
  other:
    image: x
secrets:
  app:
    file: ./app.conf
"#;
    let mut file = project_file(1, "app.conf", false);
    file.mount_path = "/conf/app.conf".into();
    file.target_services = vec!["rw".into()];
    let files = [file];
    let p = playground(&[]);
    let policy = Policy::UNTRUSTED.with_project_files(files.iter().map(|f| f.path.as_deref()));
    let model = model_for(yaml, &policy, &p).unwrap();
    let d = desired(&Inputs::new(&p, &model).with_files(&files)).unwrap();
    let mounts = |n: &str| {
        let service = d.services.iter().find(|s| s.name == n).unwrap();
        service.container.files.iter().map(|f| (f.target.clone(), f.rel_path.clone(), f.read_only)).collect::<Vec<_>>()
    };
    let writable = super::files::rel_path(&files[0], false);
    let view = super::files::rel_path(&files[0], true);
    assert_ne!(writable, view);
    assert_eq!(mounts("rw"), [("/conf/app.conf".to_owned(), writable.clone(), false)]);
    assert_eq!(
        mounts("ro"),
        [("/conf/app.conf".to_owned(), view.clone(), true), ("/run/secrets/app".to_owned(), view, true)],
        "every read-only mount of the file reads the copy nothing writes"
    );
    assert!(mounts("other").is_empty());
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
    let settings = crate::playground::model::ServiceSettings {
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

#[test]
fn an_env_file_is_the_lowest_layer_and_its_generated_keys_are_listed() {
    use crate::build::EnvFileValues;
    let p = env_playground();
    let model = model_for(ENV_COMPOSE, &Policy::UNTRUSTED, &p).unwrap();
    let file = |pairs: &[(&str, &str)], generated: &[&str]| EnvFileValues {
        values: pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        generated: generated.iter().map(|k| (*k).to_owned()).collect(),
    };
    let env_files = BTreeMap::from([
        (
            "web".to_owned(),
            file(
                &[("DB_PASSWORD", "generated-pw"), ("SHARED", "from-file"), ("MODE", "file"), ("API_TOKEN", "g2")],
                &["DB_PASSWORD", "API_TOKEN", "MODE"],
            ),
        ),
        ("worker".to_owned(), file(&[("API_TOKEN", "g2")], &["API_TOKEN"])),
    ]);
    let inputs = Inputs::new(&p, &model).with_env_files(&env_files);
    let d = desired(&inputs).unwrap();
    let web = &d.services.iter().find(|s| s.name == "web").unwrap().container;
    assert_eq!(web.env["DB_PASSWORD"], "generated-pw", "the env file's value");
    assert_eq!(web.env["SHARED"], "from-web", "Compose's environment wins over the env file");
    assert_eq!(web.env["MODE"], "override", "env_overrides win over both");
    let env = env_metadata(&inputs, Some("web")).unwrap();
    assert_eq!(env.merged, web.env, "env_metadata is the container's environment");
    assert_eq!(env.metadata["DB_PASSWORD"].source, EnvSource::Default);
    // MODE was generated by the file but replaced by an override.
    assert_eq!(env.generated_keys, ["API_TOKEN", "DB_PASSWORD"]);
    let all = env_metadata(&inputs, None).unwrap();
    assert_eq!(all.generated_keys, ["API_TOKEN", "DB_PASSWORD"]);
    // The env file changes the config hash (a new value recreates it).
    let plain = desired(&Inputs::new(&p, &model)).unwrap();
    assert_ne!(plain.services[0].config_hash, d.services[0].config_hash);
}

/// Issue #27, item 4: `network_mode: bridge` put a tenant's container on
/// the engine's default bridge, beside every other tenant's bridge-mode
/// containers and the classic builder's. On an untrusted Playroom it runs
/// on the project's default network; a trusted one keeps the bridge.
#[test]
fn bridge_mode_is_the_project_network_on_an_untrusted_playroom() {
    let p = playground(&[]);
    let yaml = "services:\n  web:\n    image: x\n    network_mode: bridge\n";
    let report = crate::compose::validate_compose(yaml, &Policy::UNTRUSTED);
    assert!(report.valid && report.warnings.iter().any(|w| w.path == "services.web.network_mode"), "{report:?}");
    let model = model_for(yaml, &Policy::UNTRUSTED, &p).unwrap();
    let d = desired(&Inputs::new(&p, &model)).unwrap();
    let web = &d.services[0].container;
    assert_eq!(web.network_mode, None);
    assert_eq!(web.networks.keys().cloned().collect::<Vec<_>>(), [format!("{}_default", p.compose_project)]);
    assert!(d.networks.iter().any(|n| n.name == format!("{}_default", p.compose_project)));

    let model = model_for(yaml, &Policy::TRUSTED, &p).unwrap();
    let d = desired(&Inputs::new(&p, &model)).unwrap();
    assert_eq!(d.services[0].container.network_mode.as_deref(), Some("bridge"), "trusted: as written");
}

#[test]
fn stop_signal_and_init_are_applied_and_leave_other_hashes_alone() {
    let p = playground(&[]);
    let hash_of = |yaml: &str| {
        let model = model_for(yaml, &Policy::UNTRUSTED, &p).unwrap();
        let d = desired(&Inputs::new(&p, &model)).unwrap();
        (d.services[0].config_hash.clone(), d.services[0].container.clone())
    };
    let (plain, container) = hash_of("services:\n  web:\n    image: x\n");
    assert_eq!((&container.stop_signal, container.init), (&None, None));
    // The hash of a service without them is what it was before they were
    // typed: no container is recreated by the upgrade.
    assert!(!serde_json::to_string(&container).unwrap().contains("stop_signal"));
    let (with, container) = hash_of("services:\n  web:\n    image: x\n    stop_signal: SIGINT\n    init: true\n");
    assert_eq!((container.stop_signal.as_deref(), container.init), (Some("SIGINT"), Some(true)));
    assert_ne!(plain, with);
    for signal in ["INT", "9", "SIGUSR1", "64"] {
        let model = model_for(
            &format!("services:\n  web:\n    image: x\n    stop_signal: \"{signal}\"\n"),
            &Policy::UNTRUSTED,
            &p,
        );
        assert!(model.is_ok(), "{signal}");
    }
    for signal in ["SIGNOPE", "0", "65", "TERM; rm -rf /", ""] {
        let model = model_for(
            &format!("services:\n  web:\n    image: x\n    stop_signal: \"{signal}\"\n"),
            &Policy::UNTRUSTED,
            &p,
        );
        assert!(model.is_err(), "{signal}");
    }
}
