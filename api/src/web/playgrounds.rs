//! The Playgrounds pages: the list (filters, pages of [`PAGE_SIZE`], live
//! while any is on its way somewhere) and the detail (services, routes,
//! events, what play asked of the host, actions). Both read through the
//! API's own views, so they show what `GET /api/playgrounds…` answers.

use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use maud::{Markup, html};
use play_model::playground::PlaygroundStatus;
use play_store::playground_detail;
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
const _: () = assert!(PAGE_SIZE <= play_model::playground::list::MAX_PER_PAGE as usize);

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

/// The store's query for the list's filters and page `number` (newest
/// first, as the page shows them).
fn store_query(q: &ListQuery, number: usize) -> play_model::playground::list::ListQuery {
    use play_model::playground::list::{ListQuery as Filter, Page};
    let needle = q.q.trim();
    Filter {
        status: q.status.parse::<PlaygroundStatus>().ok(),
        name_contains: (!needle.is_empty()).then(|| needle.to_owned()),
        newest_first: true,
        page: Some(Page {
            number: u32::try_from(number).unwrap_or(u32::MAX),
            per_page: u32::try_from(PAGE_SIZE).unwrap_or(u32::MAX),
        }),
        ..Filter::default()
    }
}

/// `GET /playgrounds`: one page, filtered and ordered in SQL (issue #52,
/// item 7), so its cost is the page's, not the account's.
pub async fn list(State(state): State<AppState>, viewer: Viewer, Query(q): Query<ListQuery>) -> PageResult {
    viewer.require("GET", "/api/playgrounds")?;
    let account = viewer.principal.account_id;
    let store = &state.store;
    let filter = store_query(&q, 1);
    let (mut shown, matched) = play_store::playground_list::list(store, account, &filter).await?;
    // How many the account has in all: what matched when nothing filters,
    // else a count of its own (a page of one row): one count over the
    // account's Playgrounds per page, not two.
    let all = if filter.status.is_none() && filter.name_contains.is_none() {
        matched
    } else {
        let mut count = store_query(&ListQuery::default(), 1);
        count.page = Some(play_model::playground::list::Page { number: 1, per_page: 1 });
        play_store::playground_list::list(store, account, &count).await?.1
    };
    let pages = usize::try_from(matched).unwrap_or(0).div_ceil(PAGE_SIZE).max(1);
    let number = q.page.unwrap_or(1).clamp(1, pages);
    if number > 1 {
        shown = play_store::playground_list::list(store, account, &store_query(&q, number)).await?.0;
    }
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
                p { @if all == 0 { "No Playgrounds yet. " a href="/launch" { "Launch one" } "." } @else { "None matches." } }
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
        p.muted { (matched) " of " (all) " Playgrounds" @if pages > 1 { ", page " (number) " of " (pages) } "." }
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
