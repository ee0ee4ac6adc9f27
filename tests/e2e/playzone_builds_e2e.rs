//! Services built from Playzones, end to end: a private repository on a
//! real git smart-HTTP server (loopback, basic auth), a Playroom over the
//! harness's sshd, the machine's Docker engine building through the
//! tunnel. A branch's code runs; the same commit is a cache hit; a pushed
//! commit is built after sync and rollout, recreating only the built
//! service; `create_branch` creates the branch on the remote; a broken
//! Dockerfile fails the Playground at `image_build` with the log's tail;
//! job mode watches the built service; the token is nowhere to be found.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::time::Duration;

use crate::support::docker::BUSYBOX_IMAGE;
use crate::support::playzones::built_from;
use crate::support::world::World;
use axum::http::StatusCode;
use play_git::testing::{Access, GitServer, file};
use play_store::events;
use serde_json::{Value, json};

const TOKEN: &str = "glpat-build-e2e-93ad1c";

fn dockerfile() -> String {
    format!(
        "FROM {BUSYBOX_IMAGE}\nARG GREETING=hello\nCOPY index.html /www/index.html\nRUN echo \"$GREETING\" > /www/greeting\n\
         CMD [\"httpd\", \"-f\", \"-p\", \"8080\", \"-h\", \"/www\"]\n"
    )
}

const COMPOSE: &str = "services:\n  web:\n    build:\n      context: .\n      args:\n        GREETING: built-by-play\n\
                       \n  db:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n";

const FROM_BUILD: &str =
    "ARG BASE=index.docker.io/library/play-build\nFROM busybox AS tools\n# a comment\nFROM ${BASE}:0123456789abcdef\n";
const REMOTE_ADD: &str = "FROM play-test/busybox:1\nRUN true\nADD http://169.254.169.254/latest/meta-data/ /meta\n";

/// Its `RUN` step is unique per run, so that neither an image nor a layer
/// of an earlier run (the engine's build cache), built on another
/// network, is used.
fn on_network() -> String {
    let nonce = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!(
        "FROM play-test/busybox:1\nRUN echo {nonce} && mkdir -p /www && ip -o -4 addr show eth0 > /www/build-address\n\
         CMD [\"sleep\", \"3600\"]\n"
    )
}

