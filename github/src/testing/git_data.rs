//! The fake GitHub's Git database endpoints (refs, commits, blobs, trees)
//! and the contents API's file create, over the backend's bare
//! repositories, with GitHub's answers: 409 on an empty repository, 422
//! for a branch move that is not a fast-forward or a reference that
//! exists.

use axum::Json;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::{Value, json};

use super::repos::{commit_files, empty_repository, git, head, is_empty, said, unprocessable};
use super::{Shared, not_found};

fn ref_body(branch: &str, sha: &str) -> Value {
    json!({"ref": format!("refs/heads/{branch}"), "object": {"type": "commit", "sha": sha}})
}

/// `GET /repos/{o}/{r}/git/ref/heads/{branch}`.
pub(crate) async fn get_ref(
    State(s): State<Shared>,
    UrlPath((o, r, branch)): UrlPath<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let Some(repo) = s.visible(&headers, "GET", &o, &r, &format!("/git/ref/heads/{branch}")) else {
        return not_found();
    };
    if is_empty(&repo.dir) {
        return empty_repository();
    }
    match head(&repo.dir, &branch) {
        Some(sha) => Json(ref_body(&branch, &sha)).into_response(),
        None => not_found(),
    }
}

/// `GET /repos/{o}/{r}/git/commits/{sha}`.
pub(crate) async fn get_commit(
    State(s): State<Shared>,
    UrlPath((o, r, sha)): UrlPath<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let Some(repo) = s.visible(&headers, "GET", &o, &r, &format!("/git/commits/{sha}")) else { return not_found() };
    let Ok(text) = git(&repo.dir, &["cat-file", "commit", &sha], b"", None, &[]) else { return not_found() };
    let field = |name: &str| -> Vec<Value> {
        text.lines().filter_map(|l| l.strip_prefix(name)).map(|v| json!({"sha": v.trim()})).collect()
    };
    let tree = field("tree ").into_iter().next().unwrap_or(Value::Null);
    Json(json!({"sha": sha, "tree": tree, "parents": field("parent ")})).into_response()
}

#[derive(Deserialize)]
pub(crate) struct NewBlob {
    content: String,
    encoding: String,
}

