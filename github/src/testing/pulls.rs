//! The fake GitHub's pull requests, issue comments and deployments: the
//! endpoints the trigger loop calls (list and get pull requests, list,
//! create and edit comments, find and create deployments, add statuses),
//! with GitHub's shapes, and what a test does on GitHub's side (open,
//! push to, close a pull request; the `pull_request` delivery GitHub
//! would send for it). A pull request's head is kept as
//! `refs/pull/<n>/head` in the base repository, as GitHub keeps it, so a
//! fork's commits are fetchable there.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::repos::{git, head};
use super::{FakeGithub, Shared, not_found};

/// A pull request on the fake.
#[derive(Clone, Debug)]
pub struct FakePull {
    pub number: u64,
    pub state: String,
    pub merged: bool,
    pub title: String,
    /// The branch of the base repository its commits come from (a fork's
    /// too: the test keeps them there, and the head repository is named
    /// by `head_repo`).
    pub head_branch: String,
    pub head_sha: String,
    pub head_repo: String,
    pub base: String,
    pub updated_at: DateTime<Utc>,
}

/// A comment on a pull request.
#[derive(Clone, Debug)]
pub struct FakeComment {
    pub id: u64,
    pub repo: String,
    pub number: u64,
    pub login: String,
    pub body: String,
    pub edits: usize,
}

/// A deployment and its statuses (state, environment_url), oldest first.
#[derive(Clone, Debug)]
pub struct FakeDeployment {
    pub id: u64,
    pub repo: String,
    pub sha: String,
    pub environment: String,
    pub statuses: Vec<(String, Option<String>)>,
}

/// What the fake holds of pull requests.
#[derive(Debug, Default)]
pub struct Reviews {
    /// By lowercase repository name, then number.
    pub pulls: BTreeMap<String, BTreeMap<u64, FakePull>>,
    pub comments: Vec<FakeComment>,
    pub deployments: Vec<FakeDeployment>,
    next_id: u64,
}

impl Reviews {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        1000 + self.next_id
    }
}

fn pull_body(full: &str, web: &str, p: &FakePull) -> Value {
    json!({
        "url": format!("{web}/api/repos/{full}/pulls/{}", p.number),
        "id": p.number * 7, "number": p.number, "state": p.state, "locked": false, "title": p.title,
        "user": {"login": "octocat", "type": "User"},
        "html_url": format!("{web}/{full}/pull/{}", p.number),
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": p.updated_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "closed_at": if p.state == "closed" { json!(p.updated_at) } else { Value::Null },
        "merged_at": if p.merged { json!(p.updated_at) } else { Value::Null },
        "head": {"label": format!("x:{}", p.head_branch), "ref": p.head_branch, "sha": p.head_sha,
                 "repo": {"full_name": p.head_repo}},
        "base": {"label": format!("x:{}", p.base), "ref": p.base, "sha": "0".repeat(40),
                 "repo": {"full_name": full}},
    })
}

impl FakeGithub {
    /// Opens a pull request of `head_branch` (a branch of `full_name`)
    /// into `base`; `fork`: the head repository's full name when it is a
    /// fork. Its number.
    pub fn open_pull(&self, full_name: &str, head_branch: &str, base: &str, fork: Option<&str>) -> u64 {
        let repo = self.repo(full_name).unwrap_or_else(|| panic!("no repository {full_name}"));
        let sha = head(&repo.dir, head_branch).unwrap_or_else(|| panic!("no branch {head_branch}"));
        let mut state = self.lock();
        let key = full_name.to_ascii_lowercase();
        let pulls = state.reviews.pulls.entry(key).or_default();
        let number = pulls.keys().max().copied().unwrap_or(0) + 1;
        pulls.insert(
            number,
            FakePull {
                number,
                state: "open".into(),
                merged: false,
                title: format!("Change {number}"),
                head_branch: head_branch.into(),
                head_sha: sha.clone(),
                head_repo: fork.unwrap_or(&repo.full_name).into(),
                base: base.into(),
                updated_at: tick(None),
            },
        );
        drop(state);
        set_pull_ref(&repo.dir, number, &sha);
        number
    }

