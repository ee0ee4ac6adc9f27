//! A service's log page: the API's Server-Sent Events followed live by the
//! page's script (bounded buffer, pause and follow, colours, progress
//! lines), and a download of the last lines as text.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use maud::html;
use play_store::playgrounds;

use super::failure::PageResult;
use super::frame::page;
use super::viewer::Viewer;
use crate::state::AppState;

/// Lines of a download: the API's most (`tail`, 1-1000).
const MAX_TAIL: usize = 1000;

const ROUTE: &str = "/api/playgrounds/{id}/logs/{service}";

/// How long one stream of the page lasts before the script opens the next
/// (from the last line shown), in seconds: the API's most by default.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ShowQuery {
    follow_seconds: Option<u32>,
}

/// `GET /playgrounds/{id}/logs/{service}`.
pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, service)): Path<(i64, String)>,
    axum::extract::Query(q): axum::extract::Query<ShowQuery>,
) -> PageResult {
    viewer.require("GET", ROUTE)?;
    let p = playgrounds::get(&state.store, viewer.principal.account_id, id).await?;
    let escaped: String = url_segment(&service);
    let seconds = q.follow_seconds.unwrap_or(3600).clamp(1, 3600);
    let stream = format!("/api/playgrounds/{id}/logs/{escaped}?follow=true&max_seconds={seconds}");
    let title = format!("{service} · {}", p.name);
    let body = html! {
        p { a href={ "/playgrounds/" (id) } { "← " (p.name) } }
        h1 { "Logs of " (service) }
        div.logbar {
            button #log-toggle type="button" aria-pressed="false" aria-controls="log" { "Pause" }
            a.button href={ "/playgrounds/" (id) "/logs/" (escaped) "/download" } download { "Download the last " (MAX_TAIL) " lines" }
            span #log-status role="status" .muted { "connecting…" }
        }
        pre #log tabindex="0" aria-label={ "Log of " (service) } data-stream=(stream) data-tail="200" {}
        noscript { p { "Following needs the page's script; the download works without it." } }
    };
    Ok(page(&viewer, &title, "/playgrounds", body).into_response())
}

/// `GET /playgrounds/{id}/logs/{service}/download`: the last lines as text.
pub async fn download(viewer: Viewer, Path((id, service)): Path<(i64, String)>) -> PageResult {
    let name = format!("{id}-{service}.log");
    let value = viewer.get(&format!("/api/playgrounds/{id}/logs/{}?tail={MAX_TAIL}", url_segment(&service))).await?;
    let mut text = String::new();
    for line in value["lines"].as_array().into_iter().flatten().filter_map(|l| l.as_str()) {
        text.push_str(line);
        text.push('\n');
    }
    let disposition = format!(
        "attachment; filename=\"{}\"",
        name.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '.', "_")
    );
    let mut response = text.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// `segment` percent-encoded for one path segment.
pub fn url_segment(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
