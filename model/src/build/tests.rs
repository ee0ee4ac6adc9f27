use super::*;
use crate::compose::Policy;
use crate::compose::classify::classify;

fn service_and_definition(yaml: &str) -> (Service, ServiceDefinition) {
    let playground = crate::testing::playground();
    let file = crate::desired::model_for(yaml, &Policy::UNTRUSTED, &playground).expect("valid compose");
    let definition = classify(&file).remove(0);
    let service = file.services.values().next().expect("a service").clone();
    (service, definition)
}

fn pin(commit: char) -> Pin {
    crate::testing::pin("web", commit)
}

#[test]
fn context_dirs_are_normalised_and_stay_inside() {
    assert_eq!(context_dir(".").unwrap(), "");
    assert_eq!(context_dir("./app/").unwrap(), "app");
    assert_eq!(context_dir("services//api").unwrap(), "services/api");
    for bad in ["/srv/app", "../x", "app/../../x", "https://github.com/a/b.git", "git@github.com:a/b.git"] {
        assert!(context_dir(bad).is_err(), "{bad}");
    }
}

#[test]
fn build_args_from_the_label() {
    assert_eq!(
        parse_build_args("A=1, B=x=y").unwrap(),
        BTreeMap::from([("A".into(), "1".into()), ("B".into(), "x=y".into())])
    );
    assert!(parse_build_args("A").is_err());
}

#[test]
fn the_key_names_everything_the_image_is_made_of() {
    let yaml = "services:\n  web:\n    build:\n      context: ./app\n      dockerfile: Dockerfile.dev\n      target: prod\n      args:\n        MODE: fast\n";
    let (service, definition) = service_and_definition(yaml);
    let spec =
        spec_for(what(&ImageKey::default(), 1, "https://git.example.org/a.git"), &definition, &service, &pin('a'))
            .unwrap();
    assert_eq!(
        (spec.context.as_str(), spec.dockerfile.as_str(), spec.target.as_deref()),
        ("app", "Dockerfile.dev", Some("prod"))
    );
    assert_eq!(spec.args, BTreeMap::from([("MODE".into(), "fast".into())]));
    assert!(spec.image.starts_with("play-build:") && spec.image.len() == "play-build:".len() + 40, "{}", spec.image);
    // Stable for the same inputs; another commit, account, URL or argument
    // names another image.
    let again =
        spec_for(what(&ImageKey::default(), 1, "https://git.example.org/a.git"), &definition, &service, &pin('a'))
            .unwrap();
    assert_eq!(again.key, spec.key);
    // Issue #27, item 7: the name is keyed by the installation's secret:
    // without it, nobody computes the image of a public repository.
    let installation = crate::secrets::MasterKey::generate().secret_box().image_key();
    let keyed =
        spec_for(what(&installation, 1, "https://git.example.org/a.git"), &definition, &service, &pin('a')).unwrap();
    assert_ne!(keyed.key, spec.key, "another installation's key, another name");
    for other in [
        spec_for(what(&ImageKey::default(), 1, "https://git.example.org/a.git"), &definition, &service, &pin('b'))
            .unwrap(),
        spec_for(what(&ImageKey::default(), 2, "https://git.example.org/a.git"), &definition, &service, &pin('a'))
            .unwrap(),
        spec_for(what(&ImageKey::default(), 1, "https://git.example.org/b.git"), &definition, &service, &pin('a'))
            .unwrap(),
    ] {
        assert_ne!(other.key, spec.key);
    }
    let (labelled, def2) = service_and_definition(
        "services:\n  web:\n    build: ./app\n    labels:\n      svc/build_args: MODE=slow\n      svc/build_target: dev\n      svc/dockerfile: Dockerfile.dev\n",
    );
    let by_label =
        spec_for(what(&ImageKey::default(), 1, "https://git.example.org/a.git"), &def2, &labelled, &pin('a')).unwrap();
    assert_eq!((by_label.target.as_deref(), by_label.args["MODE"].as_str()), (Some("dev"), "slow"));
    assert_ne!(by_label.key, spec.key);
}

