//! The Playgrounds pages: the list (filters, pages of [`PAGE_SIZE`], live
//! while any is on its way somewhere) and the detail (services, routes,
//! events, what play asked of the host, actions). Both read through the
//! API's own views, so they show what `GET /api/playgrounds…` answers.

use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use maud::{Markup, html};
use play_model::playground::{Playground, PlaygroundStatus};
use play_store::{playground_detail, playgrounds};
use serde::Deserialize;

use super::failure::PageResult;
use super::frame::page;
use super::layout::{ago, badge, countdown};
use super::playground_parts::{actions, live_part, moving};
use super::viewer::Viewer;
use crate::state::AppState;
use crate::views::playground_urls;
use crate::views::playgrounds::{PlaygroundItem, detail_read, item};

/// Playgrounds per page of the list.
pub const PAGE_SIZE: usize = 50;

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    /// A word of the name (case-insensitive).
    #[serde(default)]
    pub q: String,
    /// One status, or empty for all.
    #[serde(default)]
    pub status: String,
    /// 1-based.
    pub page: Option<usize>,
    /// `live`: only the list's live region (for the script's refresh).
    pub part: Option<String>,
    pub notice: Option<String>,
}

fn matches(p: &Playground, q: &ListQuery, needle: &str) -> bool {
    (q.status.is_empty() || p.status.as_str() == q.status)
        && (needle.is_empty() || p.name.to_lowercase().contains(needle))
}

/// `GET /playgrounds`.
pub async fn list(State(state): State<AppState>, viewer: Viewer, Query(q): Query<ListQuery>) -> PageResult {
    viewer.require("GET", "/api/playgrounds")?;
    let account = viewer.principal.account_id;
    let all = playgrounds::list(&state.store, account).await?;
    let needle = q.q.trim().to_lowercase();
    let chosen: Vec<&Playground> = all.iter().rev().filter(|p| matches(p, &q, &needle)).collect();
    let pages = chosen.len().div_ceil(PAGE_SIZE).max(1);
    let number = q.page.unwrap_or(1).clamp(1, pages);
    let shown: Vec<Playground> =
        chosen.iter().skip((number - 1) * PAGE_SIZE).take(PAGE_SIZE).map(|p| (*p).clone()).collect();
    let mut urls = playground_urls::live_urls(&state, account, &shown).await?;
    let mut rows = Vec::with_capacity(shown.len());
    for p in &shown {
        let origin = play_store::trigger_targets::origin_of(&state.store, p.id).await?;
        rows.push((item(p, urls.remove(&p.id).unwrap_or_default()), origin));
    }
    let follow = shown.iter().any(moving);
    let here = list_link(&q, number);
    let region = html! {
        div #playgrounds-live data-live=[follow.then(|| format!("{here}&part=live"))] data-interval="1500" {
            @if rows.is_empty() {
                p { @if all.is_empty() { "No Playgrounds yet. " a href="/launch" { "Launch one" } "." } @else { "None matches." } }
            } @else {
                div.table-box { table {
                    caption.skip { "Playgrounds" }
                    thead { tr {
                        th scope="col" { "Name" } th scope="col" { "Status" } th scope="col" { "URLs" }
                        th scope="col" { "Source" } th scope="col" { "Expires" } th scope="col" .hide-narrow { "Age" }
                    } }
                    tbody { @for (row, origin) in &rows { (list_row(row, origin.as_ref())) } }
                } }
            }
        }
    };
    if q.part.as_deref() == Some("live") {
        return Ok(region.into_response());
    }
    let statuses = PlaygroundStatus::ALL.iter().filter(|s| **s != PlaygroundStatus::Destroyed);
    let body = html! {
        h1 { "Playgrounds" }
        (super::layout::notice(q.notice.as_deref()))
        form.filters method="get" action="/playgrounds" role="search" {
            div { label for="q" { "Name" } input #q type="search" name="q" value=(q.q); }
            div { label for="status" { "Status" }
                select #status name="status" {
                    option value="" { "any" }
                    @for s in statuses { option value=(s.as_str()) selected[q.status == s.as_str()] { (s.as_str().replace('_', " ")) } }
                }
            }
            button type="submit" { "Filter" }
            @if viewer.may("POST", "/api/launch") { a.button href="/launch" { "Launch" } }
        }
        p.muted { (chosen.len()) " of " (all.len()) " Playgrounds" @if pages > 1 { ", page " (number) " of " (pages) } "." }
        (region)
        @if pages > 1 {
            nav.pager aria-label="Pages" {
                @if number > 1 { a href=(list_link(&q, number - 1)) rel="prev" { "← Newer" } }
                @if number < pages { a href=(list_link(&q, number + 1)) rel="next" { "Older →" } }
            }
        }
    };
    Ok(page(&viewer, "Playgrounds", "/playgrounds", body).into_response())
}

fn list_link(q: &ListQuery, number: usize) -> String {
    let query = serde_urlencoded::to_string([("q", q.q.as_str()), ("status", q.status.as_str())]).unwrap_or_default();
    format!("/playgrounds?{query}&page={number}")
}

fn list_row(p: &PlaygroundItem, origin: Option<&play_model::playground::model::Origin>) -> Markup {
    html! {
        tr {
            td.name { a href={ "/playgrounds/" (p.id) } { (p.name) } @if p.job_mode { " " span.muted { "(job)" } } }
            td { (badge(p.status.as_str())) }
            td.wrap {
                @for (service, url) in &p.urls { a href=(url) rel="noopener" { (service) } " " }
                @if p.urls.is_empty() { span.muted { "—" } }
            }
            td.wrap { (source(p, origin)) }
            td { (countdown(p.expires_at)) }
            td.hide-narrow { (ago(p.created_at)) }
        }
    }
}

/// Where the code came from: the trigger's ref and commit, or the
/// branches of built services.
pub fn source(p: &PlaygroundItem, origin: Option<&play_model::playground::model::Origin>) -> Markup {
    html! {
        @if let Some(o) = origin {
            @if o.ref_kind == "pull_request" { "PR #" (o.ref_name) } @else { (o.ref_name) }
            @if let Some(commit) = &o.commit { " " code { (commit.chars().take(7).collect::<String>()) } }
        } @else if !p.service_branches.is_empty() {
            @for (service, b) in &p.service_branches { (service) ": " (b.branch_name) " " }
        } @else { span.muted { "—" } }
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct DetailQuery {
    pub part: Option<String>,
    pub notice: Option<String>,
}

/// `GET /playgrounds/{id}`.
pub async fn detail(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<i64>,
    Query(q): Query<DetailQuery>,
) -> PageResult {
    viewer.require("GET", "/api/playgrounds/{id}")?;
    let read = playground_detail::get_for_detail(&state.store, viewer.principal.account_id, id).await?;
    let playground = read.playground.clone();
    let view = detail_read(&state, read).await?;
    let live = live_part(&viewer, &playground, &view).await?;
    if q.part.as_deref() == Some("live") {
        return Ok(live.into_response());
    }
    let debug = match viewer.may("GET", "/api/playgrounds/{id}/debug") {
        true => viewer.get(&format!("/api/playgrounds/{id}/debug")).await.ok(),
        false => None,
    };
    let body = html! {
        p { a href="/playgrounds" { "← Playgrounds" } }
        h1 { (view.item.name) }
        (super::layout::notice(q.notice.as_deref()))
        (actions(&viewer, &playground))
        (live)
        @if let Some(debug) = debug { (super::playground_parts::debug_part(&debug, &playground.services)) }
    };
    Ok(page(&viewer, &view.item.name, "/playgrounds", body).into_response())
}
