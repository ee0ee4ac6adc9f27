use crate::desired::Desired;

const WITH_LABEL: &str =
    "services:\n  web:\n    build: .\n    labels:\n      svc/source_mount: /app/\n  db:\n    image: postgres:16\n";

/// The desired state of `yaml` with `web` pinned to `commit` (or unpinned).
fn desired_of(yaml: &str, commit: Option<char>) -> Result<Desired, String> {
    let pins = commit.map(|c| crate::testing::pin("web", c)).into_iter().collect();
    crate::testing::pinned_desired(&crate::testing::playground(), yaml, pins)
}

#[test]
fn a_pinned_service_with_the_label_mounts_its_commit_volume() {
    let d = desired_of(WITH_LABEL, Some('a')).unwrap();
    let web = d.services.iter().find(|s| s.name == "web").unwrap();
    let source = &web.sources[0];
    let volume = format!("{}__src-web-aaaaaaaaaaaa", d.project);
    assert_eq!(source.volume, volume);
    assert_eq!((source.branch.as_str(), source.commit.as_str()), ("main", "a".repeat(40).as_str()));
    assert_eq!(source.mount_path, "/app");
    let mount = web.container.mounts.iter().find(|m| m.target == "/app").unwrap();
    assert_eq!((mount.kind, mount.source.as_deref(), mount.read_only), ("volume", Some(volume.as_str()), false));
    let spec = d.volumes.iter().find(|v| v.name == volume).unwrap();
    assert!(crate::desired::is_source_key(&spec.key), "{}", spec.key);
}

#[test]
fn another_commit_is_another_volume_and_another_config_hash() {
    let a = desired_of(WITH_LABEL, Some('a')).unwrap();
    let b = desired_of(WITH_LABEL, Some('b')).unwrap();
    let web = |d: &Desired| d.services.iter().find(|s| s.name == "web").unwrap().clone();
    assert_ne!(web(&a).sources[0].volume, web(&b).sources[0].volume);
    assert_ne!(web(&a).config_hash, web(&b).config_hash);
    let db = |d: &Desired| d.services.iter().find(|s| s.name == "db").unwrap().config_hash.clone();
    assert_eq!(db(&a), db(&b), "only the built service changes");
    assert!(!b.volumes.iter().any(|v| v.name == web(&a).sources[0].volume), "the old volume is not desired");
}

#[test]
fn no_label_or_no_pin_means_no_source() {
    let without = WITH_LABEL.replace("    labels:\n      svc/source_mount: /app/\n", "");
    let d = desired_of(&without, Some('a')).unwrap();
    assert!(d.services.iter().all(|s| s.sources.is_empty()));
    assert!(!d.volumes.iter().any(|v| crate::desired::is_source_key(&v.key)));
    assert!(d.services.iter().all(|s| s.container.mounts.is_empty()));
    let unpinned = desired_of(WITH_LABEL, None).unwrap();
    assert!(unpinned.services.iter().all(|s| s.sources.is_empty()));
    assert!(unpinned.volumes.is_empty());
}

#[test]
fn the_label_must_be_an_absolute_container_path() {
    for bad in ["app", "/app/../etc", "/"] {
        let yaml = WITH_LABEL.replace("/app/", bad);
        let err = desired_of(&yaml, Some('a')).unwrap_err();
        assert!(err.contains("svc/source_mount"), "{bad}: {err}");
    }
}

/// A repository's Compose file as people write it: a config file, a source
/// folder and a secret, all relative.
const PROJECT: &str = "services:
  web:
    build: ./app
    volumes:
      - ./nginx/default.conf:/etc/nginx/conf.d/default.conf:ro
      - ./app:/code
    secrets:
      - db_password
  db:
    image: postgres:16
    volumes:
      - ./db/init:/docker-entrypoint-initdb.d
    secrets:
      - db_password
secrets:
  db_password:
    file: ./db/password.txt
";

fn service<'d>(d: &'d Desired, name: &str) -> &'d crate::desired::ServiceSpec {
    d.services.iter().find(|s| s.name == name).unwrap()
}

#[test]
fn relative_sources_come_from_the_repository_at_the_pinned_commit() {
    use crate::compose::project_files::Expect;
    use crate::desired::{SourceBind, SourceLayout, entry_key};
    let d = desired_of(PROJECT, Some('a')).unwrap();
    let web = service(&d, "web");
    let paths: Vec<(&str, &str, bool)> =
        web.sources.iter().map(|s| (s.path.as_str(), s.mount_path.as_str(), s.read_only)).collect();
    assert_eq!(
        paths,
        [
            ("nginx/default.conf", "/etc/nginx/conf.d/default.conf", true),
            ("app", "/code", false),
            ("db/password.txt", "/run/secrets/db_password", true),
        ]
    );
    assert_eq!(web.sources[2].layout, SourceLayout::Entry { expect: Expect::File });
    assert_eq!(web.sources[1].layout, SourceLayout::Entry { expect: Expect::FileOrFolder });
    let commit = "a".repeat(40);
    let volume = format!("{}_{}", d.project, entry_key(&commit, "app"));
    assert_eq!(web.sources[1].volume, volume);
    assert!(web.container.source_binds.contains(&SourceBind { volume, target: "/code".into(), read_only: false }));
    // None of them is a host bind of the path as written.
    assert!(web.container.mounts.iter().all(|m| m.kind != "bind"), "{:?}", web.container.mounts);
    // The static service reads the same repository (the project's) and
    // shares the secret's volume with `web`.
    let db = service(&d, "db");
    assert_eq!(db.sources.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(), ["db/init", "db/password.txt"]);
    assert_eq!(db.sources[1].volume, web.sources[2].volume);
    assert!(db.sources.iter().all(|s| s.commit == commit));
    let volumes: Vec<&str> = d.volumes.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(volumes.len(), 4, "one volume per path and commit: {volumes:?}");
    assert!(d.volumes.iter().all(|v| crate::desired::is_source_key(&v.key)));
}

