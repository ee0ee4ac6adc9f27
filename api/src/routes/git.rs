//! `/git/<owner>/<name>.git/...`: Git's smart HTTP for play's own Git host,
//! so the stock `git` client clones, fetches and pushes with an API key as
//! the HTTP Basic password (`docs/repositories.md`). Only the smart
//! protocol's three requests are served: `GET info/refs?service=...`,
//! `POST git-upload-pack`, `POST git-receive-pack`.
//!
//! Who may do what, decided here before the host sees the request:
//! - fetch: anyone for a public repository; for a private one, a key of
//!   its account with `repos:read` or `repos:write`;
//! - push: a key of its account with `repos:write`;
//! - without a credential, anything but a public fetch is `401` with a
//!   Basic challenge (so `git` asks for one); with one, a repository the
//!   caller may not see is `404`, never `403`.
//!
//! A push of an account the operator switched off is refused by the host
//! with Git's own error line ([`SourceHosts::push_refusal`]). The host
//! holds every request to its bounds (`play_git::limits`).
//!
//! A push that moved branches is recorded (one `repo.push` event however
//! many branches moved) and wakes the Playzones on the repository, once
//! the host has taken the pack in. The answer ends only after that: when
//! `git push` returns, the push is recorded. The recording does not
//! depend on the answer being read (a client gone early changes nothing).
//!
//! [`SourceHosts::push_refusal`]: play_core::scm::hosts::SourceHosts::push_refusal

use std::io;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{StreamExt as _, TryStreamExt as _};
use play_core::scm::flows;
use play_model::scm::FullName;
use play_model::scm::http::{BranchMove, GitHttpRequest, Service};
use play_model::scm::model::Repository;
use play_model::scopes::Scope;
use play_store::repositories;
use serde::Deserialize;
use tokio_util::io::{ReaderStream, StreamReader};

use crate::auth::{Principal, git_caller};
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct ServiceQuery {
    service: Option<String>,
}

/// `GET /git/{owner}/{repo}/info/refs?service=git-upload-pack|git-receive-pack`.
pub async fn info_refs(
    State(state): State<AppState>,
    Path((owner, repo)): Path<(String, String)>,
    Query(query): Query<ServiceQuery>,
    headers: HeaderMap,
) -> Response {
    // The dumb protocol (no `service`) is not served.
    let Some(service) = query.service.as_deref().and_then(Service::parse) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    respond(serve(&state, &owner, &repo, service, true, headers, Body::empty()).await)
}

/// `POST /git/{owner}/{repo}/git-upload-pack` and `.../git-receive-pack`.
pub async fn exchange(
    State(state): State<AppState>,
    Path((owner, repo, service)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(service) = Service::parse(&service) else { return StatusCode::NOT_FOUND.into_response() };
    respond(serve(&state, &owner, &repo, service, false, headers, body).await)
}

fn respond(result: Result<Response, ApiError>) -> Response {
    result.unwrap_or_else(IntoResponse::into_response)
}

/// `401` with the Basic challenge `git` answers with a credential.
fn challenge() -> Response {
    let mut response = (StatusCode::UNAUTHORIZED, "an API key is needed (as the HTTP password)\n").into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"play\""));
    response
}

async fn serve(
    state: &AppState,
    owner: &str,
    repo: &str,
    service: Service,
    advertisement: bool,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let not_found = || ApiError::Core(play_core::Error::NotFound("repository"));
    let Some(host) = state.hosts.builtin.clone() else { return Err(not_found()) };
    let Some(git) = host.git_http() else { return Err(not_found()) };
    let name = repo.strip_suffix(".git").unwrap_or(repo);
    let Ok(full) = FullName::parse("repo", &format!("{owner}/{name}")) else { return Err(not_found()) };
    let caller = match git_caller(state, &headers).await {
        Err(ApiError::Unauthorized(_)) => return Ok(challenge()),
        other => other?,
    };
    let Some(repository) = repositories::builtin_by_name(&state.store, &full).await? else {
        return if caller.is_none() { Ok(challenge()) } else { Err(not_found()) };
    };
    let pushing = service == Service::ReceivePack;
    match &caller {
        None if repository.private || pushing => return Ok(challenge()),
        None => {}
        Some(p) if p.account_id != repository.account_id => {
            if repository.private {
                return Err(not_found());
            }
            if pushing {
                let message = "only the repository's own account may push to it".to_owned();
                return Err(ApiError::forbidden(message, play_model::FieldErrors::new()));
            }
        }
        Some(p) => {
            let wanted = if pushing { Scope::ReposWrite } else { Scope::ReposRead };
            if !(p.scopes.grants(wanted) || p.scopes.grants(Scope::ReposWrite)) {
                return Err(crate::auth::forbidden(wanted));
            }
        }
    }
    let remote_user = match (&caller, pushing) {
        (Some(_), true) => Some(repository.full_name.owner.clone()),
        _ => None,
    };
    let refusal = if pushing { state.hosts.push_refusal(&state.store, &repository).await? } else { None };
    // Bounded by the host, on the wire and inflated.
    let stream = body.into_data_stream().map_err(io::Error::other);
    let request = GitHttpRequest {
        service,
        advertisement,
        content_type: text(&headers, header::CONTENT_TYPE),
        content_encoding: text(&headers, header::CONTENT_ENCODING),
        body: Box::new(StreamReader::new(stream)),
        remote_user,
        refusal,
    };
    let answer = git.serve(&full, request).await.map_err(play_core::Error::from)?;
    let (recorded_tx, recorded) = tokio::sync::oneshot::channel::<()>();
    if let (Some(moved), Some(principal)) = (answer.moved, caller) {
        let state = state.clone();
        tokio::spawn(async move {
            if let Ok(moves) = moved.await {
                record(&state, &repository, &principal, moves).await;
            }
            let _ = recorded_tx.send(());
        });
    }
    let after_recording = futures::stream::once(recorded).filter_map(|_| futures::future::ready(None));
    let body = ReaderStream::new(answer.body).chain(after_recording);
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in answer.headers {
        if let (Ok(name), Ok(value)) = (header::HeaderName::try_from(name), HeaderValue::try_from(value)) {
            response.headers_mut().append(name, value);
        }
    }
    Ok(response)
}

fn text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// Records what a push moved, which wakes the Playzones on the repository.
async fn record(state: &AppState, repository: &Repository, principal: &Principal, moves: Vec<BranchMove>) {
    let Some(host) = state.hosts.builtin.clone() else { return };
    if let Err(e) = flows::record_moves(&state.store, host.as_ref(), repository, moves, principal.actor()).await {
        tracing::warn!(repository = %repository.full_name, error = %e, "recording a push failed");
    }
}
