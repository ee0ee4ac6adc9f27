//! The simulator's one error type. Each variant is an answer the real
//! engine gives, with its status code; the body is the engine's own shape,
//! `{"message": "..."}`, which bollard turns into `DockerResponseServerError`
//! (so play's `status_of` sees the same codes as against Docker).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 404: no such container, network, volume or image.
    #[error("{0}")]
    NotFound(String),
    /// 409: a name in use, a running container removed without force, a
    /// volume in use.
    #[error("{0}")]
    Conflict(String),
    /// 304: start of a running container, stop of a stopped one (no body).
    #[error("not modified")]
    NotModified,
    /// 403: a pre-defined network removed, a network with endpoints removed.
    #[error("{0}")]
    Forbidden(String),
    /// 400: a body or query the engine would refuse.
    #[error("{0}")]
    BadRequest(String),
    /// 501: an endpoint the simulator does not answer (see docs/simhost.md).
    #[error("{0}")]
    Unsupported(String),
    /// The simulator itself could not start (a socket it cannot bind).
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn status(&self) -> StatusCode {
        match self {
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::NotModified => StatusCode::NOT_MODIFIED,
            Error::Forbidden(_) => StatusCode::FORBIDDEN,
            Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::Unsupported(_) => StatusCode::NOT_IMPLEMENTED,
            Error::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        if status == StatusCode::NOT_MODIFIED {
            return status.into_response();
        }
        (status, Json(serde_json::json!({ "message": self.to_string() }))).into_response()
    }
}