fn exec(container: &str, args: &[&str]) -> String {
    let out = Command::new("docker").arg("exec").arg(container).args(args).output().expect("docker exec");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// What the built app answers on its port (the body of `GET
/// /index.html`), asked from inside its container with busybox's `nc`.
fn answer(project: &str) -> String {
    let request = "printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc 127.0.0.1 8080";
    let response = exec(&format!("{project}-web-1"), &["sh", "-c", request]);
    response.rsplit("\r\n\r\n").next().unwrap_or_default().trim().to_owned()
}

fn container_id(name: &str) -> String {
    let out = Command::new("docker").args(["inspect", "--format", "{{.Id}}", name]).output().expect("inspect");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

struct Setup {
    git: GitServer,
    world: World,
    _cache: tempfile::TempDir,
    runtimes: (crate::support::world::Running, crate::support::world::Running),
    playzone: i64,
    playspec: i64,
}

async fn setup() -> Setup {
    setup_with(crate::support::world::playground_config()).await
}

async fn setup_with(playground: play_reconcilers::playground::PlaygroundConfig) -> Setup {
    let git = GitServer::start();
    let broken = format!("FROM {BUSYBOX_IMAGE}\nRUN echo compiling && echo 'error: this step fails' && false\n");
    git.create_repo(
        "app",
        Access::Private { token: TOKEN.into() },
        &[
            (
                "main",
                &[
                    ("Dockerfile", file(dockerfile())),
                    ("index.html", file("main")),
                    (".dockerignore", file("secret.txt\n")),
                    ("secret.txt", file("must not reach the image")),
                ],
            ),
            ("feature", &[("Dockerfile", file(dockerfile())), ("index.html", file("feature"))]),
            ("broken", &[("Dockerfile", file(broken)), ("index.html", file("broken"))]),
            // Issue #27, items 5 and 7: a Dockerfile that starts from play's
            // built images (spelled as the engine normalises it, through a
            // build argument), and one that fetches the metadata service.
            ("from-build", &[("Dockerfile", file(FROM_BUILD)), ("index.html", file("x"))]),
            ("remote-add", &[("Dockerfile", file(REMOTE_ADD)), ("index.html", file("x"))]),
            ("network", &[("Dockerfile", file(on_network())), ("index.html", file("x"))]),
        ],
    );
    let crate::support::playzones::PlayzoneWorld { world, runtimes, playzone, cache } =
        crate::support::playzones::start_with(&git, "app", TOKEN, playground).await;
    let playspec = world.playspec_with("built", COMPOSE, built_from("web", playzone)).await;
    Setup { git, world, _cache: cache, runtimes, playzone, playspec }
}

impl Setup {
    async fn playground(&self, name: &str, services: Value, job_mode: bool) -> (i64, String) {
        let body =
            self.world.playground(name, self.playspec, json!({"services": services, "job_mode": job_mode})).await;
        let id = body["id"].as_i64().unwrap();
        self.runtimes.0.handle.wake(id);
        (id, body["compose_project"].as_str().unwrap().to_owned())
    }

    /// A Playground `name` whose `web` is built from the `feature`
    /// branch, once it runs: (id, Compose project).
    async fn built_from_feature(&self, name: &str) -> (i64, String) {
        let (id, project) = self.playground(name, feature(), false).await;
        self.world.wait_converged(id, "the built Playground").await;
        (id, project)
    }

    async fn status(&self, id: i64) -> Value {
        self.world.app.get(&format!("/api/playgrounds/{id}/status"), &self.world.app.admin).await.body
    }

    async fn debug(&self, id: i64) -> Value {
        self.world.app.get(&format!("/api/playgrounds/{id}/debug"), &self.world.app.admin).await.body
    }
}

/// `web` built from the `feature` branch (a create's `services`).
fn feature() -> Value {
    json!({"web": {"git_config": {"branch_name": "feature"}}})
}

fn built_images() -> Vec<String> {
    let out = Command::new("docker")
        .args(["images", "--format", "{{.Repository}}:{{.Tag}}", "play-build"])
        .output()
        .expect("docker images");
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

#[tokio::test]
async fn a_branch_is_built_cached_rebuilt_after_a_push_and_created_on_demand() {
    let s = setup().await;

    // The feature branch's code runs, built from exactly its commit.
    let (first, project) = s.built_from_feature("first").await;
    assert_eq!(answer(&project), "feature");
    assert_eq!(
        exec(&format!("{project}-web-1"), &["cat", "/www/greeting"]),
        "built-by-play",
        "build args reach the build"
    );
    let debug = s.debug(first).await;
    let records = debug["build_records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{debug:#}");
    assert_eq!((records[0]["cache_hit"].as_bool(), records[0]["succeeded"].as_bool()), (Some(false), Some(true)));
    let commit = s.git.branch_commit("app", "feature").unwrap();
    assert_eq!(records[0]["commit"], commit.as_str());
    assert_eq!(debug["build_overrides"]["web"]["branch"], "feature");
    let image = debug["build_overrides"]["web"]["image"].as_str().unwrap().to_owned();
    assert!(built_images().contains(&image), "{image} not on the Playroom");

    // The same commit again: a cache hit, nothing built.
    let (second, second_project) = s.playground("second", feature(), false).await;
    s.world.wait_converged(second, "the cached Playground").await;
    assert_eq!(answer(&second_project), "feature");
    let records = s.debug(second).await["build_records"].clone();
    assert_eq!(records.as_array().unwrap().len(), 1, "{records:#}");
    assert_eq!((records[0]["cache_hit"].as_bool(), records[0]["image"].as_str()), (Some(true), Some(image.as_str())));

    // A pushed commit: sync, then a rollout rebuilds the built service only.
    let db_before = container_id(&format!("{project}-db-1"));
    let web_before = container_id(&format!("{project}-web-1"));
    let moved = s.git.commit("app", "feature", &[("index.html", file("feature v2"))]);
    let app = &s.world.app;
    crate::support::playzones::sync_to(&s.world, &s.runtimes.1, s.playzone, "feature", &moved).await;
    let detail = s.world.detail(first).await.1;
    assert_eq!((detail["needs_rollout"].as_bool(), detail["outdated_services"].clone()), (Some(true), json!(["web"])));
    let r = app.post(&format!("/api/playgrounds/{first}/rollout"), &app.admin, json!({})).await;
    assert!(r.status.is_success(), "{}", r.text);
    s.runtimes.0.handle.wake(first);
    crate::support::wait_until("the rebuilt service", Duration::from_secs(90), || async {
        answer(&project) == "feature v2"
    })
    .await;
    let detail = s.world.wait_converged(first, "the rolled-out Playground").await;
    assert_eq!(detail["needs_rollout"], false, "{detail:#}");
    assert_eq!(container_id(&format!("{project}-db-1")), db_before, "the unchanged service was recreated");
    assert_ne!(container_id(&format!("{project}-web-1")), web_before);
    let records = s.debug(first).await["build_records"].clone();
    assert_eq!(records.as_array().unwrap().last().unwrap()["commit"], moved.as_str());

    // create_branch: the branch is made on the remote from its base.
    let pr = json!({"web": {"git_config": {"branch_name": "pr-1", "create_branch": true, "base_branch_name": "main"}}});
    let (third, third_project) = s.playground("third", pr, false).await;
    s.world.wait_converged(third, "the Playground on a new branch").await;
    assert_eq!(s.git.branch_commit("app", "pr-1"), s.git.branch_commit("app", "main"));
    assert_eq!(answer(&third_project), "main");
    // .dockerignore kept the secret file out of the context.
    let listed = exec(&format!("{third_project}-web-1"), &["ls", "/www"]);
    assert!(!listed.contains("secret"), "{listed}");

    // The token is in no image layer, build log, debug view or event.
    for image in built_images() {
        let out = Command::new("docker").args(["history", "--no-trunc", &image]).output().unwrap();
        assert!(!String::from_utf8_lossy(&out.stdout).contains(TOKEN), "{image}'s history holds the token");
        let out = Command::new("docker").args(["image", "inspect", &image]).output().unwrap();
        assert!(!String::from_utf8_lossy(&out.stdout).contains(TOKEN), "{image}'s config holds the token");
    }
    for id in [first, second, third] {
        assert!(!s.debug(id).await.to_string().contains(TOKEN));
    }
    let all = format!("{:?}", events::list_for_account(app.store(), app.account_id).await.unwrap());
    assert!(!all.contains(TOKEN));
    assert!(s.git.requests().iter().all(|r| !r.uri.contains(TOKEN)));
}

#[tokio::test]
async fn a_broken_build_and_a_missing_branch_fail_at_image_build_with_the_reason() {
    let s = setup().await;
    let (broken, _) = s.playground("broken", json!({"web": {"git_config": {"branch_name": "broken"}}}), false).await;
    s.world.wait_for(broken, "the failed build", |_, b| b["status"] == "failed").await;
    let body = s.status(broken).await;
    assert_eq!(body["error_step"], "image_build", "{body:#}");
    let message = body["error_message"].as_str().unwrap();
    assert!(message.contains("failed to build") && message.contains("error: this step fails"), "{message}");
    let records = s.debug(broken).await["build_records"].clone();
    assert_eq!(records[0]["succeeded"], false, "{records:#}");

    let (missing, _) = s.playground("missing", json!({"web": {"git_config": {"branch_name": "nope"}}}), false).await;
    s.world.wait_for(missing, "the missing branch", |_, b| b["status"] == "failed").await;
    let body = s.status(missing).await;
    assert_eq!(body["error_step"], "image_build", "{body:#}");
    assert!(body["error_message"].as_str().unwrap().contains("branch `nope`"), "{body:#}");
}

#[tokio::test]
async fn job_mode_watches_the_built_service() {
    let s = setup().await;
    // The built service's command exits; the static `db` sleeps.
    let (job, _) = s.playground("job", json!({}), true).await;
    // `web` of branch main runs httpd in the foreground: stop it, and the
    // job (watching only the built service) completes with its exit code.
    s.world.wait_for(job, "the job running", |_, b| b["status"] == "running").await;
    let body = s.world.wait_for(job, "the job's project", |_, b| b["compose_project"].is_string()).await;
    let project = body["compose_project"].as_str().unwrap().to_owned();
    let status = Command::new("docker").args(["stop", "-t", "1", &format!("{project}-web-1")]).status().unwrap();
    assert!(status.success());
    s.runtimes.0.handle.wake(job);
    let body = s.world.wait_for(job, "the completed job", |_, b| b["status"] == "complete").await;
    assert_eq!(body["job_mode"], true);
    let r = s.world.app.get(&format!("/api/playgrounds/{job}/job_result"), &s.world.app.admin).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

/// Issue #27, items 5 and 7: a Dockerfile that starts from a `play-build`
/// image, or (on an untrusted Playroom) `ADD`s a URL, fails at
/// `image_build` before the engine sees it, naming the line.
#[tokio::test]
async fn hostile_dockerfiles_fail_at_image_build_naming_the_line() {
    let s = setup().await;
    let cases = [
        ("from-build", "Dockerfile, line 4", "play's built images"),
        ("remote-add", "Dockerfile, line 3", "ADD http://169.254.169.254/latest/meta-data/"),
    ];
    for (branch, line, says) in cases {
        let (id, _) = s.playground(branch, json!({"web": {"git_config": {"branch_name": branch}}}), false).await;
        s.world.wait_for(id, "the refused build", |_, b| b["status"] == "failed").await;
        let body = s.status(id).await;
        assert_eq!(body["error_step"], "image_build", "{body:#}");
        let message = body["error_message"].as_str().unwrap();
        assert!(message.contains(line) && message.contains(says), "{branch}: {message}");
    }
}

/// Issue #27, item 7: an image tagged with the name of a built image, but
/// not built by play for this account (planted on the Playroom), is never
/// run: the reconciler checks the built image's labels first.
#[tokio::test]
async fn a_planted_play_build_image_is_not_run() {
    let s = setup().await;
    let (first, _) = s.built_from_feature("first").await;
    let image = s.debug(first).await["build_overrides"]["web"]["image"].as_str().unwrap().to_owned();
    let labels = Command::new("docker")
        .args(["image", "inspect", "--format", "{{index .Config.Labels \"dev.play.account\"}}", &image])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&labels.stdout).trim(), s.world.app.account_id.to_string());

    // Plant: the same name on an image play did not build.
    crate::support::run(Command::new("docker").args(["rmi", "-f", &image]));
    crate::support::run(Command::new("docker").args(["tag", BUSYBOX_IMAGE, &image]));
    let (second, _) = s.playground("second", feature(), false).await;
    s.world.wait_for(second, "the refused image", |_, b| b["status"] == "failed").await;
    let message = s.status(second).await["error_message"].as_str().unwrap().to_owned();
    assert!(message.contains("was not built by play for this Playground's account"), "{message}");
    let _ = Command::new("docker").args(["rmi", "-f", &image]).output();
}

/// Issue #27, item 5: the `RUN` steps of builds join the network the
/// operator names (`PLAY_BUILD_NETWORK`), where the host's firewall can
/// keep the metadata address out.
#[tokio::test]
async fn builds_run_on_the_network_the_operator_names() {
    let network = format!("play-test-build-{}", std::process::id());
    crate::support::run(Command::new("docker").args([
        "network",
        "create",
        "--label",
        "play-test=build-network",
        &network,
    ]));
    let subnet = crate::support::world::docker_lines(&[
        "network",
        "inspect",
        "--format",
        "{{range .IPAM.Config}}{{.Subnet}}{{end}}",
        &network,
    ])
    .join("");
    let prefix = subnet.rsplit_once('.').map(|(p, _)| p.to_owned()).unwrap();
    let config = play_reconcilers::playground::PlaygroundConfig {
        build_network: Some(network.clone()),
        ..crate::support::world::playground_config()
    };
    let s = setup_with(config).await;
    let (id, project) = s.playground("net", json!({"web": {"git_config": {"branch_name": "network"}}}), false).await;
    s.world.wait_converged(id, "the Playground built on the network").await;
    let address = exec(&format!("{project}-web-1"), &["cat", "/www/build-address"]);
    let _ = Command::new("docker").args(["network", "rm", &network]).output();
    assert!(address.contains(&format!("inet {prefix}.")), "the build ran on {address:?}, not on {network} ({subnet})");
}

/// Issue #27, item 10: `create_branch` for a branch that already exists on
/// the remote at another commit than its base, pushed after the last sync
/// (the index does not know it, so the API could not refuse it), fails at
/// `image_build` naming the branch and both commits, and the remote branch
/// is left as it was. It used to run that other commit silently.
#[tokio::test]
async fn create_branch_over_an_existing_branch_fails_and_leaves_it() {
    let s = setup().await;
    let theirs = s.git.commit("app", "taken", &[("Dockerfile", file(dockerfile())), ("index.html", file("theirs"))]);
    let main = s.git.branch_commit("app", "main").unwrap();
    let pr =
        json!({"web": {"git_config": {"branch_name": "taken", "create_branch": true, "base_branch_name": "main"}}});
    let (id, _) = s.playground("taken", pr, false).await;
    s.world.wait_for(id, "the refused branch", |_, b| b["status"] == "failed").await;
    let body = s.status(id).await;
    assert_eq!(body["error_step"], "image_build", "{body:#}");
    let message = body["error_message"].as_str().unwrap();
    assert!(message.contains("`taken`") && message.contains(&theirs) && message.contains(&main), "{message}");
    assert_eq!(s.git.branch_commit("app", "taken").as_deref(), Some(theirs.as_str()), "the remote branch moved");
    assert!(s.debug(id).await["build_records"].as_array().is_none_or(|r| r.is_empty()), "nothing was built");
}
