//! The one mapping from errors to the API envelope
//! `{"error": {"code", "message", "details"}}`.
//!
//! User-facing errors keep their message; store and internal failures are
//! logged with their detail and answered with a generic 500 (or 503 when the
//! database pool is exhausted), so internals never leak into responses.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use play_model::FieldErrors;
use serde::Serialize;
use utoipa::ToSchema;

pub type ApiResult<T> = Result<T, ApiError>;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Core(#[from] play_core::Error),
    /// Malformed request: unparsable JSON, a missing content type.
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(&'static str),
    /// No route has this path.
    #[error("no route for {0}")]
    RouteNotFound(String),
    #[error("method {0} is not allowed here")]
    MethodNotAllowed(String),
    #[error("request body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    #[error("rate limit exceeded; retry in {0} s")]
    RateLimited(u64),
    /// A Playroom host did not answer as needed (unreachable, refused, ...).
    #[error("the Playroom host failed: {0}")]
    Host(play_model::host::HostError),
    /// A Playzone's repository did not answer as needed (unreachable,
    /// refused credentials, a bound hit); its message carries no token.
    #[error("the repository failed: {0}")]
    Repository(play_model::repository::RepositoryError),
}

/// The error envelope.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Stable machine-readable code.
    #[schema(value_type = ErrorCode)]
    pub code: &'static str,
    pub message: String,
    /// Field name -> messages.
    #[schema(value_type = BTreeMap<String, Vec<String>>)]
    pub details: FieldErrors,
}

/// Every `code` an error envelope can carry, for the OpenAPI document
/// (`ApiError::parts` produces them; a test keeps the two in step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    BadRequest,
    Unauthorized,
    Forbidden,
    ResourceNotFound,
    MethodNotAllowed,
    Conflict,
    PayloadTooLarge,
    ValidationFailed,
    Locked,
    InvalidState,
    QuotaExceeded,
    ScmAppRequired,
    RateLimited,
    InternalError,
    HostError,
    RepositoryError,
    ServiceUnavailable,
}

