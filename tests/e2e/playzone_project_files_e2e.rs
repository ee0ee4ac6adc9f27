//! A repository's own Compose file, unchanged, on an untrusted Playroom:
//! relative bind mounts of a config file and of a source folder, a missing
//! data folder, and a `secrets:` entry with `file:` come from the
//! repository at the Playground's commit (a private repository on a real
//! git smart-HTTP server, a Playroom over the harness's sshd, the
//! machine's Docker engine). A static service of the same file reads the
//! same repository. A path that is a link in the repository fails the
//! Playground with the path named, and nothing of the host is bound.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::Duration;

use crate::support::docker::BUSYBOX_IMAGE;
use crate::support::playzones::built_from;
use crate::support::world::Running;
use axum::http::StatusCode;
use play_git::testing::{Access, GitServer, executable, file, symlink};
use serde_json::{Value, json};

const TOKEN: &str = "glpat-project-files-e2e-81d2";

fn compose() -> String {
    format!(
        "services:
  web:
    build: .
    env_file: .env.example
    environment:
      APP_MODE: from-compose
    volumes:
      - ./nginx/default.conf:/etc/app/default.conf:ro
      - ./app:/code
      - ./data:/data
    secrets:
      - db_password
  db:
    image: {BUSYBOX_IMAGE}
    command: [\"sleep\", \"3600\"]
    env_file: ./db/db.env
    volumes:
      - ./db/init:/docker-entrypoint-initdb.d
    secrets:
      - db_password
secrets:
  db_password:
    file: ./db/password.txt
"
    )
}

fn exec(container: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new("docker").arg("exec").arg(container).args(args).output().expect("docker exec");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The value of `name` in `container`'s environment (the image has no
/// `printenv`).
fn env_of(container: &str, name: &str) -> String {
    exec(container, &["sh", "-c", &format!("printf '%s' \"${name}\"")]).1
}

fn cat(container: &str, path: &str) -> String {
    exec(container, &["cat", path]).1
}

/// The sources of `container`'s bind mounts.
fn bind_sources(container: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            "inspect",
            "--format",
            "{{range .Mounts}}{{if eq .Type \"bind\"}}{{.Source}}\n{{end}}{{end}}",
            container,
        ])
        .output()
        .expect("docker inspect");
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

async fn create_playspec(world: &crate::support::world::World, name: &str, yaml: &str, playzone: i64) -> i64 {
    world.playspec_with(name, yaml, built_from("web", playzone)).await
}

/// Wakes Playground `id` on `runtime` and waits for it to fail: its
/// status's `error_step` and `error_message`.
async fn failure_of(world: &crate::support::world::World, runtime: &Running, id: i64, what: &str) -> (String, String) {
    runtime.handle.wake(id);
    world.wait_for(id, what, |_, body| body["status"] == "failed").await;
    let app = &world.app;
    let failed: Value = app.get(&format!("/api/playgrounds/{id}/status"), &app.admin).await.body;
    let text = |key: &str| failed[key].as_str().unwrap_or_default().to_owned();
    (text("error_step"), text("error_message"))
}

#[tokio::test]
async fn relative_binds_and_secret_files_come_from_the_repository_at_the_commit() {
    let git = GitServer::start();
    let dockerfile = format!("FROM {BUSYBOX_IMAGE}\nCMD [\"sleep\", \"3600\"]\n");
    let yaml = compose();
    git.create_repo(
        "shop",
        Access::Private { token: TOKEN.into() },
        &[(
            "main",
            &[
                ("Dockerfile", file(dockerfile.clone())),
                ("compose.yaml", file(yaml.clone())),
                ("nginx/default.conf", file("listen 80; # v1")),
                ("app/run.sh", executable("#!/bin/sh\necho run\n")),
                ("app/lib/util.txt", file("util")),
                ("app/latest", symlink("/etc/passwd")),
                ("db/password.txt", file("s3cret-pw")),
                ("db/init/01.sql", file("create table t();")),
                ("db/db.env", file("DB_PASSWORD=$$secret(32)\nDB_NAME=shop\n")),
                (".env.example", file("DB_PASSWORD=$$secret(32)\nAPP_MODE=preview\nexport GREETING=\"hello world\"\n")),
            ],
        )],
    );
    let crate::support::playzones::PlayzoneWorld { world, runtimes, playzone, cache: _cache } =
        crate::support::playzones::start(&git, "shop", TOKEN).await;
    let app = &world.app;
    let playspec = create_playspec(&world, "shop", &yaml, playzone).await;

    let created = world.playground("shop", playspec, json!({})).await;
    let id = created["id"].as_i64().unwrap();
    let project = created["compose_project"].as_str().unwrap().to_owned();
    let (web, db) = (format!("{project}-web-1"), format!("{project}-db-1"));
    runtimes.0.handle.wake(id);
    world.wait_converged(id, "the Playground of the repository's Compose file").await;

    // The files, at their Compose targets, in both services.
    assert_eq!(cat(&web, "/etc/app/default.conf"), "listen 80; # v1");
    assert_eq!(cat(&web, "/code/lib/util.txt"), "util");
    assert!(exec(&web, &["test", "-x", "/code/run.sh"]).0, "the executable bit is kept");
    assert!(exec(&web, &["test", "-L", "/code/latest"]).0, "a link inside a folder stays a link");
    assert!(exec(&web, &["test", "-d", "/data"]).0, "a missing bind source is an empty folder, as in Compose");
    assert_eq!(cat(&web, "/run/secrets/db_password"), "s3cret-pw");
    assert_eq!(cat(&db, "/run/secrets/db_password"), "s3cret-pw");
    assert_eq!(cat(&db, "/docker-entrypoint-initdb.d/01.sql"), "create table t();");
    // `:ro` holds; a plain bind is writable, like Compose's.
    assert!(!exec(&web, &["sh", "-c", "echo x > /etc/app/default.conf"]).0, "a :ro bind was writable");
    assert!(exec(&web, &["sh", "-c", "echo x > /code/new.txt"]).0, "the source folder is read-write");
    // Every bind is the `content` of a Playground-owned volume: never a
    // path of the host's choosing, never anything under what a tenant
    // container can write.
    for container in [&web, &db] {
        let sources = bind_sources(container);
        assert!(!sources.is_empty(), "{container} has no binds");
        for source in sources {
            assert!(source.starts_with("/var/lib/docker/volumes/"), "{source}");
            assert!(source.contains(&format!("{project}__src-_")), "{source}");
            assert!(source.ends_with("/_data/content"), "{source}");
        }
    }
    let debug = app.get(&format!("/api/playgrounds/{id}/debug"), &app.admin).await.body;
    let clones: Vec<(String, String, String)> = debug["branch_clones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["service"].as_str().unwrap().into(),
                c["path"].as_str().unwrap().into(),
                c["mount_path"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(clones.contains(&("web".into(), "app".into(), "/code".into())), "{clones:?}");
    assert!(clones.contains(&("db".into(), "db/password.txt".into(), "/run/secrets/db_password".into())), "{clones:?}");

    // The env file at the commit, under Compose's `environment:`; its
    // `$$secret(32)` generated for this Playground, listed as generated,
    // sealed at rest.
    let password = env_of(&web, "DB_PASSWORD");
    assert!(password.len() == 32 && password.chars().all(|c| c.is_ascii_alphanumeric()), "{password}");
    assert_eq!(env_of(&web, "GREETING"), "hello world");
    assert_eq!(env_of(&web, "APP_MODE"), "from-compose");
    // A prebuilt service's env_file is the repository's too, and a key both
    // files generate has one value per Playground.
    assert_eq!(env_of(&db, "DB_NAME"), "shop");
    assert_eq!(env_of(&db, "DB_PASSWORD"), password);
    let env = app.get(&format!("/api/playgrounds/{id}/env_metadata?service=web"), &app.admin).await.body;
    assert_eq!(env["generated_keys"], json!(["DB_PASSWORD"]), "{env:#}");
    assert_eq!(env["metadata"]["DB_PASSWORD"]["source"], "default");
    let sealed: Vec<String> = sqlx::query_scalar("SELECT sealed_value FROM playground_generated_env")
        .fetch_all(app.store().pool())
        .await
        .unwrap();
    assert_eq!(sealed.len(), 1);
    assert!(!sealed[0].contains(&password));

    // A new commit, a sync and a rollout: the new file is there.
    let moved = git.commit("shop", "main", &[("nginx/default.conf", file("listen 80; # v2"))]);
    crate::support::playzones::sync_to(&world, &runtimes.1, playzone, "main", &moved).await;
    let r = app.post(&format!("/api/playgrounds/{id}/rollout"), &app.admin, json!({})).await;
    assert!(r.status.is_success(), "{}", r.text);
    runtimes.0.handle.wake(id);
    crate::support::wait_until("the new commit's config", Duration::from_secs(90), || async {
        cat(&web, "/etc/app/default.conf") == "listen 80; # v2"
    })
    .await;
    world.wait_converged(id, "the rolled-out Playground").await;
    assert_eq!(env_of(&web, "DB_PASSWORD"), password, "a generated value survives a rollout");

    // A Compose file of prebuilt images only, from the same repository: the
    // Playspec names its Playzone, and the repository (its default branch)
    // provides the relative path.
    let static_only = format!(
        "services:\n  db:\n    image: {BUSYBOX_IMAGE}\n    command: [\"sleep\", \"3600\"]\n    volumes:\n      \
         - ./db/init:/docker-entrypoint-initdb.d:ro\n"
    );
    let body = json!({"playspec": {"name": "db-only", "base_compose_yaml": static_only, "playzone_id": playzone}});
    let r = app.post("/api/playspecs", &app.admin, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let created = world.playground("db-only", r.body["id"].as_i64().unwrap(), json!({})).await;
    let db_only = created["id"].as_i64().unwrap();
    runtimes.0.handle.wake(db_only);
    world.wait_converged(db_only, "the Compose file of prebuilt images").await;
    let db_container = format!("{}-db-1", created["compose_project"].as_str().unwrap());
    assert_eq!(cat(&db_container, "/docker-entrypoint-initdb.d/01.sql"), "create table t();");
    let debug = app.get(&format!("/api/playgrounds/{db_only}/debug"), &app.admin).await.body;
    assert_eq!(debug["branch_clones"][0]["commit"], moved.as_str(), "{debug:#}");

    // A repository whose path is a link (to the host's /etc): refused with
    // the path named, the container never made.
    let evil = "services:\n  web:\n    build: .\n    volumes:\n      - ./conf/passwd:/leak/passwd:ro\n";
    git.commit("shop", "main", &[("conf", symlink("/etc")), ("compose.yaml", file(evil))]);
    let evil_spec = create_playspec(&world, "evil", evil, playzone).await;
    let head = git.branch_commit("shop", "main").unwrap();
    crate::support::playzones::sync_to(&world, &runtimes.1, playzone, "main", &head).await;
    let created = world.playground("evil", evil_spec, json!({})).await;
    let evil_id = created["id"].as_i64().unwrap();
    let evil_web = format!("{}-web-1", created["compose_project"].as_str().unwrap());
    let (step, message) = failure_of(&world, &runtimes.0, evil_id, "the link refused").await;
    assert!(message.contains("`./conf/passwd`") && message.contains("symbolic link"), "{message}");
    assert_eq!(step, "image_build");
    let exists = Command::new("docker").args(["inspect", &evil_web]).output().expect("docker inspect");
    assert!(!exists.status.success(), "a container was made for the refused Compose file");

    // An env file the repository lacks fails the Playground naming it;
    // `required: false` (Compose's own opt-out) runs without it.
    let missing = "services:\n  web:\n    build: .\n    env_file: ops/nope.env\n";
    let spec = create_playspec(&world, "noenv", missing, playzone).await;
    let noenv = world.playground("noenv", spec, json!({})).await["id"].as_i64().unwrap();
    let (_, message) = failure_of(&world, &runtimes.0, noenv, "the missing env file").await;
    assert!(message.contains("`ops/nope.env`") && message.contains("not a file in the repository"), "{message}");
    let optional =
        "services:\n  web:\n    build: .\n    env_file:\n      - path: ops/nope.env\n        required: false\n";
    let spec = create_playspec(&world, "optenv", optional, playzone).await;
    let optenv = world.playground("optenv", spec, json!({})).await["id"].as_i64().unwrap();
    runtimes.0.handle.wake(optenv);
    world.wait_converged(optenv, "the Playground without its optional env file").await;

    // A secret whose file is a folder of the repository: the folder is
    // spooled to find out (never held in memory), then refused, naming it.
    let folder = "services:\n  web:\n    build: .\n    secrets: [s]\nsecrets:\n  s:\n    file: ./db/init\n";
    let spec = create_playspec(&world, "foldersecret", folder, playzone).await;
    let folder_id = world.playground("foldersecret", spec, json!({})).await["id"].as_i64().unwrap();
    let (_, message) = failure_of(&world, &runtimes.0, folder_id, "the folder refused").await;
    assert!(message.contains("`./db/init`") && message.contains("is a folder"), "{message}");
}
