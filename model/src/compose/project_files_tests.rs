use super::*;
use crate::compose::{Policy, parse_compose, validate_compose};

fn files(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| (*p).to_owned()).collect()
}

fn placed(resolution: Resolution<'_, String>) -> Vec<(String, String)> {
    match resolution {
        Resolution::MountedFiles(placed) => placed.into_iter().map(|p| (p.file.clone(), p.target)).collect(),
        Resolution::Unresolved(path) => panic!("unresolved: {path}"),
    }
}

fn resolve_in<'f>(path: &str, target: &str, expect: Expect, files: &'f [String]) -> Resolution<'f, String> {
    resolve(path, target, expect, files, |f| Some(f.as_str()))
}

fn untrusted_with(paths: &[&str]) -> Policy {
    Policy::UNTRUSTED.with_project_files(paths.iter().map(|p| Some(*p)))
}

fn errors(yaml: &str, policy: &Policy) -> Vec<(String, String)> {
    validate_compose(yaml, policy).errors.into_iter().map(|i| (i.path, i.message)).collect()
}

#[test]
fn normal_forms() {
    for (input, normal) in [
        ("./nginx.conf", "nginx.conf"),
        ("nginx/nginx.conf", "nginx/nginx.conf"),
        ("./a//b/./c", "a/b/c"),
        (".", ""),
        ("./", ""),
        ("backend/", "backend"),
    ] {
        assert_eq!(normalise(input).as_deref(), Ok(normal), "{input}");
    }
    for (input, error) in [
        ("../x", PathError::Climbs),
        ("a/../b", PathError::Climbs),
        ("./a/..", PathError::Climbs),
        ("../../etc/passwd", PathError::Climbs),
        ("/etc/passwd", PathError::Absolute),
        ("~/x", PathError::Absolute),
        ("C:\\x", PathError::Absolute),
        ("\\\\server\\share", PathError::Absolute),
        ("a\\b", PathError::Malformed),
        ("", PathError::Malformed),
        ("a\nb", PathError::Malformed),
    ] {
        assert_eq!(normalise(input), Err(error), "{input}");
    }
    assert_eq!(normalise_file_path("."), Err(PathError::Malformed));
    assert_eq!(normalise(&"a/".repeat(600)), Err(PathError::Malformed));
}

#[test]
fn a_file_resolves_at_the_target() {
    let all = files(&["nginx/nginx.conf", "db_password.txt"]);
    assert_eq!(
        placed(resolve_in("nginx/nginx.conf", "/etc/nginx/conf.d/default.conf", Expect::FileOrFolder, &all)),
        [("nginx/nginx.conf".to_owned(), "/etc/nginx/conf.d/default.conf".to_owned())]
    );
    assert_eq!(
        resolve_in("nginx/other.conf", "/x", Expect::FileOrFolder, &all),
        Resolution::Unresolved("nginx/other.conf".into())
    );
}

#[test]
fn a_folder_resolves_to_every_file_under_it() {
    let all = files(&["backend/app.py", "backend/lib/util.py", "backend.txt", "frontend/index.html"]);
    assert_eq!(
        placed(resolve_in("backend", "/code/", Expect::FileOrFolder, &all)),
        [
            ("backend/app.py".to_owned(), "/code/app.py".to_owned()),
            ("backend/lib/util.py".to_owned(), "/code/lib/util.py".to_owned())
        ]
    );
    assert_eq!(placed(resolve_in("", "/src", Expect::FileOrFolder, &all)).len(), 4, "`.` is the whole project");
    // Secrets and configs name files only.
    assert_eq!(resolve_in("backend", "/run/secrets/b", Expect::File, &all), Resolution::Unresolved("backend".into()));
}

#[test]
fn an_exact_file_wins_over_a_folder_of_the_same_name() {
    let all = files(&["conf", "conf/a.ini"]);
    assert_eq!(
        placed(resolve_in("conf", "/etc/conf", Expect::FileOrFolder, &all)),
        [("conf".to_owned(), "/etc/conf".to_owned())]
    );
}

