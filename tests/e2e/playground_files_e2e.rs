//! Mounted files on a real host: a Playspec's uploaded files appear in the
//! containers of their target services at their mount paths (paths the
//! image does not have included), read-only where asked, and not in other
//! services; the Playground's files volume goes with it on DELETE.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::Duration;

use crate::support::world::{Running, World, docker_lines};
use axum::http::StatusCode;
use serde_json::json;

const COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    stop_grace_period: 1s
  worker:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    stop_grace_period: 1s
"#;

/// Unused volumes with an engine-made (64 hex digit) name.
fn dangling_anonymous_volumes() -> Vec<String> {
    docker_lines(&["volume", "ls", "-q", "--filter", "dangling=true"])
        .into_iter()
        .filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
        .collect()
}

fn exec(container: &str, script: &str) -> (bool, String) {
    let out = Command::new("docker").args(["exec", container, "sh", "-c", script]).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Creates a Playground of `spec` and runs it until it converges: its id,
/// its Compose project and the running reconciler.
async fn run_playground(w: &World, name: &str, spec: i64, what: &str) -> (i64, String, Running) {
    let p = w.playground(name, spec, json!({})).await;
    let id = p["id"].as_i64().unwrap();
    let project = p["compose_project"].as_str().unwrap().to_owned();
    let running = w.runtime("replica-a", Duration::from_secs(2));
    w.wait_converged(id, what).await;
    (id, project, running)
}

/// Deletes the Playground and waits until it is gone.
async fn destroy(w: &World, id: i64) {
    let r = w.app.delete(&format!("/api/playgrounds/{id}"), &w.app.admin).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    w.wait_for(id, "the Playground to be gone", |status, _| status == StatusCode::NOT_FOUND).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mounted_files_reach_their_services_read_only_where_asked() {
    let w = World::start().await;
    let spec = w.playspec("files", COMPOSE).await;
    let upload = |parts: Vec<(&'static str, Option<&'static str>, Vec<u8>)>| {
        let path = format!("/api/playspecs/{spec}/add_mounted_file");
        let w = &w;
        async move {
            let parts: Vec<(&str, Option<&str>, &[u8])> =
                parts.iter().map(|(n, f, c)| (*n, *f, c.as_slice())).collect();
            let r = w.app.post_multipart(&path, &parts).await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        }
    };
    upload(vec![
        ("file", Some("app.conf"), b"mode = web\n".to_vec()),
        ("mount_path", None, b"/etc/play/app.conf".to_vec()),
        ("target_services[]", None, b"web".to_vec()),
    ])
    .await;
    upload(vec![
        ("file", Some("shared.txt"), b"for everyone\n".to_vec()),
        ("mount_path", None, b"/srv/shared.txt".to_vec()),
        ("readonly", None, b"false".to_vec()),
    ])
    .await;

    let (id, project, _running) = run_playground(&w, "files", spec, "running with files").await;
    let (web, worker) = (format!("{project}-web-1"), format!("{project}-worker-1"));

    assert_eq!(exec(&web, "cat /etc/play/app.conf"), (true, "mode = web\n".to_owned()));
    assert!(!exec(&web, "echo x >> /etc/play/app.conf").0, "a readonly file cannot be written");
    assert!(!exec(&worker, "test -e /etc/play/app.conf").0, "only its target services get a file");
    for c in [&web, &worker] {
        assert_eq!(exec(c, "cat /srv/shared.txt"), (true, "for everyone\n".to_owned()), "{c}");
    }
    assert!(exec(&worker, "echo more >> /srv/shared.txt").0, "a writable file can be written");
    assert!(docker_lines(&["ps", "-a", "--filter", &w.installation_filter(), "--format", "{{.Names}}"]).len() == 2);

    let files_volume = format!("{project}__play_files");
    let listed = docker_lines(&["volume", "ls", "-q", "--filter", &format!("name={files_volume}")]);
    assert_eq!(listed, std::slice::from_ref(&files_volume));
    destroy(&w, id).await;
    assert!(docker_lines(&["volume", "ls", "-q", "--filter", &format!("name={files_volume}")]).is_empty());
}

/// The attack of finding 1: an image that plants a symbolic link where the
/// files volume will hold a mounted file (`/play-files/<key>`,
/// pointing at the host's `/etc`). Were the image's content copied into the
/// volume (a volume's first mount copies it up unless `nocopy`), play's
/// bind of the file by host path would follow the link onto the host. The
/// Playground must run with the uploaded file, not with anything the link
/// points at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_cannot_plant_links_in_the_files_volume() {
    use sha2::{Digest, Sha256};

    let w = World::start().await;
    let content = b"from play\n".to_vec();
    // Where play will write the file: `<key>/file`, the link at `<key>`.
    let planted = play_model::desired::mounted_file_path(
        &format!("{:x}", Sha256::digest(&content)),
        "/etc/app.conf",
        None,
        play_model::desired::MountedFileAccess::ReadOnlyFile,
        &[],
    );
    let planted = planted.trim_end_matches("/file").to_owned();
    let image = format!("play-test/links:{}", &w.installation[..8]);
    let compose = format!(
        "services:\n  web:\n    image: {image}\n    command: [\"sleep\", \"3600\"]\n    stop_grace_period: 1s\n"
    );
    let spec = w.playspec("links", &compose).await;
    let path = format!("/api/playspecs/{spec}/add_mounted_file");
    let parts: Vec<(&str, Option<&str>, &[u8])> =
        vec![("file", Some("app.conf"), content.as_slice()), ("mount_path", None, b"/etc/app.conf")];
    let r = w.app.post_multipart(&path, &parts).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Dockerfile"),
        format!(
            "FROM play-test/busybox:1\nRUN mkdir -p /play-files && ln -s /etc /play-files/{planted}\n\
             VOLUME /scratch\n"
        ),
    )
    .unwrap();
    crate::support::run(Command::new("docker").args(["build", "-q", "-t", &image]).arg(dir.path()));

    let anonymous_before = dangling_anonymous_volumes();
    let (id, project, _running) =
        run_playground(&w, "links", spec, "running with its file despite the planted link").await;
    let web = format!("{project}-web-1");
    assert_eq!(exec(&web, "cat /etc/app.conf"), (true, "from play\n".to_owned()));
    // The link was where play put the file: the attack was aimed right.
    let sources = docker_lines(&["inspect", "--format", "{{range .Mounts}}{{.Source}}\n{{end}}", &web]);
    assert!(sources.iter().any(|s| s.ends_with(&format!("/{planted}/file"))), "{sources:?}");
    // The image declares a VOLUME: the files helper got an anonymous one,
    // which goes with it.
    let left: Vec<String> =
        dangling_anonymous_volumes().into_iter().filter(|v| !anonymous_before.contains(v)).collect();
    assert!(left.is_empty(), "the files helper left anonymous volumes: {left:?}");
    destroy(&w, id).await;
    let _ = Command::new("docker").args(["rmi", "-f", &image]).output();
}

