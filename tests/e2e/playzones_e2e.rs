//! Playzones end to end: the real `play serve` binary against a real git
//! smart-HTTP server on loopback (`git http-backend` behind basic auth,
//! `play_git::testing::GitServer`): create a private Playzone with a token,
//! sync lists both branches and finds the Compose file, `env_defaults`
//! reads the env file, a new commit is seen after `sync`; refused,
//! unreachable and unauthorised repositories end in a clear error status;
//! the token appears nowhere but in its sealed column.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::serve::{Play, Server};
use play_git::testing::{Access, GitServer, file};
use serde_json::{Value, json};

const TOKEN: &str = "glpat-e2e-7f3a9c1d5b";
const COMPOSE: &str = "services:\n  web:\n    build: .\n    ports: [\"8080\"]\n";
const ENV_EXAMPLE: &str = "# app settings\nPORT=8080\nexport APP_NAME=\"demo app\"\nDB_PASSWORD=changeme\n\
                           SESSION_SECRET=$$secret(32)\nDATABASE_URL=postgres://app:pw@db/app\n";

/// `play serve` with its database in its data directory (whose files are
/// searched for the token), allowed to reach the git server at `allowlist`.
struct Serve {
    server: Server,
    play: Play,
}

impl std::ops::Deref for Serve {
    type Target = Server;

    fn deref(&self) -> &Server {
        &self.server
    }
}

impl Serve {
    async fn start(allowlist: &str) -> Serve {
        let play = Play::with_database_in_data_dir().serve_args(&[
            "--repository-allow-http",
            "--repository-allowlist",
            allowlist,
            "--repository-timeout",
            "10s",
        ]);
        Serve { server: play.serve().await, play }
    }

    async fn create(&self, body: Value) -> i64 {
        self.server.create("/api/playzones", json!({"playzone": body})).await["id"].as_i64().unwrap()
    }

