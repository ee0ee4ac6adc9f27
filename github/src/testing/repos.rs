//! The fake GitHub's repositories: the REST endpoints play calls on them
//! (create in an organisation, get, delete, the Git database, the contents
//! API's create) over real bare repositories that a [`GitBackend`] keeps
//! and serves over git's smart HTTP, where the installation tokens the
//! fake issued are the passwords. Objects are written by the `git` command
//! (Debian's package), so every id is a real one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use axum::Json;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{IssuedScope, Shared, bearer, not_found};

/// What GitHub asks of an installation token for `method` on a
/// repository endpoint (`rest` after `/repos/{owner}/{repo}`): any one of
/// the alternatives.
fn needed(method: &str, rest: &str) -> &'static [(&'static str, &'static str)] {
    let read = method == "GET";
    match rest {
        "" if read => &[("metadata", "read")],
        "" => &[("administration", "write")],
        r if r.starts_with("/git/") || r.starts_with("/contents/") => {
            if read {
                &[("contents", "read")]
            } else {
                &[("contents", "write")]
            }
        }
        r if r.starts_with("/pulls") => &[("pull_requests", "read")],
        r if r.starts_with("/issues/") && read => &[("pull_requests", "read"), ("issues", "read")],
        r if r.starts_with("/issues/") => &[("pull_requests", "write"), ("issues", "write")],
        r if r.starts_with("/deployments") && read => &[("deployments", "read")],
        r if r.starts_with("/deployments") => &[("deployments", "write")],
        _ => &[("metadata", "read")],
    }
}

/// The password of a request's HTTP Basic credential.
fn basic_password(headers: &HeaderMap) -> Option<String> {
    use base64::Engine as _;
    let value = headers.get("authorization")?.to_str().ok()?.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(value.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    Some(text.split_once(':')?.1.to_owned())
}

/// Where the fake keeps repositories: bare repositories served over git's
/// smart HTTP (in play's tests, `play_git::testing::GitServer`).
pub trait GitBackend: Send + Sync + 'static {
    /// Creates an empty bare repository `key` (no `/` in it) whose `HEAD`
    /// is `default_branch`; its directory.
    fn create(&self, key: &str, default_branch: &str) -> PathBuf;
    /// Lets `token` read and push `key` over HTTP (basic password).
    fn allow(&self, key: &str, token: &str);
    /// Takes back every token `allow` gave `key`.
    fn revoke_all(&self, key: &str);
    /// The URL `key` is served at (`http://…/<key>.git`).
    fn url(&self, key: &str) -> String;
}

/// One repository of the fake.
#[derive(Clone, Debug)]
pub struct FakeRepo {
    pub full_name: String,
    pub installation: u64,
    pub private: bool,
    pub description: String,
    pub default_branch: String,
    /// The backend's name of it.
    pub key: String,
    pub dir: PathBuf,
}

impl FakeRepo {
    fn body(&self, web: &str) -> Value {
        json!({
            "id": 1, "name": self.full_name.split_once('/').map_or("", |(_, n)| n),
            "full_name": self.full_name, "private": self.private,
            "description": if self.description.is_empty() { Value::Null } else { json!(self.description) },
            "default_branch": self.default_branch,
            "html_url": format!("{web}/{}", self.full_name),
            "clone_url": format!("{web}/{}.git", self.full_name),
        })
    }
}

/// Runs `git` in `dir` (a bare repository) with `stdin`, `index` as
/// `GIT_INDEX_FILE` and `env`; stdout, or stderr as the error.
pub(crate) fn git(
    dir: &Path,
    args: &[&str],
    stdin: &[u8],
    index: Option<&Path>,
    env: &[(&str, &str)],
) -> Result<String, String> {
    let mut command = Command::new("git");
    command.args(args).env("GIT_DIR", dir).env("GIT_CONFIG_NOSYSTEM", "1").envs(env.iter().copied());
    if let Some(index) = index {
        command.env("GIT_INDEX_FILE", index);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("git: {e} (apt-get install git)"));
    if let Some(mut input) = child.stdin.take() {
        std::io::Write::write_all(&mut input, stdin).unwrap_or_else(|e| panic!("git stdin: {e}"));
    }
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("git: {e}"));
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

pub(crate) fn said(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"message": message, "documentation_url": "https://docs.github.com/rest"}))).into_response()
}

pub(crate) fn unprocessable(message: &str) -> Response {
    said(StatusCode::UNPROCESSABLE_ENTITY, message)
}

pub(crate) fn empty_repository() -> Response {
    said(StatusCode::CONFLICT, "Git Repository is empty.")
}

impl Shared {
    /// The installation a request's token is of, and what the token may
    /// do.
    fn installation_of(&self, headers: &HeaderMap) -> Option<(u64, IssuedScope)> {
        let token =
            bearer(headers).or_else(|| headers.get("authorization")?.to_str().ok()?.strip_prefix("token "))?.to_owned();
        let state = self.lock();
        let installation = *state.tokens.get(&token)?;
        Some((installation, state.scopes.get(&token).cloned().unwrap_or_default()))
    }

