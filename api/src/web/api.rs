//! How pages reach the API: its own router, in-process, as MCP tools do
//! (`crate::mcp`). Each call carries the session's [`Principal`] and goes
//! through [`crate::auth::authorize`], which checks the route table's
//! scope exactly as for a request from outside: a page cannot do more
//! than its session's key may, even if it forgets to ask
//! ([`super::viewer::Viewer::may`] only decides what to show). Answers are
//! the API's JSON, read as the contract describes it.

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use super::failure::Failure;
use crate::auth::Principal;
use crate::error::ApiError;

/// The API's router with the in-process authorisation layer.
#[derive(Clone, Debug)]
pub struct InProcess(pub Router);

/// A successful answer of the API: its JSON.
#[derive(Debug)]
pub struct Answer {
    pub body: Value,
}

fn internal(what: impl std::fmt::Display) -> Failure {
    Failure::from(ApiError::Core(play_core::Error::Internal(what.to_string())))
}

impl InProcess {
    /// `method path` (with its query) for `principal`, with a JSON `body`:
    /// the raw answer (for the rare page that needs bytes, not JSON).
    pub async fn raw(
        &self,
        principal: &Principal,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, axum::body::Bytes), Failure> {
        let mut request = Request::builder().method(method).uri(path);
        let body = match body {
            Some(json) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Body::from(json.to_string())
            }
            None => Body::empty(),
        };
        let mut request = request.body(body).map_err(internal)?;
        request.extensions_mut().insert(principal.clone());
        let Ok(response) = self.0.clone().oneshot(request).await;
        let status = response.status();
        let bytes = response.into_body().collect().await.map_err(internal)?.to_bytes();
        Ok((status, bytes))
    }

    /// [`InProcess::raw`] read as JSON; an error answer is a [`Failure`]
    /// carrying the API's envelope.
    pub async fn call(
        &self,
        principal: &Principal,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer, Failure> {
        let (status, bytes) = self.raw(principal, method, path, body).await?;
        let body: Value =
            if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).map_err(internal)? };
        if status.is_success() { Ok(Answer { body }) } else { Err(Failure::Answered { status, body }) }
    }
}