    /// The pull request's head follows its branch (a push to it: GitHub's
    /// `synchronize`).
    pub fn sync_pull(&self, full_name: &str, number: u64) {
        let repo = self.repo(full_name).unwrap_or_else(|| panic!("no repository {full_name}"));
        let mut state = self.lock();
        let pull = state.reviews.pulls.get_mut(&full_name.to_ascii_lowercase()).and_then(|p| p.get_mut(&number));
        let pull = pull.unwrap_or_else(|| panic!("no pull request {number}"));
        pull.head_sha = head(&repo.dir, &pull.head_branch).unwrap_or_else(|| panic!("no branch"));
        pull.updated_at = tick(Some(pull.updated_at));
        let sha = pull.head_sha.clone();
        drop(state);
        set_pull_ref(&repo.dir, number, &sha);
    }

    /// Closes the pull request (merged or not).
    pub fn close_pull(&self, full_name: &str, number: u64, merged: bool) {
        let mut state = self.lock();
        let pull = state.reviews.pulls.get_mut(&full_name.to_ascii_lowercase()).and_then(|p| p.get_mut(&number));
        let pull = pull.unwrap_or_else(|| panic!("no pull request {number}"));
        pull.state = "closed".into();
        pull.merged = merged;
        pull.updated_at = tick(Some(pull.updated_at));
    }

    /// The `pull_request` delivery GitHub sends for `action` on the pull
    /// request as it is now, from installation `installation`.
    pub fn pull_event(&self, full_name: &str, number: u64, action: &str) -> Value {
        let state = self.lock();
        let pull = state.reviews.pulls.get(&full_name.to_ascii_lowercase()).and_then(|p| p.get(&number));
        let pull = pull.unwrap_or_else(|| panic!("no pull request {number}"));
        let installation = state.repos.get(&full_name.to_ascii_lowercase()).map_or(0, |r| r.installation);
        json!({
            "action": action,
            "number": number,
            "pull_request": pull_body(full_name, &self.api_url(), pull),
            "repository": {"full_name": full_name, "private": true},
            "installation": {"id": installation},
            "sender": {"login": "octocat"},
        })
    }

    /// play's comments on the pull request (by the app's bot).
    pub fn comments(&self, full_name: &str, number: u64) -> Vec<FakeComment> {
        let key = full_name.to_ascii_lowercase();
        self.lock().reviews.comments.iter().filter(|c| c.repo == key && c.number == number).cloned().collect()
    }

    /// Deployments of `full_name`, oldest first.
    pub fn deployments(&self, full_name: &str) -> Vec<FakeDeployment> {
        let key = full_name.to_ascii_lowercase();
        self.lock().reviews.deployments.iter().filter(|d| d.repo == key).cloned().collect()
    }

    /// A comment on the pull request by someone else (`login`).
    pub fn comment_as(&self, full_name: &str, number: u64, login: &str, body: &str) {
        let mut state = self.lock();
        let id = state.reviews.id();
        let repo = full_name.to_ascii_lowercase();
        state.reviews.comments.push(FakeComment { id, repo, number, login: login.into(), body: body.into(), edits: 0 });
    }
}

/// A time after `after` (GitHub's are whole seconds): every change of a
/// pull request is later than the one before.
fn tick(after: Option<DateTime<Utc>>) -> DateTime<Utc> {
    let now = DateTime::from_timestamp(Utc::now().timestamp(), 0).unwrap_or_default();
    match after {
        Some(before) if now <= before => before + chrono::Duration::seconds(1),
        _ => now,
    }
}

fn set_pull_ref(dir: &std::path::Path, number: u64, sha: &str) {
    git(dir, &["update-ref", &format!("refs/pull/{number}/head"), sha], b"", None, &[])
        .unwrap_or_else(|e| panic!("update-ref: {e}"));
}

#[derive(Deserialize)]
pub(crate) struct ListQuery {
    state: Option<String>,
    per_page: Option<usize>,
    page: Option<usize>,
    sha: Option<String>,
    environment: Option<String>,
}

