//! Response bodies rendered once for all the callers waiting for the same
//! read (issue #16). The store already coalesces the hot reads
//! (`play_store::coalesce`), but each caller then cloned the row,
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
//!
//! A body may then be served again for a moment, within the bounds that
//! `crate::recent` states: a client's own writes through this replica are
//! seen at once, every other write within `ApiConfig::read_staleness`, and
//! a request with `Cache-Control: no-cache` always gets a read of its own.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use play_store::coalesce::Coalescer;
use serde::Serialize;

use play_store::local_writes::LocalWrites;

use crate::recent::{Freshness, ReadStart, Recent};

/// The shared renders, by `(account id, object id)`.
#[derive(Debug)]
pub struct Renders {
    /// `GET /api/playgrounds/{id}`.
    pub playground_detail: View,
    /// `GET /api/playgrounds/{id}/status`.
    pub playground_status: View,
    writes: Arc<LocalWrites>,
    fresh_for: Duration,
}

/// One view's renders in flight and recent bodies.
#[derive(Debug, Default)]
pub struct View {
    group: Coalescer<(i64, i64), Bytes>,
    recent: Recent,
}

impl Renders {
    /// Renders whose bodies may be served again for `fresh_for` (zero:
    /// never) unless `writes` (the store's, `Store::local_writes`) counted
    /// a write since.
    pub fn new(fresh_for: Duration, writes: Arc<LocalWrites>) -> Self {
        Renders { playground_detail: View::default(), playground_status: View::default(), writes, fresh_for }
    }

    /// This process's writes, for `crate::recent::count_writes`.
    pub fn writes(&self) -> Arc<LocalWrites> {
        self.writes.clone()
    }

    /// `view`'s body for `key`: a recent one if `freshness` allows and one
    /// is kept, else `render()`'s, shared with the callers waiting for it.
    pub async fn serve<F, Fut>(
        &self,
        view: &View,
        key: (i64, i64),
        freshness: Freshness,
        render: F,
    ) -> play_core::Result<Bytes>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = play_core::Result<Bytes>>,
    {
        if freshness == Freshness::Recent
            && let Some(body) = view.recent.get(key, &self.writes, self.fresh_for)
        {
            return Ok(body);
        }
        let render_and_keep = || async {
            let start = ReadStart::now(&self.writes, key);
            let body = render().await?;
            if !self.fresh_for.is_zero() {
                view.recent.keep(key, body.clone(), start);
            }
            Ok(body)
        };
        view.group.read(key, render_and_keep).await
    }
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
