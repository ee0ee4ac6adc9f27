//! Response bodies rendered once for all the callers waiting for the same
//! read (issue #16). The store already coalesces the hot reads
//! (`play_core::store::coalesce`), but each caller then cloned the row,
//! computed the same view and serialized the same JSON: for a Playground
//! polled by many clients that was a fifth of a request's CPU.
//!
//! Invariants (those of [`Coalescer`], which does the work):
//! - a caller only receives a body rendered from a read that started after
//!   it called, so it sees every write committed before it asked, as its
//!   own render would have. Nothing is cached;
//! - the body depends only on the key: the account and the object. Scopes
//!   are checked before the handler runs, and no view holds anything of
//!   the caller's key;
//! - only a body or "not found" is shared; on any other error each caller
//!   renders for itself and gets its own error.

use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use play_core::store::coalesce::Coalescer;
use serde::Serialize;

/// The shared renders, by `(account id, object id)`.
#[derive(Debug, Default)]
pub struct Renders {
    /// `GET /api/playgrounds/{id}`.
    pub playground_detail: Coalescer<(i64, i64), Bytes>,
    /// `GET /api/playgrounds/{id}/status`.
    pub playground_status: Coalescer<(i64, i64), Bytes>,
}

/// A JSON body serialized once ([`to_json`]), answered as `axum::Json`
/// answers a value.
#[derive(Debug)]
pub struct JsonBody(pub Bytes);

impl IntoResponse for JsonBody {
    fn into_response(self) -> Response {
        ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], self.0).into_response()
    }
}

/// `value` as JSON, to be shared by a group of callers.
pub fn to_json<T: Serialize>(value: &T) -> play_core::Result<Bytes> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|e| play_core::Error::Internal(format!("cannot serialize a response: {e}")))
}
