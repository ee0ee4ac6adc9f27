//! Bodies of the hottest reads, served again for a moment after they were
//! rendered (issue #16): a Playground's detail and status, which clients
//! poll.
//!
//! Invariants:
//! - a body is served again only while both hold: no write of this
//!   process that it may show committed since its read began, and its read
//!   began less than `fresh_for` ago. This process's writes are counted by
//!   the store ([`LocalWrites`]): every write request this replica answered
//!   (any method but `GET`, `HEAD` and `OPTIONS`, over HTTP or through an
//!   MCP tool) retires every body; a write of this replica's reconcilers
//!   (a status, a wake, a route the edge made live) retires the bodies of
//!   its Playground (issue #33). So a client sees its own writes and this
//!   replica's reconcilers' at once, and the writes of another replica or an
//!   offline command within `fresh_for` (250 ms by default,
//!   `PLAY_READ_STALENESS`);
//! - `fresh_for` zero turns this off, and a request with
//!   `Cache-Control: no-cache` (or `max-age=0`) is never answered from here
//!   ([`Freshness`]): both get a read that starts after they asked, as
//!   `rendered` promises;
//! - only bodies are kept: never "not found", never an error;
//! - a body is kept by `(account id, object id)`, and handed only to
//!   callers of that account that passed the route's scope check;
//! - at most [`MAX_ENTRIES`] bodies are kept per view; full, it starts over
//!   (a cache, not a store).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::Response;
use play_store::local_writes::{LocalWrites, Stamp};

/// The most bodies kept per view.
pub const MAX_ENTRIES: usize = 4096;

/// The longest `fresh_for` the operator may set (`PLAY_READ_STALENESS`): a
/// longer one would have replicas disagree for longer than a client
/// polling a Playground would notice.
pub const MAX_FRESH_FOR: Duration = Duration::from_secs(5);

/// `fresh_for` when it is within [`MAX_FRESH_FOR`]; else the bound, said.
pub fn check_fresh_for(fresh_for: Duration) -> Result<Duration, String> {
    if fresh_for <= MAX_FRESH_FOR {
        return Ok(fresh_for);
    }
    Err(format!("at most {} (0s: every read goes to the store)", humantime::format_duration(MAX_FRESH_FOR)))
}

/// Counts every write request once its handler returned, before its
/// response leaves (middleware): the objects it wrote are not known here,
/// so it retires every body ([`LocalWrites::mark_all`]).
pub async fn count_writes(State(writes): State<Arc<LocalWrites>>, request: Request, next: Next) -> Response {
    let write = !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let response = next.run(request).await;
    if write {
        writes.mark_all();
    }
    response
}

/// Whether a request accepts a recently rendered body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// Within the staleness bound (the default).
    Recent,
    /// A read that starts after the request (`Cache-Control: no-cache` or
    /// `max-age=0`).
    Fresh,
}

impl<S: Send + Sync> FromRequestParts<S> for Freshness {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let fresh = parts.headers.get_all(header::CACHE_CONTROL).iter().any(|value| {
            // A value that is not text names no directive we know.
            value.to_str().is_ok_and(|text| {
                text.split(',').map(|d| d.trim().to_ascii_lowercase()).any(|d| d == "no-cache" || d == "max-age=0")
            })
        });
        Ok(if fresh { Freshness::Fresh } else { Freshness::Recent })
    }
}

#[derive(Debug)]
struct Entry {
    body: Bytes,
    read_at: Instant,
    stamp: Stamp,
}

/// The kept bodies of one view. See the [module documentation](self).
#[derive(Debug, Default)]
pub struct Recent {
    entries: Mutex<HashMap<(i64, i64), Entry>>,
}

/// What a render must note before its read starts, to keep its body.
#[derive(Clone, Copy, Debug)]
pub struct ReadStart {
    at: Instant,
    stamp: Stamp,
}

impl ReadStart {
    /// Now, for the object of `key`, to be taken before the read starts.
    pub fn now(writes: &LocalWrites, key: (i64, i64)) -> Self {
        ReadStart { at: Instant::now(), stamp: writes.stamp(key.1) }
    }
}

impl Recent {
    /// The body kept for `key` (account, object), if it may still be served.
    pub fn get(&self, key: (i64, i64), writes: &LocalWrites, fresh_for: Duration) -> Option<Bytes> {
        let entries = self.entries.lock().ok()?;
        let entry = entries.get(&key)?;
        (entry.stamp == writes.stamp(key.1) && entry.read_at.elapsed() < fresh_for).then(|| entry.body.clone())
    }