/// Production mode names another image (the builder targets another
/// stage), and only when on: the keys of every other build stay as they
/// were before the mode existed.
#[test]
fn production_mode_is_part_of_the_key_only_when_on() {
    let (service, definition) = service_and_definition("services:\n  web:\n    build: ./app\n");
    let url = "https://git.example.org/a.git";
    let plain = spec_for(what(&ImageKey::default(), 1, url), &definition, &service, &pin('a')).unwrap();
    let key = ImageKey::default();
    let production = BuildFor { production: true, ..what(&key, 1, url) };
    let production = spec_for(production, &definition, &service, &pin('a')).unwrap();
    assert!(production.production && !plain.production);
    assert_ne!(production.key, plain.key);
    // The key before production mode existed: the same parts, nothing more.
    let count = "0".to_owned();
    let commit = pin('a').commit;
    let parts = ["1", url, &commit, "app", "Dockerfile", "", &count].map(str::as_bytes);
    assert_eq!(plain.key, key.mac_hex(parts));
}

#[test]
fn static_services_have_no_build() {
    let (service, definition) = service_and_definition("services:\n  db:\n    image: postgres:16\n");
    assert!(
        spec_for(what(&ImageKey::default(), 1, "https://x.example/a.git"), &definition, &service, &pin('a')).is_err()
    );
}

#[test]
fn play_build_images_are_reserved() {
    // Every spelling the engine normalises to `docker.io/library/play-build`
    // (issue #27, item 7: `index.docker.io/...` used to pass).
    for image in [
        "play-build:abc",
        "PLAY-BUILD",
        "docker.io/library/play-build:x",
        "play-build@sha256:00",
        "index.docker.io/play-build:k",
        "index.docker.io/library/play-build:k",
        "docker.io/play-build",
        "INDEX.DOCKER.IO/library/play-build:k",
        "play-build:k@sha256:00",
    ] {
        assert!(is_reserved_image(image), "{image}");
    }
    for image in [
        "play-builder:1",
        "registry.example.org/play-build:1",
        "nginx:alpine",
        "localhost:5000/app:1",
        "localhost/play-build:1",
        "team/play-build:1",
    ] {
        assert!(!is_reserved_image(image), "{image}");
    }
}

fn with_env(service: &str, entries: &[(&str, &str)]) -> Pin {
    let mut pin = crate::testing::pin(service, 'a');
    pin.env_file = entries.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    pin
}

#[test]
fn env_files_get_the_generated_values_and_never_a_placeholder() {
    let pins = vec![
        with_env("web", &[("DB_PASSWORD", "$$secret(32)"), ("MODE", "preview"), ("ODD", "$$secret(3)")]),
        with_env("worker", &[("DB_PASSWORD", "$$secret(40)")]),
        crate::testing::pin("plain", 'a'),
    ];
    // One name, one value: the longest length asked for; `$$secret(3)` is
    // out of bounds, so a literal value.
    assert_eq!(secret_lengths(&pins), BTreeMap::from([("DB_PASSWORD".to_owned(), 40)]));
    let mut sources = Sources { pins, ..Default::default() };
    let err = env_files(&sources).unwrap_err();
    assert!(err.contains("DB_PASSWORD") && err.contains("no value"), "{err}");
    sources.generated.insert("DB_PASSWORD".into(), "g".repeat(40));
    let files = env_files(&sources).unwrap();
    assert_eq!(files.len(), 2, "a service without an env file has none");
    assert_eq!(files["web"].values["DB_PASSWORD"], "g".repeat(40));
    assert_eq!(files["web"].values["MODE"], "preview");
    assert_eq!(files["web"].values["ODD"], "$$secret(3)");
    assert_eq!(files["web"].generated, ["DB_PASSWORD"]);
    assert_eq!(files["worker"].values["DB_PASSWORD"], "g".repeat(40));
}

#[test]
fn a_prebuilt_service_pinned_for_its_env_files_is_not_built() {
    let yaml = "services:\n  web:\n    build: .\n  db:\n    image: postgres:16\n    env_file: db.env\n";
    let playground = crate::testing::playground();
    let file = crate::desired::model_for(yaml, &Policy::UNTRUSTED, &playground).unwrap();
    let definitions = classify(&file);
    let urls = [(7, "https://git.example.org/app.git".to_owned())].into();
    let pins = vec![crate::testing::pin("web", 'a'), with_env("db", &[("DB_NAME", "shop")])];
    let sources = Sources { pins, urls, ..Default::default() };
    let builds = specs(&playground, &file, &definitions, &sources).unwrap();
    assert_eq!(builds.keys().collect::<Vec<_>>(), ["web"]);
    assert_eq!(env_files(&sources).unwrap()["db"].values["DB_NAME"], "shop");
}

fn what<'a>(image_key: &'a ImageKey, account_id: i64, scm_url: &'a str) -> BuildFor<'a> {
    BuildFor { image_key, account_id, scm_url, production: false }
}