    /// Repository `owner/name` if the request's token may see it and do
    /// what `method` on `rest` does (GitHub's permission per endpoint,
    /// [`needed`]); a refusal for what the token may not do is recorded
    /// in [`Recorded::refused`](super::Recorded).
    pub(crate) fn visible(
        &self,
        headers: &HeaderMap,
        method: &str,
        owner: &str,
        name: &str,
        rest: &str,
    ) -> Option<FakeRepo> {
        let full = format!("{owner}/{name}").to_ascii_lowercase();
        let path = format!("/repos/{owner}/{name}{rest}");
        self.lock().requests.push((method.into(), path.clone(), true));
        let (installation, scope) = self.installation_of(headers)?;
        let repo = self.lock().repos.get(&full).filter(|r| r.installation == installation).cloned()?;
        let alternatives = needed(method, rest);
        if !scope.reaches(name) || !alternatives.iter().any(|(p, l)| scope.grants(p, l)) {
            let (p, l) = alternatives[0];
            self.lock().refused.push(format!("{method} {path}: the token may not do {p}: {l} on {name}"));
            return None;
        }
        Some(repo)
    }

    /// Whether a git request's basic password, a token this server
    /// issued, may not fetch (or push, `write`) repository `name` of
    /// `installation`. Other passwords are for the backend to refuse
    /// (401, as for a revoked token).
    fn git_out_of_scope(&self, headers: &HeaderMap, installation: u64, name: &str, write: bool) -> bool {
        let Some(password) = basic_password(headers) else { return false };
        let state = self.lock();
        let (Some(of), Some(scope)) = (state.tokens.get(&password), state.scopes.get(&password)) else {
            return false;
        };
        *of != installation || !scope.reaches(name) || !scope.grants("contents", if write { "write" } else { "read" })
    }

    /// Adds a repository of `installation` on the backend; its record.
    pub(crate) fn add_repo(&self, installation: u64, full_name: &str, private: bool, description: &str) -> FakeRepo {
        let backend = self.backend.as_ref().unwrap_or_else(|| panic!("FakeGithub::with_git: no git backend"));
        let key = full_name.to_ascii_lowercase().replace('/', "--");
        let dir = backend.create(&key, "main");
        let mut state = self.lock();
        for (token, of) in &state.tokens {
            if *of == installation {
                backend.allow(&key, token);
            }
        }
        let repo = FakeRepo {
            full_name: full_name.to_owned(),
            installation,
            private,
            description: description.to_owned(),
            default_branch: "main".into(),
            key,
            dir,
        };
        state.repos.insert(full_name.to_ascii_lowercase(), repo.clone());
        repo
    }
}

#[derive(Deserialize)]
pub(crate) struct CreateRepo {
    name: String,
    description: Option<String>,
    private: Option<bool>,
    auto_init: Option<bool>,
}

/// `POST /orgs/{org}/repos`.
pub(crate) async fn create_in_org(
    State(s): State<Shared>,
    UrlPath(org): UrlPath<String>,
    headers: HeaderMap,
    Json(body): Json<CreateRepo>,
) -> Response {
    s.lock().requests.push(("POST".into(), format!("/orgs/{org}/repos"), true));
    let Some((installation, scope)) = s.installation_of(&headers) else { return not_found() };
    if !scope.grants("administration", "write") {
        s.lock().refused.push(format!("POST /orgs/{org}/repos: the token may not do administration: write"));
        return not_found();
    }
    let on_org = s
        .lock()
        .installations
        .get(&installation)
        .is_some_and(|i| i.account_login.eq_ignore_ascii_case(&org) && i.account_type == "Organization");
    if !on_org {
        return not_found();
    }
    let full = format!("{org}/{}", body.name);
    if s.lock().repos.contains_key(&full.to_ascii_lowercase()) {
        return unprocessable("Repository creation failed.");
    }
    let repo = s.add_repo(installation, &full, body.private.unwrap_or(false), &body.description.unwrap_or_default());
    if body.auto_init.unwrap_or(false) {
        let readme = format!("# {}\n", body.name);
        if let Err(e) = commit_files(&repo.dir, "main", None, &[("README.md", readme.as_bytes())], "Initial commit") {
            return said(StatusCode::INTERNAL_SERVER_ERROR, &e);
        }
    }
    (StatusCode::CREATED, Json(repo.body(&s.web_url()))).into_response()
}

/// Makes a commit of `files` on `parent`'s tree (or alone), moving `branch`.
pub(crate) fn commit_files(
    dir: &Path,
    branch: &str,
    parent: Option<&str>,
    files: &[(&str, &[u8])],
    message: &str,
) -> Result<(String, String), String> {
    let index_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let index = index_dir.path().join("index");
    match parent {
        Some(parent) => git(dir, &["read-tree", parent], b"", Some(&index), &[])?,
        None => git(dir, &["read-tree", "--empty"], b"", Some(&index), &[])?,
    };
    for (path, bytes) in files {
        let blob = git(dir, &["hash-object", "-w", "--stdin"], bytes, None, &[])?;
        git(dir, &["update-index", "--add", "--cacheinfo", &format!("100644,{blob},{path}")], b"", Some(&index), &[])?;
    }
    let tree = git(dir, &["write-tree"], b"", Some(&index), &[])?;
    let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
    if let Some(parent) = parent {
        args.extend(["-p", parent]);
    }
    let commit = git(dir, &args, b"", None, &AUTHOR)?;
    git(dir, &["update-ref", &format!("refs/heads/{branch}"), &commit], b"", None, &[])?;
    Ok((commit, tree))
}