fn page<T: Clone>(items: &[T], q: &ListQuery) -> Vec<T> {
    let per_page = q.per_page.unwrap_or(30).clamp(1, 100);
    let skip = (q.page.unwrap_or(1).max(1) - 1) * per_page;
    items.iter().skip(skip).take(per_page).cloned().collect()
}

/// `GET /repos/{o}/{r}/pulls`.
pub(crate) async fn list_pulls(
    State(s): State<Shared>,
    UrlPath((o, r)): UrlPath<(String, String)>,
    Query(q): Query<ListQuery>,
    headers: HeaderMap,
) -> Response {
    let Some(repo) = s.visible(&headers, "GET", &o, &r, "/pulls") else { return not_found() };
    let wanted = q.state.clone().unwrap_or_else(|| "open".into());
    let state = s.lock();
    let pulls: Vec<Value> = state
        .reviews
        .pulls
        .get(&repo.full_name.to_ascii_lowercase())
        .into_iter()
        .flat_map(|p| p.values())
        .filter(|p| wanted == "all" || p.state == wanted)
        .map(|p| pull_body(&repo.full_name, &s.web_url(), p))
        .collect();
    Json(page(&pulls, &q)).into_response()
}

/// `GET /repos/{o}/{r}/pulls/{n}`.
pub(crate) async fn get_pull(
    State(s): State<Shared>,
    UrlPath((o, r, n)): UrlPath<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let Some(repo) = s.visible(&headers, "GET", &o, &r, &format!("/pulls/{n}")) else { return not_found() };
    let state = s.lock();
    match state.reviews.pulls.get(&repo.full_name.to_ascii_lowercase()).and_then(|p| p.get(&n)) {
        Some(p) => Json(pull_body(&repo.full_name, &s.web_url(), p)).into_response(),
        None => not_found(),
    }
}

fn comment_body(c: &FakeComment) -> Value {
    json!({"id": c.id, "body": c.body, "user": {"login": c.login, "type": if c.login.ends_with("[bot]") { "Bot" } else { "User" }},
           "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"})
}

/// `GET /repos/{o}/{r}/issues/{n}/comments`.
pub(crate) async fn list_comments(
    State(s): State<Shared>,
    UrlPath((o, r, n)): UrlPath<(String, String, u64)>,
    Query(q): Query<ListQuery>,
    headers: HeaderMap,
) -> Response {
    let Some(repo) = s.visible(&headers, "GET", &o, &r, &format!("/issues/{n}/comments")) else {
        return not_found();
    };
    let key = repo.full_name.to_ascii_lowercase();
    let state = s.lock();
    let all: Vec<Value> =
        state.reviews.comments.iter().filter(|c| c.repo == key && c.number == n).map(comment_body).collect();
    Json(page(&all, &q)).into_response()
}

#[derive(Deserialize)]
pub(crate) struct CommentRequest {
    body: String,
}

/// `POST /repos/{o}/{r}/issues/{n}/comments`: written by the app's bot.
pub(crate) async fn create_comment(
    State(s): State<Shared>,
    UrlPath((o, r, n)): UrlPath<(String, String, u64)>,
    headers: HeaderMap,
    Json(body): Json<CommentRequest>,
) -> Response {
    let Some(repo) = s.visible(&headers, "POST", &o, &r, &format!("/issues/{n}/comments")) else {
        return not_found();
    };
    let key = repo.full_name.to_ascii_lowercase();
    let mut state = s.lock();
    if !state.reviews.pulls.get(&key).is_some_and(|p| p.contains_key(&n)) {
        return not_found();
    }
    let id = state.reviews.id();
    let comment = FakeComment { id, repo: key, number: n, login: s.bot(), body: body.body, edits: 0 };
    let out = comment_body(&comment);
    state.reviews.comments.push(comment);
    (StatusCode::CREATED, Json(out)).into_response()
}

