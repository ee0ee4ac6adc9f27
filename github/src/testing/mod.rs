//! A GitHub REST server on loopback for tests (feature `testing`; never
//! part of the product). It implements the endpoints play calls with the
//! request and response shapes of GitHub's documentation, and checks what
//! GitHub checks: the app JWT (RS256 under the app's public key, `iss`,
//! `iat`/`exp` at most 10 minutes apart) and the installation tokens it
//! issued.
//!
//! Keys come from the `openssl` command (Debian's package, installed by
//! the test command): a 2048-bit RSA key in PKCS#1 PEM, the form GitHub
//! hands out.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Value, json};

mod git_data;
mod pulls;
mod repos;
mod tokens;
mod users;

pub use pulls::{FakeComment, FakeDeployment, FakePull, Reviews};
pub use repos::{FakeRepo, GitBackend};
pub use tokens::{APP_PERMISSIONS, IssuedScope};

/// The app's slug: its comments are written by `play-test[bot]` (the app
/// settings of a test must use it).
pub const APP_SLUG: &str = "play-test";

/// The app's OAuth client id and secret the server accepts.
pub const CLIENT_ID: &str = "Iv1.0123456789abcdef";
pub const CLIENT_SECRET: &str = "fake-client-secret-0123456789abcdef01234567";

/// An app key pair made with `openssl`: the private key as GitHub hands it
/// out, and its public half for the server.
#[derive(Clone, Debug)]
pub struct KeyPair {
    pub private_pem: Vec<u8>,
    pub public_pem: Vec<u8>,
}

impl KeyPair {
    /// Generates a key pair under `dir`.
    pub fn generate(dir: &Path) -> KeyPair {
        let private = dir.join("app.pem");
        let public = dir.join("app.pub.pem");
        let run = |args: &[&str]| {
            let out = Command::new("openssl").args(args).output().unwrap_or_else(|e| panic!("openssl: {e}"));
            assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        let private_s = private.to_string_lossy().into_owned();
        let public_s = public.to_string_lossy().into_owned();
        run(&["genrsa", "-traditional", "-out", &private_s, "2048"]);
        run(&["rsa", "-in", &private_s, "-pubout", "-out", &public_s]);
        let read = |p: &Path| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        KeyPair { private_pem: read(&private), public_pem: read(&public) }
    }
}

/// One installation of the app, as the server knows it.
#[derive(Clone, Debug)]
pub struct FakeInstallation {
    pub account_login: String,
    /// `User` or `Organization`.
    pub account_type: String,
    pub suspended: bool,
}

/// What the server saw and holds; tests read and change it.
#[derive(Debug, Default)]
pub struct Recorded {
    pub installations: HashMap<u64, FakeInstallation>,
    /// Installation tokens issued: token -> installation id.
    pub tokens: HashMap<String, u64>,
    /// What each token issued may do: token -> scope.
    pub scopes: HashMap<String, IssuedScope>,
    /// Every token request's scope, in order: (installation, scope asked).
    pub scope_requests: Vec<(u64, IssuedScope)>,
    /// How long each request waits before it is served: a GitHub far
    /// away, for tests of what waits while play calls it.
    pub request_delay: std::time::Duration,
    /// Requests refused for what their token may not do (method, path,
    /// what was missing): GitHub's 403 "Resource not accessible by
    /// integration" (answered 404 here, as GitHub hides private
    /// repositories).
    pub refused: Vec<String>,
    /// How many access tokens each installation was issued.
    pub token_requests: HashMap<u64, usize>,
    /// How long the next tokens live, in seconds (GitHub: one hour).
    pub token_lifetime_secs: i64,
    /// Every request: method, path, and whether it carried GitHub's
    /// media type and API version headers.
    pub requests: Vec<(String, String, bool)>,
    /// OAuth codes not yet exchanged: code -> GitHub user.
    pub codes: HashMap<String, String>,
    /// User access tokens issued: token -> GitHub user.
    pub user_tokens: HashMap<String, String>,
    /// Which installations each GitHub user can see.
    pub user_installations: HashMap<String, Vec<u64>>,
    /// Organisation memberships: (user, lowercase organisation) -> role
    /// (`admin` or `member`).
    pub memberships: HashMap<(String, String), String>,
    /// Repositories, by lowercase full name.
    pub repos: HashMap<String, FakeRepo>,
    /// Pull requests, their comments and deployments.
    pub reviews: Reviews,
}

#[derive(Clone)]
struct Shared {
    app_id: String,
    key: Arc<DecodingKey>,
    state: Arc<Mutex<Recorded>>,
    addr: SocketAddr,
    backend: Option<Arc<dyn GitBackend>>,
    /// Branch moves one at a time (GitHub's are atomic).
    ref_lock: Arc<tokio::sync::Mutex<()>>,
}

/// The server: started on a free loopback port, stopped when dropped.
#[derive(Debug)]
pub struct FakeGithub {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<Recorded>>,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeGithub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeGithub {
    /// Serves app `app_id` whose public key is `keys.public_pem`.
    pub async fn start(app_id: &str, keys: &KeyPair) -> FakeGithub {
        Self::serve(app_id, keys, None).await
    }