    /// The detail once a sync has run for every change so far.
    async fn synced(&self, id: i64) -> Value {
        let started = Instant::now();
        loop {
            let (_, z) = self.get(&format!("/api/playzones/{id}")).await;
            if z["sync_pending"] == false {
                return z;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "no sync ran: {z}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Every file under `dir`, searched for `needle` as bytes.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if meta.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[tokio::test]
async fn a_private_playzone_syncs_branches_compose_and_env_defaults() {
    let git = GitServer::start();
    let commits = git.create_repo(
        "app",
        Access::Private { token: TOKEN.into() },
        &[
            (
                "main",
                &[("compose.yaml", file(COMPOSE)), (".env.example", file(ENV_EXAMPLE)), ("index.html", file("main"))],
            ),
            ("feature", &[("compose.yaml", file(COMPOSE)), ("index.html", file("feature"))]),
        ],
    );
    let serve = Serve::start("127.0.0.1").await;
    let id =
        serve.create(json!({"name": "app", "scm_url": git.url("app"), "private": true, "credentials": TOKEN})).await;
    let z = serve.synced(id).await;
    assert_eq!(z["status"], "active", "{z}");
    assert_eq!(z["default_branch"], "main");
    assert_eq!(z["compose_file"], "compose.yaml");
    assert!(z["last_synced_at"].is_string());

    let (_, listed) = serve.get("/api/playzones/with_docker_compose").await;
    assert_eq!(listed[0]["id"], id, "{listed}");
    let (_, b) = serve.get(&format!("/api/playzones/{id}/branches")).await;
    assert_eq!(
        b["branches"],
        json!([{"name": "main", "default": true, "commit": commits[0]}, {"name": "feature", "default": false, "commit": commits[1]}])
    );
    let (_, b) = serve.get(&format!("/api/playzones/{id}/branches?query=FEAT&limit=1")).await;
    assert_eq!(b["branches"].as_array().unwrap().len(), 1);

    let (status, env) = serve.get(&format!("/api/playzones/{id}/env_defaults?branch=main")).await;
    assert_eq!(status, 200, "{env}");
    assert_eq!(
        env["defaults"],
        json!({"APP_NAME": "demo app", "DATABASE_URL": "postgres://app:pw@db/app", "DB_PASSWORD": "changeme",
               "PORT": "8080", "SESSION_SECRET": "$$secret(32)"})
    );
    assert_eq!(env["sensitive_keys"], json!(["DATABASE_URL", "DB_PASSWORD", "SESSION_SECRET"]));
    let (status, err) = serve.get(&format!("/api/playzones/{id}/env_defaults?branch=feature")).await;
    assert_eq!(status, 422, "{err}");
    assert!(err["error"]["details"]["env_file_path"][0].as_str().unwrap().contains(".env.example"), "{err}");

    // A new commit is seen after a sync.
    let moved = git.commit("app", "feature", &[("index.html", file("feature v2"))]);
    let (status, r) = serve.post(&format!("/api/playzones/{id}/sync"), json!({})).await;
    assert_eq!(status, 202, "{r}");
    serve.synced(id).await;
    let (_, b) = serve.get(&format!("/api/playzones/{id}/branches?query=feature")).await;
    assert_eq!(b["branches"][0]["commit"], moved.as_str());

    // The token never left its sealed column: not in a URL the server saw,
    // not in any answer, not in a file of the data directory (database,
    // commit cache) in clear.
    assert!(git.requests().iter().all(|r| !r.uri.contains(TOKEN)));
    assert!(git.requests().iter().any(|r| r.authorization), "the token was sent as a header");
    for path in ["/api/playzones", &format!("/api/playzones/{id}")] {
        let (_, body) = serve.get(path).await;
        assert!(!body.to_string().contains(TOKEN));
    }
    let leaked = files_containing(serve.play.data_dir(), TOKEN.as_bytes());
    assert!(leaked.is_empty(), "the token is in clear in {leaked:?}");
}

#[tokio::test]
async fn failures_end_in_an_error_status_that_says_why_and_keep_the_index() {
    let git = GitServer::start();
    git.create_repo("app", Access::Private { token: TOKEN.into() }, &[("main", &[("README", file("x"))])]);
    let serve = Serve::start("127.0.0.1").await;

    // A wrong token: access denied, with a hint; nothing recorded.
    let id = serve
        .create(json!({"name": "wrong", "scm_url": git.url("app"), "private": true, "credentials": "glpat-wrong"}))
        .await;
    let z = serve.synced(id).await;
    assert_eq!(z["status"], "error", "{z}");
    let message = z["status_message"].as_str().unwrap();
    assert!(message.contains("access denied") && message.contains("credentials"), "{message}");
    assert!(!message.contains("glpat-wrong"), "{message}");

    // The right token, then the repository goes away: the error is shown,
    // the branches recorded before stay.
    let ok =
        serve.create(json!({"name": "ok", "scm_url": git.url("app"), "private": true, "credentials": TOKEN})).await;
    assert_eq!(serve.synced(ok).await["status"], "active");
    let gone = serve
        .call(
            reqwest::Method::PATCH,
            &format!("/api/playzones/{ok}"),
            Some(json!({"playzone": {"default_branch": "release"}})),
        )
        .await;
    assert_eq!(gone.0, 200, "{}", gone.1);
    let z = serve.synced(ok).await;
    assert_eq!(z["status"], "error");
    assert!(z["status_message"].as_str().unwrap().contains("\"release\" does not exist"), "{z}");
    let (_, b) = serve.get(&format!("/api/playzones/{ok}/branches")).await;
    assert_eq!(b["branches"].as_array().unwrap().len(), 1, "the index was kept: {b}");

    // Nothing listens: unreachable.
    let (_socket, port) = crate::support::refusing_port(0);
    let down = serve.create(json!({"name": "down", "scm_url": format!("http://127.0.0.1:{port}/r.git")})).await;
    let z = serve.synced(down).await;
    assert_eq!(z["status"], "error");
    assert!(z["status_message"].as_str().unwrap().contains("unreachable"), "{z}");

    // A repository that does not exist.
    let missing = serve.create(json!({"name": "missing", "scm_url": git.url("nope")})).await;
    let z = serve.synced(missing).await;
    assert_eq!(z["status"], "error");
    assert!(z["status_message"].as_str().unwrap().contains("not found"), "{z}");
}

#[tokio::test]
async fn a_loopback_repository_the_operator_did_not_allowlist_is_refused_before_any_request() {
    let git = GitServer::start();
    git.create_repo("app", Access::Public, &[("main", &[("README", file("x"))])]);
    // Allowlisted: another loopback address only.
    let serve = Serve::start("127.0.0.2").await;
    let (status, r) =
        serve.post("/api/playzones", json!({"playzone": {"name": "app", "scm_url": git.url("app")}})).await;
    assert_eq!(status, 422, "{r}");
    assert!(r["error"]["details"]["playzone.scm_url"][0].as_str().unwrap().contains("loopback"), "{r}");
    let (_, list) = serve.get("/api/playzones").await;
    assert_eq!(list, json!([]), "nothing half-created");
    assert_eq!(git.request_count(), 0, "the git server was reached");
}

/// Issue #27, item 1: a key that may edit a Playzone points it at a git
/// server it controls (another origin on loopback). The stored token must
/// never reach that server: the change drops it (public Playzone) or is
/// refused until the token is sent again (private one). A new path on the
/// same origin keeps it.
#[tokio::test]
async fn a_stored_token_never_follows_the_url_to_another_origin() {
    let git = GitServer::start();
    git.create_repo("app", Access::Private { token: TOKEN.into() }, &[("main", &[("README", file("x"))])]);
    git.create_repo("other", Access::Private { token: TOKEN.into() }, &[("main", &[("README", file("y"))])]);
    let attacker = GitServer::start();
    attacker.create_repo("app", Access::Public, &[("main", &[("README", file("bait"))])]);
    let serve = Serve::start("127.0.0.1").await;

    // A private Playzone: moving it elsewhere without the token is refused
    // and changes nothing.
    let private = serve
        .create(json!({"name": "private", "scm_url": git.url("app"), "private": true, "credentials": TOKEN}))
        .await;
    assert_eq!(serve.synced(private).await["status"], "active");
    let path = format!("/api/playzones/{private}");
    let moved = json!({"playzone": {"scm_url": attacker.url("app")}});
    let (status, r) = serve.call(reqwest::Method::PATCH, &path, Some(moved)).await;
    assert_eq!(status, 422, "{r}");
    assert!(r["error"]["details"]["playzone.credentials"][0].as_str().unwrap().contains("another origin"), "{r}");
    let (_, z) = serve.get(&path).await;
    assert_eq!((z["scm_url"].as_str(), z["has_credentials"].as_bool()), (Some(git.url("app").as_str()), Some(true)));

    // Another path on the same origin keeps the token.
    let (status, r) =
        serve.call(reqwest::Method::PATCH, &path, Some(json!({"playzone": {"scm_url": git.url("other")}}))).await;
    assert_eq!(status, 200, "{r}");
    let z = serve.synced(private).await;
    assert_eq!((z["status"].as_str(), z["has_credentials"].as_bool()), (Some("active"), Some(true)), "{z}");

    // A public Playzone with a token: the move drops the token.
    let public = serve.create(json!({"name": "public", "scm_url": git.url("app"), "credentials": TOKEN})).await;
    assert_eq!(serve.synced(public).await["status"], "active");
    let path = format!("/api/playzones/{public}");
    let moved = json!({"playzone": {"scm_url": attacker.url("app")}});
    let (status, r) = serve.call(reqwest::Method::PATCH, &path, Some(moved)).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["has_credentials"], false, "{r}");
    let z = serve.synced(public).await;
    assert_eq!(z["status"], "active", "{z}");
    let seen = attacker.requests();
    assert!(!seen.is_empty(), "the sync reached the new origin");
    assert!(seen.iter().all(|r| !r.authorization), "the new origin saw a token: {seen:?}");
}