/// Issue #13, item 10: a Compose file as users bring it, with a relative
/// bind and a secret read from a relative `file:`, runs on an untrusted
/// Playroom once the Playspec's mounted files provide both paths. The
/// files are mounted at their `mount_path` elsewhere, so what appears at
/// the Compose targets comes from the resolution of the relative paths.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relative_compose_paths_are_served_from_mounted_files() {
    let w = World::start().await;
    let spec = w.playspec("project", play_model::testing::PROJECT_COMPOSE).await;
    let path = format!("/api/playspecs/{spec}/add_mounted_file");
    for (name, project_path, content) in [
        ("nginx.conf", "./nginx.conf", b"server { listen 80; }\n".as_slice()),
        ("db_password.txt", "db_password.txt", b"s3cret\n".as_slice()),
    ] {
        let mount = format!("/uploaded/{name}");
        let parts: Vec<(&str, Option<&str>, &[u8])> = vec![
            ("file", Some(name), content),
            ("mount_path", None, mount.as_bytes()),
            ("path", None, project_path.as_bytes()),
        ];
        let r = w.app.post_multipart(&path, &parts).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }

    let (id, project, _running) = run_playground(&w, "project", spec, "running with its project files").await;
    let web = format!("{project}-web-1");

    assert_eq!(exec(&web, "cat /etc/app/app.conf"), (true, "server { listen 80; }\n".to_owned()));
    assert_eq!(exec(&web, "cat /run/secrets/db_password"), (true, "s3cret\n".to_owned()));
    assert!(!exec(&web, "echo x >> /etc/app/app.conf").0, "`:ro` holds");
    assert!(!exec(&web, "echo x >> /run/secrets/db_password").0, "a secret is read-only");
    // Every bind comes from play's files volume: no host path of the project.
    let mounts = docker_lines(&["inspect", "--format", "{{range .Mounts}}{{.Source}}\n{{end}}", &web]);
    let volume = format!("{project}__play_files");
    let sources: Vec<&String> = mounts.iter().filter(|m| !m.is_empty()).collect();
    assert_eq!(sources.len(), 4, "{sources:?}");
    assert!(sources.iter().all(|s| s.contains(&volume)), "{sources:?}");

    destroy(&w, id).await;
}

/// Issue #49, item 12: one writable mounted file that `rw` binds writable
/// and `ro` binds `:ro` (the same relative source, as Docker Compose users
/// write it). `ro` must keep reading what was uploaded after `rw` writes
/// its copy: a read-only mount never shows another service's writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_mount_never_sees_a_writable_mount_of_the_same_file() {
    const SHARED_COMPOSE: &str = r#"
services:
  rw:
    image: play-test/busybox:1
    command: ["sh", "-c", "echo changed > /conf/app.conf; sleep 3600"]
    stop_grace_period: 1s
    volumes:
      - ./app.conf:/conf/app.conf
  ro:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    stop_grace_period: 1s
    volumes:
      - ./app.conf:/conf/app.conf:ro
"#;
    let w = World::start().await;
    let spec = w.playspec("shared", SHARED_COMPOSE).await;
    let path = format!("/api/playspecs/{spec}/add_mounted_file");
    let parts: Vec<(&str, Option<&str>, &[u8])> = vec![
        ("file", Some("app.conf"), b"original\n"),
        ("mount_path", None, b"/conf/app.conf"),
        ("path", None, b"app.conf"),
        ("readonly", None, b"false"),
        ("target_services[]", None, b"rw"),
    ];
    let r = w.app.post_multipart(&path, &parts).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    let (id, project, _running) = run_playground(&w, "shared", spec, "running with one file, rw and ro").await;
    let (rw, ro) = (format!("{project}-rw-1"), format!("{project}-ro-1"));
    // Written again here: whichever container play created last, the
    // write comes after both exist.
    assert!(exec(&rw, "echo changed > /conf/app.conf").0, "the writable mount can be written");
    assert_eq!(exec(&rw, "cat /conf/app.conf"), (true, "changed\n".to_owned()));
    assert!(!exec(&ro, "echo x > /conf/app.conf").0, "`:ro` holds");
    assert_eq!(exec(&ro, "cat /conf/app.conf"), (true, "original\n".to_owned()), "ro sees rw's write");

    destroy(&w, id).await;
}