/// `POST /repos/{o}/{r}/git/blobs`.
pub(crate) async fn create_blob(
    State(s): State<Shared>,
    UrlPath((o, r)): UrlPath<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<NewBlob>,
) -> Response {
    let Some(repo) = s.visible(&headers, "POST", &o, &r, "/git/blobs") else { return not_found() };
    if is_empty(&repo.dir) {
        return empty_repository();
    }
    let bytes = match body.encoding.as_str() {
        "base64" => match STANDARD.decode(body.content.replace('\n', "")) {
            Ok(bytes) => bytes,
            Err(_) => return unprocessable("Invalid request.\n\ncontent is not valid Base64."),
        },
        _ => body.content.into_bytes(),
    };
    match git(&repo.dir, &["hash-object", "-w", "--stdin"], &bytes, None, &[]) {
        Ok(sha) => (StatusCode::CREATED, Json(json!({"sha": sha}))).into_response(),
        Err(e) => said(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

#[derive(Deserialize)]
pub(crate) struct NewTree {
    base_tree: Option<String>,
    tree: Vec<NewTreeEntry>,
}

#[derive(Deserialize)]
pub(crate) struct NewTreeEntry {
    path: String,
    mode: String,
    sha: Option<String>,
    content: Option<String>,
}

/// `POST /repos/{o}/{r}/git/trees`.
pub(crate) async fn create_tree(
    State(s): State<Shared>,
    UrlPath((o, r)): UrlPath<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<NewTree>,
) -> Response {
    let Some(repo) = s.visible(&headers, "POST", &o, &r, "/git/trees") else { return not_found() };
    if is_empty(&repo.dir) {
        return empty_repository();
    }
    let dir = repo.dir.as_path();
    // Three git processes for the whole tree, as GitHub answers it in one
    // call: inline contents are written to files and hashed by one
    // `hash-object --stdin-paths`, the entries go in by one
    // `update-index --index-info`. A process per entry (2,000 for a
    // 1,000-file push) outlasted the client's 20 s timeout on a loaded
    // CI machine.
    let made = (|| -> Result<String, String> {
        let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
        let index = scratch.path().join("index");
        match &body.base_tree {
            Some(base) => git(dir, &["read-tree", base], b"", Some(&index), &[])?,
            None => git(dir, &["read-tree", "--empty"], b"", Some(&index), &[])?,
        };
        let mut paths = String::new();
        for (i, entry) in body.tree.iter().enumerate() {
            match (&entry.sha, &entry.content) {
                (Some(_), _) => {}
                (None, Some(text)) => {
                    let file = scratch.path().join(format!("blob-{i}"));
                    std::fs::write(&file, text).map_err(|e| e.to_string())?;
                    paths.push_str(&format!("{}\n", file.display()));
                }
                (None, None) => return Err("tree.sha or tree.content is required".into()),
            }
        }
        let hashed = if paths.is_empty() {
            String::new()
        } else {
            git(dir, &["hash-object", "-w", "--stdin-paths"], paths.as_bytes(), None, &[])?
        };
        let mut hashed = hashed.lines();
        let mut info = String::new();
        for entry in &body.tree {
            let sha = match &entry.sha {
                Some(sha) => sha.clone(),
                None => hashed.next().ok_or_else(|| "git hash-object answered too few lines".to_owned())?.to_owned(),
            };
            info.push_str(&format!("{} {sha}\t{}\n", entry.mode, entry.path));
        }
        if !info.is_empty() {
            git(dir, &["update-index", "--index-info"], info.as_bytes(), Some(&index), &[])?;
        }
        git(dir, &["write-tree"], b"", Some(&index), &[])
    })();
    match made {
        Ok(sha) => (StatusCode::CREATED, Json(json!({"sha": sha, "tree": []}))).into_response(),
        Err(e) => unprocessable(&format!("GitRPC::BadObjectState: {e}")),
    }
}

#[derive(Deserialize)]
pub(crate) struct NewCommit {
    message: String,
    tree: String,
    parents: Vec<String>,
    author: Option<Person>,
}

#[derive(Deserialize)]
pub(crate) struct Person {
    name: String,
    email: String,
}

/// `POST /repos/{o}/{r}/git/commits`.
pub(crate) async fn create_commit(
    State(s): State<Shared>,
    UrlPath((o, r)): UrlPath<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<NewCommit>,
) -> Response {
    let Some(repo) = s.visible(&headers, "POST", &o, &r, "/git/commits") else { return not_found() };
    let mut args = vec!["commit-tree", body.tree.as_str(), "-m", body.message.as_str()];
    for parent in &body.parents {
        args.extend(["-p", parent.as_str()]);
    }
    let (name, email) =
        body.author.as_ref().map_or(("GitHub", "noreply@github.com"), |a| (a.name.as_str(), a.email.as_str()));
    let env = [
        ("GIT_AUTHOR_NAME", name),
        ("GIT_AUTHOR_EMAIL", email),
        ("GIT_COMMITTER_NAME", name),
        ("GIT_COMMITTER_EMAIL", email),
    ];
    match git(&repo.dir, &args, b"", None, &env) {
        Ok(sha) => (StatusCode::CREATED, Json(json!({"sha": sha, "tree": {"sha": body.tree}}))).into_response(),
        Err(e) => unprocessable(&format!("Invalid request: {e}")),
    }
}

#[derive(Deserialize)]
pub(crate) struct MoveRef {
    sha: String,
    force: Option<bool>,
}

/// `PATCH /repos/{o}/{r}/git/refs/heads/{branch}`: refused (422) unless
/// a fast-forward or `force`; the move itself is a compare-and-swap.
pub(crate) async fn update_ref(
    State(s): State<Shared>,
    UrlPath((o, r, branch)): UrlPath<(String, String, String)>,
    headers: HeaderMap,
    Json(body): Json<MoveRef>,
) -> Response {
    let Some(repo) = s.visible(&headers, "PATCH", &o, &r, &format!("/git/refs/heads/{branch}")) else {
        return not_found();
    };
    let _serialised = s.ref_lock.lock().await;
    let Some(current) = head(&repo.dir, &branch) else { return unprocessable("Reference does not exist") };
    let forward = git(&repo.dir, &["merge-base", "--is-ancestor", &current, &body.sha], b"", None, &[]).is_ok();
    if !forward && !body.force.unwrap_or(false) {
        return unprocessable("Update is not a fast forward");
    }
    match git(&repo.dir, &["update-ref", &format!("refs/heads/{branch}"), &body.sha, &current], b"", None, &[]) {
        Ok(_) => Json(ref_body(&branch, &body.sha)).into_response(),
        Err(_) => unprocessable("Update is not a fast forward"),
    }
}

#[derive(Deserialize)]
pub(crate) struct NewRef {
    #[serde(rename = "ref")]
    reference: String,
    sha: String,
}

/// `POST /repos/{o}/{r}/git/refs`: 422 when it exists.
pub(crate) async fn create_ref(
    State(s): State<Shared>,
    UrlPath((o, r)): UrlPath<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<NewRef>,
) -> Response {
    let Some(repo) = s.visible(&headers, "POST", &o, &r, "/git/refs") else { return not_found() };
    let _serialised = s.ref_lock.lock().await;
    let zero = "0".repeat(40);
    match git(&repo.dir, &["update-ref", &body.reference, &body.sha, &zero], b"", None, &[]) {
        Ok(_) => {
            (StatusCode::CREATED, Json(json!({"ref": body.reference, "object": {"sha": body.sha}}))).into_response()
        }
        Err(_) => unprocessable("Reference already exists"),
    }
}

#[derive(Deserialize)]
pub(crate) struct NewFile {
    message: String,
    content: String,
    branch: Option<String>,
}

/// `PUT /repos/{o}/{r}/contents/{path}`: creates a file (the one way to
/// write to an empty repository); a file that exists needs its `sha`,
/// which play never sends, so that is a 422 here as on GitHub.
pub(crate) async fn create_file(
    State(s): State<Shared>,
    UrlPath((o, r, path)): UrlPath<(String, String, String)>,
    headers: HeaderMap,
    Json(body): Json<NewFile>,
) -> Response {
    let Some(repo) = s.visible(&headers, "PUT", &o, &r, &format!("/contents/{path}")) else { return not_found() };
    let _serialised = s.ref_lock.lock().await;
    let branch = body.branch.unwrap_or_else(|| repo.default_branch.clone());
    let parent = head(&repo.dir, &branch);
    if let Some(parent) = &parent
        && git(&repo.dir, &["cat-file", "-e", &format!("{parent}:{path}")], b"", None, &[]).is_ok()
    {
        return unprocessable("Invalid request.\n\n\"sha\" wasn't supplied.");
    }
    let Ok(bytes) = STANDARD.decode(&body.content) else { return unprocessable("content is not valid Base64") };
    match commit_files(&repo.dir, &branch, parent.as_deref(), &[(path.as_str(), &bytes)], &body.message) {
        Ok((commit, tree)) => {
            let answer = json!({"content": {"path": path}, "commit": {"sha": commit, "tree": {"sha": tree}}});
            (StatusCode::CREATED, Json(answer)).into_response()
        }
        Err(e) => said(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}