const AUTHOR: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "GitHub"),
    ("GIT_AUTHOR_EMAIL", "noreply@github.com"),
    ("GIT_COMMITTER_NAME", "GitHub"),
    ("GIT_COMMITTER_EMAIL", "noreply@github.com"),
];

/// Whether the repository has no commit at all.
pub(crate) fn is_empty(dir: &Path) -> bool {
    git(dir, &["for-each-ref", "--count=1", "refs/heads"], b"", None, &[]).map_or(true, |out| out.is_empty())
}

pub(crate) fn head(dir: &Path, branch: &str) -> Option<String> {
    git(dir, &["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}^{{commit}}")], b"", None, &[]).ok()
}

/// `GET /repos/{o}/{r}`.
pub(crate) async fn get_repo(
    State(s): State<Shared>,
    UrlPath((o, r)): UrlPath<(String, String)>,
    headers: HeaderMap,
) -> Response {
    match s.visible(&headers, "GET", &o, &r, "") {
        Some(repo) => Json(repo.body(&s.web_url())).into_response(),
        None => not_found(),
    }
}

#[derive(Deserialize)]
pub(crate) struct UpdateRepo {
    description: Option<String>,
    private: Option<bool>,
}

/// `PATCH /repos/{o}/{r}` (GitHub's "Update a repository"): the two
/// settings play changes.
pub(crate) async fn update_repo(
    State(s): State<Shared>,
    UrlPath((o, r)): UrlPath<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<UpdateRepo>,
) -> Response {
    let Some(repo) = s.visible(&headers, "PATCH", &o, &r, "") else { return not_found() };
    let web = s.web_url();
    let mut state = s.lock();
    let Some(stored) = state.repos.get_mut(&repo.full_name.to_ascii_lowercase()) else { return not_found() };
    if let Some(description) = body.description {
        stored.description = description;
    }
    if let Some(private) = body.private {
        stored.private = private;
    }
    Json(stored.body(&web)).into_response()
}

/// `DELETE /repos/{o}/{r}`.
pub(crate) async fn delete_repo(
    State(s): State<Shared>,
    UrlPath((o, r)): UrlPath<(String, String)>,
    headers: HeaderMap,
) -> Response {
    match s.visible(&headers, "DELETE", &o, &r, "") {
        Some(repo) => {
            s.lock().repos.remove(&repo.full_name.to_ascii_lowercase());
            StatusCode::NO_CONTENT.into_response()
        }
        None => not_found(),
    }
}

/// Git's smart HTTP at `/{owner}/{name}.git/...`, as GitHub serves it
/// beside its web pages: passed to the backend's repository, whose
/// passwords are the installation tokens the fake issued.
pub(crate) async fn git_http(State(s): State<Shared>, request: axum::extract::Request) -> Response {
    let path = request.uri().path().to_owned();
    let Some((full, rest)) = path.trim_start_matches('/').split_once(".git/") else { return not_found() };
    let (Some(repo), Some(backend)) = (s.lock().repos.get(&full.to_ascii_lowercase()).cloned(), s.backend.clone())
    else {
        return not_found();
    };
    let name = full.split_once('/').map_or(full, |(_, name)| name);
    let write = rest.ends_with("git-receive-pack") || request.uri().query() == Some("service=git-receive-pack");
    if s.git_out_of_scope(request.headers(), repo.installation, name, write) {
        let level = if write { "write" } else { "read" };
        s.lock().refused.push(format!("git {path}: the token may not do contents: {level} on {name}"));
        return said(StatusCode::FORBIDDEN, "Permission to the repository denied");
    }
    let query = request.uri().query().map(|q| format!("?{q}")).unwrap_or_default();
    let url = format!("{}/{rest}{query}", backend.url(&repo.key));
    let method = request.method().clone();
    let headers = request.headers().clone();
    let Ok(body) = axum::body::to_bytes(request.into_body(), 64 << 20).await else { return not_found() };
    let mut forward = reqwest::Client::new().request(method, url).body(body);
    for name in ["authorization", "content-type", "content-encoding", "accept", "git-protocol"] {
        if let Some(value) = headers.get(name) {
            forward = forward.header(name, value.as_bytes());
        }
    }
    let Ok(answer) = forward.send().await else { return said(StatusCode::BAD_GATEWAY, "git backend") };
    let mut response = Response::builder().status(answer.status().as_u16());
    for name in ["content-type", "www-authenticate", "cache-control"] {
        if let Some(value) = answer.headers().get(name) {
            response = response.header(name, value.as_bytes());
        }
    }
    let bytes = answer.bytes().await.unwrap_or_default();
    response.body(axum::body::Body::from(bytes)).unwrap_or_else(|_| not_found())
}