#[test]
fn secret_and_config_targets_follow_compose() {
    let used = |source: &str, target: Option<&str>| ObjectRef { source: source.into(), target: target.map(Into::into) };
    assert_eq!(object_target(ObjectKind::Secret, &used("db", None)), "/run/secrets/db");
    assert_eq!(object_target(ObjectKind::Secret, &used("db", Some("pw"))), "/run/secrets/pw");
    assert_eq!(object_target(ObjectKind::Secret, &used("db", Some("/etc/pw"))), "/etc/pw");
    assert_eq!(object_target(ObjectKind::Config, &used("app", None)), "/app");
    assert_eq!(object_target(ObjectKind::Config, &used("app", Some("/etc/app.ini"))), "/etc/app.ini");
}

const SAMPLE: &str = r#"
services:
  web:
    image: nginx
    volumes:
      - ./nginx/nginx.conf:/etc/nginx/conf.d/default.conf:ro
      - type: bind
        source: static
        target: /usr/share/nginx/html
    secrets:
      - db_password
      - source: api_key
        target: /etc/api.key
        mode: 0400
    configs:
      - app
secrets:
  db_password:
    file: ./db/password.txt
  api_key:
    file: api.key
configs:
  app:
    file: ./app.ini
"#;

#[test]
fn matched_relative_sources_pass_an_untrusted_playroom() {
    let policy = untrusted_with(&["nginx/nginx.conf", "static/index.html", "db/password.txt", "api.key", "app.ini"]);
    assert_eq!(errors(SAMPLE, &policy), []);
}

#[test]
fn unmatched_relative_sources_name_the_entry_the_path_and_the_remedy() {
    let policy = untrusted_with(&["static/index.html", "app.ini"]);
    let errors = errors(SAMPLE, &policy);
    let paths: Vec<&str> = errors.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["services.web.volumes[0]", "secrets.db_password.file", "secrets.api_key.file"]);
    let (_, message) = &errors[0];
    assert!(message.contains("`./nginx/nginx.conf`"), "{message}");
    assert!(message.contains("POST /api/playspecs/:id/add_mounted_file with path `nginx/nginx.conf`"), "{message}");
    let (_, message) = &errors[1];
    assert!(message.contains("with path `db/password.txt`"), "{message}");
    // Without any mounted file: the same entries, nothing else.
    assert_eq!(self::errors(SAMPLE, &Policy::UNTRUSTED).len(), 5);
    // A trusted Playroom keeps today's behaviour: relative sources pass.
    assert_eq!(self::errors(SAMPLE, &Policy::TRUSTED), []);
}

#[test]
fn climbing_absolute_and_socket_sources_stay_refused() {
    let policy = untrusted_with(&["etc/passwd", "docker.sock"]);
    for (volume, wanted) in [
        ("../../etc/passwd:/x", "`..` segment"),
        ("./a/../../etc/passwd:/x", "`..` segment"),
        ("/etc/passwd:/x", "bind-mounting a host path"),
        ("/var/run/docker.sock:/var/run/docker.sock", "Docker socket"),
        ("./docker.sock:/var/run/docker.sock", "Docker socket"),
        ("~/etc/passwd:/x", "bind-mounting a host path"),
    ] {
        let yaml = format!("services:\n  web:\n    image: busybox\n    volumes:\n      - {volume}\n");
        let errors = errors(&yaml, &policy);
        assert!(errors.iter().any(|(_, m)| m.contains(wanted)), "{volume}: {errors:?}");
    }
    let yaml = "services:\n  web:\n    image: busybox\n    secrets: [s]\nsecrets:\n  s:\n    file: ../s.txt\n";
    assert!(errors(yaml, &untrusted_with(&["s.txt"])).iter().any(|(p, m)| p == "secrets.s.file" && m.contains("..")));
    let shared = "services:\n  a:\n    image: x\n    secrets: [s]\n  b:\n    image: x\n    secrets: [s]\nsecrets:\n  s:\n    file: ./s.txt\n";
    assert_eq!(errors(shared, &Policy::UNTRUSTED).len(), 1, "one entry, one error, however many services use it");
    let yaml = "services:\n  web:\n    image: busybox\n    secrets: [s]\nsecrets:\n  s:\n    file: /etc/shadow\n";
    assert!(errors(yaml, &untrusted_with(&["etc/shadow"])).iter().any(|(p, _)| p == "secrets.s.file"));
}

