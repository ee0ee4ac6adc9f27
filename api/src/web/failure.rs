//! What a page answers when the API refused: the same status and message
//! as the API's envelope, as a page (a clear one for 403 and 404, and the
//! field-by-field details of a refused form).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use play_model::FieldErrors;
use serde_json::Value;

use super::layout::bare_page;
use crate::error::ApiError;

/// A refusal or failure on the way to a page.
#[derive(Debug)]
pub enum Failure {
    /// Raised on the way (no session's page, a bad form field, the store).
    Raised(ApiError),
    /// The API answered with an error: its status and envelope.
    Answered { status: StatusCode, body: Value },
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure::Raised(e)
    }
}

impl From<play_core::Error> for Failure {
    fn from(e: play_core::Error) -> Self {
        Failure::Raised(ApiError::Core(e))
    }
}

/// The result of a page handler.
pub type PageResult = Result<Response, Failure>;

impl Failure {
    /// Status, code, message and field details, as the envelope has them.
    pub fn parts(&self) -> (StatusCode, String, String, FieldErrors) {
        match self {
            Failure::Raised(e) => {
                let (status, code, message, details) = e.parts();
                (status, code.to_owned(), message, details)
            }
            Failure::Answered { status, body } => {
                let error = &body["error"];
                let text = |k: &str| error[k].as_str().unwrap_or_default().to_owned();
                let details = serde_json::from_value(error["details"].clone()).unwrap_or_default();
                (*status, text("code"), text("message"), details)
            }
        }
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let (status, code, message, details) = self.parts();
        if status == StatusCode::UNAUTHORIZED {
            return Redirect::to("/sign-in").into_response();
        }
        if status.is_server_error() && status != StatusCode::BAD_GATEWAY {
            tracing::error!(%message, %code, "a page failed");
        }
        let (title, advice) = match status {
            StatusCode::NOT_FOUND => ("Not found", "It does not exist, or it is not in this session's account."),
            StatusCode::FORBIDDEN => ("Not allowed", "This session's key does not have the scope it needs."),
            StatusCode::TOO_MANY_REQUESTS => ("Too many requests", "Wait a moment and try again."),
            s if s.is_client_error() => ("Refused", "Nothing was changed."),
            _ => ("Something failed", "Nothing was changed; try again, or look at play's log."),
        };
        let body = bare_page(
            title,
            html! {
                h1 { (title) }
                p role="alert" { (message) }
                @if !details.is_empty() {
                    ul {
                        @for (field, messages) in &details {
                            @for m in messages { li { code { (field) } ": " (m) } }
                        }
                    }
                }
                p.muted { (advice) " (" code { (code) } ", " (status.as_u16()) ")" }
                p { a href="/" { "Back to the overview" } }
            },
        );
        (status, body).into_response()
    }
}

/// The 404 page for a path no page has.
pub fn not_found_page() -> Response {
    Failure::Raised(ApiError::RouteNotFound("this page".into())).into_response()
}