impl ApiError {
    pub fn validation(errors: FieldErrors) -> Self {
        ApiError::Core(play_core::Error::Validation(errors))
    }

    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Core(play_core::Error::field(field, message))
    }

    /// A refusal of what the caller's key may do (`403 FORBIDDEN`).
    pub fn forbidden(message: impl Into<String>, details: FieldErrors) -> Self {
        ApiError::Core(play_core::Error::Forbidden { message: message.into(), details })
    }

    /// The envelope this error is answered with; MCP tool errors carry it
    /// too.
    pub fn envelope(&self) -> ErrorEnvelope {
        let (_, code, message, details) = self.parts();
        ErrorEnvelope { error: ErrorBody { code, message, details } }
    }

    pub(crate) fn parts(&self) -> (StatusCode, &'static str, String, FieldErrors) {
        use play_core::Error as C;
        let none = FieldErrors::new;
        match self {
            ApiError::BadRequest(m) => (StatusCode::BAD_REQUEST, "BAD_REQUEST", m.clone(), none()),
            ApiError::Unauthorized(m) => (StatusCode::UNAUTHORIZED, "UNAUTHORIZED", (*m).to_owned(), none()),
            ApiError::RouteNotFound(_) => (StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND", self.to_string(), none()),
            ApiError::MethodNotAllowed(_) => {
                (StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED", self.to_string(), none())
            }
            ApiError::PayloadTooLarge(_) => {
                (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", self.to_string(), none())
            }
            ApiError::RateLimited(_) => (StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED", self.to_string(), none()),
            ApiError::Host(e) => {
                let mut details = FieldErrors::new();
                details.insert("host".into(), vec![e.kind().as_str().to_owned()]);
                (StatusCode::BAD_GATEWAY, "HOST_ERROR", self.to_string(), details)
            }
            ApiError::Repository(e) => {
                use play_model::repository::RepositoryError as R;
                let kind = match e {
                    R::Refused(_) => "refused",
                    R::Unreachable(_) => "unreachable",
                    R::Unauthorized(_) => "unauthorized",
                    R::NotFound(_) => "not_found",
                    R::TooLarge(_) => "too_large",
                    R::Timeout(_) => "timeout",
                    R::Busy(_) => "busy",
                    R::Failed(_) => "failed",
                };
                let mut details = FieldErrors::new();
                details.insert("repository".into(), vec![kind.to_owned()]);
                (StatusCode::BAD_GATEWAY, "REPOSITORY_ERROR", self.to_string(), details)
            }
            ApiError::Core(core) => match core {
                C::NotFound(_) => (StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND", core.to_string(), none()),
                C::Validation(details) => (
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "VALIDATION_FAILED",
                    "the request failed validation".to_owned(),
                    details.clone(),
                ),
                C::Locked(m) => (StatusCode::UNPROCESSABLE_ENTITY, "LOCKED", m.clone(), none()),
                C::InvalidState(m) => (StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE", m.clone(), none()),
                C::QuotaExceeded { .. } => {
                    (StatusCode::UNPROCESSABLE_ENTITY, "QUOTA_EXCEEDED", core.to_string(), none())
                }
                C::Conflict(m) => (StatusCode::CONFLICT, "CONFLICT", m.clone(), none()),
                C::ScmAppRequired(m) => (StatusCode::UNPROCESSABLE_ENTITY, "SCM_APP_REQUIRED", m.clone(), none()),
                C::Forbidden { message, details } => {
                    (StatusCode::FORBIDDEN, "FORBIDDEN", message.clone(), details.clone())
                }
                C::Database(sqlx::Error::PoolTimedOut) => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "SERVICE_UNAVAILABLE",
                    "the database is busy; retry shortly".to_owned(),
                    none(),
                ),
                C::Crypto(_)
                | C::Database(_)
                | C::Migration(_)
                | C::SchemaNewer { .. }
                | C::Corrupt { .. }
                | C::Internal(_) => (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL_ERROR",
                    "internal error; see the server log".to_owned(),
                    none(),
                ),
            },
        }
    }
}

/// A refusal of the model's rules, as the store's error carries it.
impl From<play_model::Error> for ApiError {
    fn from(error: play_model::Error) -> Self {
        ApiError::Core(error.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, message, details) = self.parts();
        if status.is_server_error() {
            tracing::error!(error = %self, ?self, "request failed");
        }
        let mut response =
            (status, Json(ErrorEnvelope { error: ErrorBody { code, message, details } })).into_response();
        if let ApiError::RateLimited(seconds) = self {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document's list of codes (`ErrorCode`) covers every code the
    /// server answers with.
    #[test]
    fn every_code_is_in_the_documented_list() {
        use play_core::Error as C;
        let errors = [
            ApiError::BadRequest("x".into()),
            ApiError::Unauthorized("x"),
            ApiError::forbidden("x", FieldErrors::new()),
            ApiError::RouteNotFound("/x".into()),
            ApiError::MethodNotAllowed("PUT".into()),
            ApiError::PayloadTooLarge(1),
            ApiError::RateLimited(1),
            ApiError::Host(play_model::host::HostError::Unreachable("x".into())),
            ApiError::Repository(play_model::repository::RepositoryError::Timeout("x".into())),
            ApiError::Core(C::NotFound("x")),
            ApiError::Core(C::Validation(FieldErrors::new())),
            ApiError::Core(C::Locked("x".into())),
            ApiError::Core(C::InvalidState("x".into())),
            ApiError::Core(C::QuotaExceeded { resource: "x".into(), limit: 1 }),
            ApiError::Core(C::Conflict("x".into())),
            ApiError::Core(C::ScmAppRequired("x".into())),
            ApiError::Core(C::Crypto("x".into())),
            ApiError::Core(C::Database(sqlx::Error::PoolTimedOut)),
            ApiError::Core(C::Internal("x".into())),
        ];
        for error in errors {
            let (_, code, _, _) = error.parts();
            let parsed: Result<ErrorCode, _> = serde_json::from_value(serde_json::Value::from(code));
            assert!(parsed.is_ok(), "{code} is missing from ErrorCode");
        }
    }
}
