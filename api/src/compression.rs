//! Response compression (issue #52, item 7): a JSON or HTML body of a
//! known size is sent gzipped to a client that accepts `gzip`.
//!
//! - Only bodies whose size is known up front and between [`MIN_BYTES`]
//!   and [`MAX_BYTES`]: streams (logs that follow, Docker events, Git's
//!   smart HTTP, the MCP transport) pass as they are, unbuffered.
//! - Only `application/json` and `text/html`; a body already encoded is
//!   left alone. `Vary: Accept-Encoding` on every response this layer
//!   considered, so a cache keeps the two forms apart.
//! - Level 1 (fast): the lists and pages it serves repeat their keys, so
//!   most of the gain comes at the first level, for little CPU.
//!
//! Not `tower-http`'s layer: its compression features need crates that are
//! not in this workspace's lock (`async-compression`); `flate2` is, and a
//! bounded body is all this needs.

use std::io::Write;

use axum::body::Body;
use axum::body::HttpBody as _;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, VARY};

/// Smaller bodies gain less than the header costs.
pub const MIN_BYTES: u64 = 1024;
/// Larger bodies (none of play's JSON views) are sent as they are.
pub const MAX_BYTES: u64 = 32 * 1024 * 1024;

/// Whether `accept` (an `Accept-Encoding` value) takes gzip: listed, and
/// not with `q=0`.
fn accepts_gzip(accept: &str) -> bool {
    accept.split(',').any(|item| {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or_default();
        let refused = parts.any(|p| {
            let p = p.replace(' ', "");
            p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")).is_some_and(|q| q.parse::<f32>() == Ok(0.0))
        });
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !refused
    })
}

/// The middleware: see the [module documentation](self).
pub async fn gzip(request: Request, next: Next) -> Response {
    let accepts = request.headers().get_all(ACCEPT_ENCODING).iter().any(|v| v.to_str().is_ok_and(accepts_gzip));
    let response = next.run(request).await;
    let (mut parts, body) = response.into_parts();
    let compressible = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") || t.starts_with("text/html"));
    let size = body.size_hint().exact();
    if !compressible || parts.headers.contains_key(CONTENT_ENCODING) {
        return Response::from_parts(parts, body);
    }
    parts.headers.append(VARY, HeaderValue::from_static("accept-encoding"));
    let Some(size) = size.filter(|n| (MIN_BYTES..=MAX_BYTES).contains(n)) else {
        return Response::from_parts(parts, body);
    };
    if !accepts {
        return Response::from_parts(parts, body);
    }
    let Ok(bytes) = axum::body::to_bytes(body, usize::try_from(size).unwrap_or(usize::MAX)).await else {
        // The body said its size and then failed: nothing of it was sent.
        return Response::from_parts(parts, Body::empty());
    };
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(bytes.len() / 4), flate2::Compression::fast());
    let zipped = match encoder.write_all(&bytes).and_then(|()| encoder.finish()) {
        Ok(zipped) => zipped,
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    parts.headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(zipped.len()));
    Response::from_parts(parts, Body::from(zipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_accepted_unless_refused() {
        for yes in ["gzip", "br, gzip", "gzip;q=0.5", "*", "deflate, gzip ;q=1"] {
            assert!(accepts_gzip(yes), "{yes}");
        }
        for no in ["", "br", "identity", "gzip;q=0", "gzip; q=0", "x-gzip2"] {
            assert!(!accepts_gzip(no), "{no}");
        }
    }
}