#[test]
fn a_compose_file_that_builds_from_a_playzone_leaves_project_paths_to_the_repository() {
    let built = "services:\n  web:\n    build: .\n    volumes:\n      - ./conf:/etc/app\n    secrets: [s]\n  \
                 db:\n    image: postgres\n    volumes:\n      - ./db/init:/init\nsecrets:\n  s:\n    file: ./s.txt\n";
    assert_eq!(errors(built, &Policy::UNTRUSTED), [], "the repository provides them at the Playground's commit");
    let labelled = built
        .replace("    build: .\n", "    image: app\n    labels:\n      svc/repo_url: https://git.example/app.git\n");
    assert_eq!(errors(&labelled, &Policy::UNTRUSTED), []);
    // Without a built service there is no repository: the paths are refused.
    let static_only = built.replace("    build: .\n", "    image: app\n");
    assert_eq!(errors(&static_only, &Policy::UNTRUSTED).len(), 3);
    // What is not a project path stays refused, repository or not.
    for (volume, wanted) in [
        ("../../etc/passwd:/x", "`..` segment"),
        ("/etc/passwd:/x", "bind-mounting a host path"),
        ("/var/run/docker.sock:/var/run/docker.sock", "Docker socket"),
        ("./docker.sock:/var/run/docker.sock", "Docker socket"),
    ] {
        let yaml = format!("services:\n  web:\n    build: .\n    volumes:\n      - {volume}\n");
        let errors = errors(&yaml, &Policy::UNTRUSTED);
        assert!(errors.iter().any(|(_, m)| m.contains(wanted)), "{volume}: {errors:?}");
    }
    let climbing = "services:\n  web:\n    build: .\n    secrets: [s]\nsecrets:\n  s:\n    file: ../s.txt\n";
    assert!(errors(climbing, &Policy::UNTRUSTED).iter().any(|(p, m)| p == "secrets.s.file" && m.contains("..")));
}

#[test]
fn a_folder_expanding_past_the_mount_bound_is_refused() {
    let many: Vec<String> = (0..=MAX_MOUNTS).map(|i| format!("data/{i}.txt")).collect();
    let policy = Policy::UNTRUSTED.with_project_files(many.iter().map(|p| Some(p.as_str())));
    let yaml = "services:\n  web:\n    image: busybox\n    volumes: [\"./data:/data\"]\n";
    let errors = errors(yaml, &policy);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, "services.web");
}

#[test]
fn relative_sources_list_binds_then_secrets_and_configs() {
    let (_, model) = parse_compose(SAMPLE, &Policy::TRUSTED);
    let model = model.expect("parses");
    let sources: Vec<(String, &str, String, Option<usize>)> =
        relative_sources(&model).into_iter().map(|s| (s.location(), s.written, s.target.clone(), s.volume)).collect();
    assert_eq!(
        sources,
        [
            (
                "services.web.volumes[0]".to_owned(),
                "./nginx/nginx.conf",
                "/etc/nginx/conf.d/default.conf".to_owned(),
                Some(0)
            ),
            ("services.web.volumes[1]".to_owned(), "static", "/usr/share/nginx/html".to_owned(), Some(1)),
            ("secrets.db_password.file".to_owned(), "./db/password.txt", "/run/secrets/db_password".to_owned(), None),
            ("secrets.api_key.file".to_owned(), "api.key", "/etc/api.key".to_owned(), None),
            ("configs.app.file".to_owned(), "./app.ini", "/app".to_owned(), None),
        ]
    );
}