    /// Serves repositories too, kept by `backend` (see [`GitBackend`]).
    pub async fn start_with_git(app_id: &str, keys: &KeyPair, backend: Arc<dyn GitBackend>) -> FakeGithub {
        Self::serve(app_id, keys, Some(backend)).await
    }

    async fn serve(app_id: &str, keys: &KeyPair, backend: Option<Arc<dyn GitBackend>>) -> FakeGithub {
        let key = DecodingKey::from_rsa_pem(&keys.public_pem).unwrap_or_else(|e| panic!("public key: {e}"));
        let state = Arc::new(Mutex::new(Recorded { token_lifetime_secs: 3600, ..Recorded::default() }));
        let listener =
            tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("bind loopback: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("local_addr: {e}"));
        let shared = Shared {
            app_id: app_id.to_owned(),
            key: Arc::new(key),
            state: state.clone(),
            addr,
            backend,
            ref_lock: Arc::default(),
        };
        let app = Router::new()
            .route("/app/installations/{id}", get(installation))
            .route("/app/installations/{id}/access_tokens", post(tokens::access_token))
            .route("/login/oauth/access_token", post(users::oauth_token))
            .route("/user/installations", get(users::user_installations))
            .route("/user", get(users::user))
            .route("/user/memberships/orgs/{org}", get(users::membership))
            .route("/orgs/{org}/repos", post(repos::create_in_org))
            .route("/repos/{o}/{r}", get(repos::get_repo).patch(repos::update_repo).delete(repos::delete_repo))
            .route("/repos/{o}/{r}/git/ref/heads/{*branch}", get(git_data::get_ref))
            .route("/repos/{o}/{r}/git/refs/heads/{*branch}", patch(git_data::update_ref))
            .route("/repos/{o}/{r}/git/refs", post(git_data::create_ref))
            .route("/repos/{o}/{r}/git/commits/{sha}", get(git_data::get_commit))
            .route("/repos/{o}/{r}/git/commits", post(git_data::create_commit))
            .route("/repos/{o}/{r}/git/blobs", post(git_data::create_blob))
            .route("/repos/{o}/{r}/git/trees", post(git_data::create_tree))
            .route("/repos/{o}/{r}/contents/{*path}", axum::routing::put(git_data::create_file))
            .route("/repos/{o}/{r}/pulls", get(pulls::list_pulls))
            .route("/repos/{o}/{r}/pulls/{n}", get(pulls::get_pull))
            .route("/repos/{o}/{r}/issues/{n}/comments", get(pulls::list_comments).post(pulls::create_comment))
            .route("/repos/{o}/{r}/issues/comments/{id}", patch(pulls::update_comment))
            .route("/repos/{o}/{r}/deployments", get(pulls::list_deployments).post(pulls::create_deployment))
            .route("/repos/{o}/{r}/deployments/{id}/statuses", post(pulls::create_status))
            .fallback(repos::git_http)
            .layer(axum::middleware::from_fn_with_state(shared.clone(), far_away))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeGithub { addr, state, shared, task }
    }

    /// A repository of installation `installation`, made on GitHub's side
    /// (empty; `commit` adds to it).
    pub fn add_repo(&self, installation: u64, full_name: &str, private: bool) -> FakeRepo {
        self.shared.add_repo(installation, full_name, private, "")
    }

    /// Revokes every installation token issued so far, before it expires
    /// (as GitHub does when an app's permissions change): the API and
    /// git's smart HTTP refuse them from now on.
    pub fn revoke_tokens(&self) {
        let mut state = self.lock();
        state.tokens.clear();
        if let Some(backend) = &self.shared.backend {
            for repo in state.repos.values() {
                backend.revoke_all(&repo.key);
            }
        }
    }

    /// The repository `full_name`, as the fake holds it.
    pub fn repo(&self, full_name: &str) -> Option<FakeRepo> {
        self.lock().repos.get(&full_name.to_ascii_lowercase()).cloned()
    }

    /// Commits `files` on `branch` of `full_name` (on the branch's tree, or
    /// alone); the commit id.
    pub fn commit(&self, full_name: &str, branch: &str, files: &[(&str, &[u8])]) -> String {
        let repo = self.repo(full_name).unwrap_or_else(|| panic!("no repository {full_name}"));
        let parent = repos::head(&repo.dir, branch);
        repos::commit_files(&repo.dir, branch, parent.as_deref(), files, "commit on GitHub")
            .unwrap_or_else(|e| panic!("commit: {e}"))
            .0
    }

    /// The head of `branch` of `full_name`.
    pub fn head(&self, full_name: &str, branch: &str) -> Option<String> {
        repos::head(&self.repo(full_name)?.dir, branch)
    }

    /// `git` in `full_name`'s repository: its output.
    pub fn git(&self, full_name: &str, args: &[&str]) -> String {
        let repo = self.repo(full_name).unwrap_or_else(|| panic!("no repository {full_name}"));
        repos::git(&repo.dir, args, b"", None, &[]).unwrap_or_else(|e| panic!("git {args:?}: {e}"))
    }

    /// The REST base URL (`api_url` of the app settings).
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Adds an installation of the app on `login`.
    pub fn install(&self, id: u64, login: &str, account_type: &str) {
        let installation =
            FakeInstallation { account_login: login.into(), account_type: account_type.into(), suspended: false };
        self.lock().installations.insert(id, installation);
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets GitHub user `user` see installation `id` as an admin of the
    /// organisation it is installed on (on a user account: as anyone who
    /// can see it; only the account's own user administers it).
    pub fn grant(&self, user: &str, id: u64) {
        self.grant_role(user, id, "admin");
    }

    /// Lets `user` see installation `id` as a plain member of its
    /// organisation (GitHub lists an installation to anyone who can read
    /// one of its repositories).
    pub fn grant_member(&self, user: &str, id: u64) {
        self.grant_role(user, id, "member");
    }

    fn grant_role(&self, user: &str, id: u64, role: &str) {
        let mut state = self.lock();
        state.user_installations.entry(user.into()).or_default().push(id);
        let org = state.installations.get(&id).filter(|i| i.account_type == "Organization");
        if let Some(org) = org.map(|i| i.account_login.to_ascii_lowercase()) {
            state.memberships.insert((user.into(), org), role.into());
        }
    }

    /// The OAuth code GitHub gives `user`'s browser on the setup redirect.
    pub fn code_for(&self, user: &str) -> String {
        let mut state = self.lock();
        let code = format!("code{}{user}", state.codes.len() + state.user_tokens.len());
        state.codes.insert(code.clone(), user.into());
        code
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Shared {
    /// The app's bot user, author of the comments it writes.
    fn bot(&self) -> String {
        format!("{APP_SLUG}[bot]")
    }

    /// The fake's own URL: its web address, where repositories are cloned.
    fn web_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the request; `Err` is the message of GitHub's 401 for a
    /// JWT it cannot use.
    fn as_app(&self, method: &str, path: String, headers: &HeaderMap) -> Result<(), &'static str> {
        let documented = headers.get("accept").is_some_and(|v| v == "application/vnd.github+json")
            && headers.get("x-github-api-version").is_some_and(|v| v == crate::api::API_VERSION);
        self.lock().requests.push((method.into(), path, documented));
        let jwt = bearer(headers).ok_or("A JSON web token could not be decoded")?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[self.app_id.as_str()]);
        validation.set_required_spec_claims(&["exp", "iat", "iss"]);
        let claims = jsonwebtoken::decode::<Claims>(jwt, &self.key, &validation)
            .map_err(|_| "A JSON web token could not be decoded")?
            .claims;
        if claims.exp - claims.iat > 600 {
            return Err("'Expiration time' claim ('exp') is too far in the future");
        }
        Ok(())
    }
}

/// Serves each request after [`Recorded::request_delay`].
async fn far_away(State(s): State<Shared>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let delay = s.lock().request_delay;
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    next.run(request).await
}

#[derive(Deserialize)]
struct Claims {
    iat: i64,
    exp: i64,
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get("authorization")?.to_str().ok()?.strip_prefix("Bearer ")
}

fn unauthorized(message: &str) -> Response {
    let body = json!({"message": message, "documentation_url": "https://docs.github.com/rest"});
    (StatusCode::UNAUTHORIZED, Json(body)).into_response()
}

fn not_found() -> Response {
    let body = json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"});
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

fn installation_body(id: u64, i: &FakeInstallation) -> Value {
    json!({
        "id": id,
        "account": {"login": i.account_login, "id": 1, "type": i.account_type},
        "repository_selection": "selected",
        "access_tokens_url": format!("https://api.github.com/app/installations/{id}/access_tokens"),
        "app_id": 1,
        "target_type": i.account_type,
        "permissions": {"contents": "write", "metadata": "read", "administration": "write"},
        "events": ["push", "pull_request"],
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "suspended_at": if i.suspended { json!("2026-01-02T00:00:00Z") } else { Value::Null },
    })
}

async fn installation(State(s): State<Shared>, UrlPath(id): UrlPath<u64>, headers: HeaderMap) -> Response {
    if let Err(refused) = s.as_app("GET", format!("/app/installations/{id}"), &headers) {
        return unauthorized(refused);
    }
    match s.lock().installations.get(&id) {
        Some(i) => Json(installation_body(id, i)).into_response(),
        None => not_found(),
    }
}