/// `PATCH /repos/{o}/{r}/issues/comments/{id}`: only the bot's own.
pub(crate) async fn update_comment(
    State(s): State<Shared>,
    UrlPath((o, r, id)): UrlPath<(String, String, u64)>,
    headers: HeaderMap,
    Json(body): Json<CommentRequest>,
) -> Response {
    let Some(repo) = s.visible(&headers, "PATCH", &o, &r, &format!("/issues/comments/{id}")) else {
        return not_found();
    };
    let key = repo.full_name.to_ascii_lowercase();
    let bot = s.bot();
    let mut state = s.lock();
    let Some(comment) = state.reviews.comments.iter_mut().find(|c| c.id == id && c.repo == key) else {
        return not_found();
    };
    if comment.login != bot {
        return super::repos::said(StatusCode::FORBIDDEN, "Resource not accessible by integration");
    }
    comment.body = body.body;
    comment.edits += 1;
    Json(comment_body(comment)).into_response()
}

/// `GET /repos/{o}/{r}/deployments?sha=&environment=`.
pub(crate) async fn list_deployments(
    State(s): State<Shared>,
    UrlPath((o, r)): UrlPath<(String, String)>,
    Query(q): Query<ListQuery>,
    headers: HeaderMap,
) -> Response {
    let Some(repo) = s.visible(&headers, "GET", &o, &r, "/deployments") else { return not_found() };
    let key = repo.full_name.to_ascii_lowercase();
    let state = s.lock();
    let found: Vec<Value> = state
        .reviews
        .deployments
        .iter()
        .rev()
        .filter(|d| d.repo == key)
        .filter(|d| q.sha.as_ref().is_none_or(|sha| *sha == d.sha))
        .filter(|d| q.environment.as_ref().is_none_or(|e| *e == d.environment))
        .map(|d| json!({"id": d.id, "sha": d.sha, "ref": d.sha, "environment": d.environment}))
        .collect();
    Json(page(&found, &q)).into_response()
}

#[derive(Deserialize)]
pub(crate) struct DeploymentRequest {
    #[serde(rename = "ref")]
    reference: String,
    environment: Option<String>,
}

/// `POST /repos/{o}/{r}/deployments` of a commit id.
pub(crate) async fn create_deployment(
    State(s): State<Shared>,
    UrlPath((o, r)): UrlPath<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<DeploymentRequest>,
) -> Response {
    let Some(repo) = s.visible(&headers, "POST", &o, &r, "/deployments") else { return not_found() };
    let known = git(&repo.dir, &["cat-file", "-e", &format!("{}^{{commit}}", body.reference)], b"", None, &[]);
    if known.is_err() {
        return super::repos::unprocessable("No ref found for: ".to_owned().as_str());
    }
    let mut state = s.lock();
    let id = state.reviews.id();
    let environment = body.environment.unwrap_or_else(|| "production".into());
    let d = FakeDeployment {
        id,
        repo: repo.full_name.to_ascii_lowercase(),
        sha: body.reference.clone(),
        environment: environment.clone(),
        statuses: Vec::new(),
    };
    state.reviews.deployments.push(d);
    let out = json!({"id": id, "sha": body.reference, "ref": body.reference, "environment": environment});
    (StatusCode::CREATED, Json(out)).into_response()
}

#[derive(Deserialize)]
pub(crate) struct StatusRequest {
    state: String,
    environment_url: Option<String>,
}

/// `POST /repos/{o}/{r}/deployments/{id}/statuses`.
pub(crate) async fn create_status(
    State(s): State<Shared>,
    UrlPath((o, r, id)): UrlPath<(String, String, u64)>,
    headers: HeaderMap,
    Json(body): Json<StatusRequest>,
) -> Response {
    let Some(repo) = s.visible(&headers, "POST", &o, &r, &format!("/deployments/{id}/statuses")) else {
        return not_found();
    };
    const STATES: [&str; 7] = ["error", "failure", "inactive", "in_progress", "queued", "pending", "success"];
    if !STATES.contains(&body.state.as_str()) {
        return super::repos::unprocessable("Validation Failed");
    }
    let key = repo.full_name.to_ascii_lowercase();
    let mut state = s.lock();
    let status_id = state.reviews.id();
    let Some(d) = state.reviews.deployments.iter_mut().find(|d| d.id == id && d.repo == key) else {
        return not_found();
    };
    d.statuses.push((body.state.clone(), body.environment_url.clone()));
    (StatusCode::CREATED, Json(json!({"id": status_id, "state": body.state, "environment_url": body.environment_url})))
        .into_response()
}