#[test]
fn a_new_commit_changes_the_services_that_read_the_repository() {
    let a = desired_of(PROJECT, Some('a')).unwrap();
    let b = desired_of(PROJECT, Some('b')).unwrap();
    for name in ["web", "db"] {
        assert_ne!(service(&a, name).config_hash, service(&b, name).config_hash, "{name}");
    }
    let plain = PROJECT
        .replace("      - ./db/init:/docker-entrypoint-initdb.d\n", "")
        .replace("    secrets:\n      - db_password\nsecrets:", "secrets:");
    let (a, b) = (desired_of(&plain, Some('a')).unwrap(), desired_of(&plain, Some('b')).unwrap());
    assert!(service(&a, "db").sources.is_empty());
    assert_eq!(service(&a, "db").config_hash, service(&b, "db").config_hash, "db reads nothing of the repository");
}

#[test]
fn a_mounted_file_with_the_path_wins_over_the_repository() {
    use crate::model::playspec::MountedFile;
    let playground = crate::testing::playground();
    let model = crate::desired::model_for(PROJECT, &crate::compose::Policy::UNTRUSTED, &playground).unwrap();
    let definitions = crate::compose::classify(&model);
    let urls = [(7, "https://git.example.org/app.git".to_owned())].into();
    let pins = vec![crate::testing::pin("web", 'a')];
    let builds = crate::build::specs(
        &crate::testing::playground(),
        &model,
        &definitions,
        &crate::build::Sources { pins, urls, ..Default::default() },
    )
    .unwrap();
    let now = crate::time::now();
    let files = [MountedFile {
        id: 3,
        name: "pw".into(),
        mount_path: "/uploaded/pw".into(),
        path: Some("db/password.txt".into()),
        target_services: Vec::new(),
        readonly: true,
        size: 2,
        sha256: "0".repeat(64),
        created_at: now,
        updated_at: now,
    }];
    let inputs = crate::desired::Inputs::new(&playground, &model)
        .with_definitions(&definitions)
        .with_builds(&builds)
        .with_files(&files);
    let d = crate::desired::desired(&inputs).unwrap();
    let web = service(&d, "web");
    assert!(web.sources.iter().all(|s| s.path != "db/password.txt"));
    assert!(web.container.files.iter().any(|f| f.file_id == 3 && f.target == "/run/secrets/db_password"));
}

#[test]
fn an_unpinned_playground_gets_no_repository_files_yet() {
    let d = desired_of(PROJECT, None).unwrap();
    assert!(d.services.iter().all(|s| s.sources.is_empty() && s.container.source_binds.is_empty()));
}

#[test]
fn a_playspecs_own_repository_serves_a_compose_file_without_built_services() {
    let yaml =
        "services:\n  prometheus:\n    image: prom/prometheus\n    volumes:\n      - ./prometheus:/etc/prometheus\n";
    let playground = crate::testing::playground();
    // Validation: refused without a repository, deferred with one.
    let untrusted = crate::compose::Policy::UNTRUSTED;
    assert!(crate::desired::model_for(yaml, &untrusted, &playground).is_err());
    let policy = crate::compose::Policy::UNTRUSTED.with_repository(true);
    let model = crate::desired::model_for(yaml, &policy, &playground).unwrap();
    let mut project = crate::testing::pin(crate::build::PROJECT_PIN, 'c');
    project.branch = "trunk".into();
    let inputs = crate::desired::Inputs::new(&playground, &model).with_project(Some(&project));
    let d = crate::desired::desired(&inputs).unwrap();
    let prometheus = service(&d, "prometheus");
    assert_eq!(prometheus.sources.len(), 1);
    let source = &prometheus.sources[0];
    assert_eq!((source.path.as_str(), source.branch.as_str()), ("prometheus", "trunk"));
    assert_eq!(source.commit, "c".repeat(40));
    assert!(prometheus.container.mounts.iter().all(|m| m.kind != "bind"));
    // A built service's repository wins over the Playspec's for the others.
    let both = format!("{yaml}  app:\n    build: .\n");
    let model = crate::desired::model_for(&both, &policy, &playground).unwrap();
    let definitions = crate::compose::classify(&model);
    let urls = [(7, "https://git.example.org/app.git".to_owned())].into();
    let pins = vec![crate::testing::pin("app", 'a')];
    let builds = crate::build::specs(
        &crate::testing::playground(),
        &model,
        &definitions,
        &crate::build::Sources { pins, urls, ..Default::default() },
    )
    .unwrap();
    let inputs = crate::desired::Inputs::new(&playground, &model)
        .with_definitions(&definitions)
        .with_builds(&builds)
        .with_project(Some(&project));
    let d = crate::desired::desired(&inputs).unwrap();
    assert_eq!(service(&d, "prometheus").sources[0].commit, "a".repeat(40));
}