    /// Keeps `body`, rendered from a read that began at `start`.
    pub fn keep(&self, key: (i64, i64), body: Bytes, start: ReadStart) {
        let Ok(mut entries) = self.entries.lock() else { return };
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
            entries.clear();
        }
        // A read that began earlier than the one kept says nothing newer.
        if entries.get(&key).is_some_and(|kept| kept.read_at > start.at) {
            return;
        }
        entries.insert(key, Entry { body, read_at: start.at, stamp: start.stamp });
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_for_is_bounded() {
        assert_eq!(check_fresh_for(Duration::ZERO), Ok(Duration::ZERO));
        assert_eq!(check_fresh_for(MAX_FRESH_FOR), Ok(MAX_FRESH_FOR));
        let refused = check_fresh_for(MAX_FRESH_FOR + Duration::from_millis(1));
        assert!(refused.as_ref().is_err_and(|e| e.contains("at most 5s")), "{refused:?}");
    }

    const LONG: Duration = Duration::from_secs(3600);

    fn kept(recent: &Recent, writes: &LocalWrites, key: (i64, i64), body: &'static str) {
        recent.keep(key, Bytes::from_static(body.as_bytes()), ReadStart::now(writes, key));
    }

    #[test]
    fn a_body_is_served_until_a_write_request_completes() {
        let (recent, writes) = (Recent::default(), LocalWrites::default());
        kept(&recent, &writes, (1, 7), "a");
        assert_eq!(recent.get((1, 7), &writes, LONG).as_deref(), Some(&b"a"[..]));
        writes.mark_all();
        assert_eq!(recent.get((1, 7), &writes, LONG), None);
    }

    #[test]
    fn a_write_of_one_object_retires_its_bodies_only() {
        let (recent, writes) = (Recent::default(), LocalWrites::default());
        kept(&recent, &writes, (1, 7), "a");
        kept(&recent, &writes, (1, 8), "b");
        writes.mark(7);
        assert_eq!(recent.get((1, 7), &writes, LONG), None);
        assert_eq!(recent.get((1, 8), &writes, LONG).as_deref(), Some(&b"b"[..]));
    }

    #[test]
    fn a_render_whose_read_began_before_a_write_is_not_served_after_it() {
        let (recent, writes) = (Recent::default(), LocalWrites::default());
        let start = ReadStart::now(&writes, (1, 7));
        writes.mark(7);
        recent.keep((1, 7), Bytes::from_static(b"old"), start);
        assert_eq!(recent.get((1, 7), &writes, LONG), None);
    }

    #[test]
    fn a_body_is_served_only_within_the_bound_and_never_with_a_zero_bound() {
        let (recent, writes) = (Recent::default(), LocalWrites::default());
        kept(&recent, &writes, (1, 7), "a");
        assert_eq!(recent.get((1, 7), &writes, Duration::ZERO), None);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(recent.get((1, 7), &writes, Duration::from_millis(10)), None);
        assert!(recent.get((1, 7), &writes, LONG).is_some());
    }

    #[test]
    fn bodies_are_kept_per_account_and_object() {
        let (recent, writes) = (Recent::default(), LocalWrites::default());
        kept(&recent, &writes, (1, 7), "a");
        assert_eq!(recent.get((2, 7), &writes, LONG), None);
        assert_eq!(recent.get((1, 8), &writes, LONG), None);
    }

    #[test]
    fn an_older_read_does_not_replace_a_newer_one() {
        let (recent, writes) = (Recent::default(), LocalWrites::default());
        let older = ReadStart::now(&writes, (1, 7));
        kept(&recent, &writes, (1, 7), "newer");
        recent.keep((1, 7), Bytes::from_static(b"older"), older);
        assert_eq!(recent.get((1, 7), &writes, LONG).as_deref(), Some(&b"newer"[..]));
    }

    #[test]
    fn the_number_of_bodies_is_bounded() {
        let (recent, writes) = (Recent::default(), LocalWrites::default());
        for id in 0..(MAX_ENTRIES as i64 * 3) {
            kept(&recent, &writes, (1, id), "a");
            assert!(recent.len() <= MAX_ENTRIES);
        }
    }
}
