//! `/api/playgrounds`: running instances of Playspecs on Playrooms.
//!
//! Handlers record desired state and return; the Playground reconciler
//! converges the host and writes status back (`creation_step`, errors,
//! services). Create answers `201` with the detail view, status
//! `in_progress`. Every change of desired state wakes the Playground's
//! reconciler and its Playroom's edge ([`wake`]), so routes follow
//! promptly (a destroyed Playground's are dropped at once).

use axum::Json as JsonResponse;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use play_core::playground::{CreateRequest, launch, ops};
use play_model::playground::list::{ListQuery, Page};
use play_store::{playground_detail, playgrounds};

use crate::auth::Principal;
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::input::playgrounds::{ExtendRequest, PlaygroundRequest};
use crate::recent::Freshness;
use crate::rendered::{self, JsonBody};
use crate::state::AppState;
use crate::views::playground_urls;
use crate::views::playgrounds::{
    Extended, PlaygroundDetail, PlaygroundItem, PlaygroundStatus, detail, detail_read, item, status_of, time_remaining,
};

/// Create a Playground; answers at once with status `in_progress`.
#[utoipa::path(post, path = "/api/playgrounds", tag = "Playgrounds", request_body = PlaygroundRequest,
    responses((status = 201, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<PlaygroundRequest>,
) -> ApiResult<(StatusCode, JsonResponse<PlaygroundDetail>)> {
    let request = CreateRequest::from(body.playground);
    let limits = state.limits();
    let playground =
        launch::create_playground(&state.store, &state.cpu, principal.account_id, request, limits, principal.actor())
            .await?;
    Ok((StatusCode::CREATED, JsonResponse(detail(&state, playground).await?)))
}

/// List the account's Playgrounds, in id order: all of them, or those the
/// filters select, a page at a time (`docs/playgrounds.md`).
#[utoipa::path(get, path = "/api/playgrounds", tag = "Playgrounds",
    params(
        ("status" = Option<String>, Query, description = "Only this status",
            pattern = "^(in_progress|running|failed|destroying|destroyed|complete|sleeping)$"),
        ("playspec_id" = Option<i64>, Query, minimum = 1, description = "Only this Playspec's"),
        ("playroom_id" = Option<i64>, Query, minimum = 1, description = "Only those on this Playroom"),
        ("name" = Option<String>, Query, min_length = 1, max_length = 100, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]+$",
            description = "Names that start with this (case matters)"),
        ("trigger_id" = Option<i64>, Query, minimum = 1, description = "Only those a trigger keeps"),
        ("page" = Option<u32>, Query, minimum = 1, maximum = 8589934,
            description = "1-based page; with it or `per_page` the answer is one page, and `X-Total-Count` and `Link` say the rest"),
        ("per_page" = Option<u32>, Query, minimum = 1, maximum = 500, description = "Items per page (default 100)"),
    ),
    responses((status = 200, body = [PlaygroundItem]), (status = 422, body = ErrorEnvelope)))]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
    RawQuery(raw): RawQuery,
) -> ApiResult<(HeaderMap, JsonResponse<Vec<PlaygroundItem>>)> {
    let query = list_query(raw.as_deref().unwrap_or_default())?;
    let (page, total) = play_store::playground_list::list(&state.store, principal.account_id, &query).await?;
    let mut urls = playground_urls::live_urls(&state, principal.account_id, &page).await?;
    let items = page.iter().map(|p| item(p, urls.remove(&p.id).unwrap_or_default())).collect();
    let mut headers = HeaderMap::new();
    if let Some(page) = query.page {
        headers.insert("x-total-count", HeaderValue::from(total));
        if let Some(link) = links(raw.as_deref().unwrap_or_default(), page, total)
            && let Ok(value) = HeaderValue::from_str(&link)
        {
            headers.insert(axum::http::header::LINK, value);
        }
    }
    Ok((headers, JsonResponse(items)))
}

/// The list's query string read into a [`ListQuery`]; a parameter given
/// twice is refused like a bad one (422, `query.<name>`).
fn list_query(raw: &str) -> Result<ListQuery, play_core::Error> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw).map_err(|_| {
        play_core::Error::Validation(
            [("query".to_owned(), vec!["is not a valid query string".to_owned()])].into_iter().collect(),
        )
    })?;
    let mut params = std::collections::BTreeMap::new();
    let mut twice = play_model::FieldErrors::new();
    for (name, value) in pairs {
        if params.insert(name.clone(), value).is_some() {
            play_model::error::push_field_error(&mut twice, format!("query.{name}"), "is given more than once");
        }
    }
    let query = ListQuery::parse(&params).map_err(play_core::Error::Validation)?;
    if twice.is_empty() { Ok(query) } else { Err(play_core::Error::Validation(twice)) }
}

/// The `Link` header of a page: `first`, `prev`, `next` and `last`, each
/// the same query with its `page` changed.
fn links(raw: &str, page: Page, total: i64) -> Option<String> {
    let per_page = i64::from(page.per_page);
    let last = u32::try_from(((total + per_page - 1) / per_page).max(1)).ok()?;
    let keep: Vec<(String, String)> = serde_urlencoded::from_str::<Vec<(String, String)>>(raw)
        .ok()?
        .into_iter()
        .filter(|(k, _)| k != "page")
        .collect();
    let link = |number: u32, rel: &str| {
        let mut pairs = keep.clone();
        pairs.push(("page".to_owned(), number.to_string()));
        serde_urlencoded::to_string(&pairs).ok().map(|q| format!("</api/playgrounds?{q}>; rel=\"{rel}\""))
    };
    let mut out = vec![link(1, "first")?];
    if page.number > 1 {
        out.push(link(page.number.min(last + 1) - 1, "prev")?);
    }
    if page.number < last {
        out.push(link(page.number + 1, "next")?);
    }
    out.push(link(last, "last")?);
    Some(out.join(", "))
}

/// A Playground's detail view.
///
/// Reflects every write made through this replica before the request, and
/// every other write within the read staleness bound (see `Cache-Control`).
#[utoipa::path(get, path = "/api/playgrounds/{id}", tag = "Playgrounds", params(("id" = i64, Path),
        ("Cache-Control" = Option<String>, Header, description = "`no-cache` (or `max-age=0`): a read that starts after this request. Without it the body may be one rendered up to 250 ms earlier (`PLAY_READ_STALENESS`), never older than a write request this replica answered.")),
    responses((status = 200, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    freshness: Freshness,
) -> ApiResult<JsonBody> {
    let account_id = principal.account_id;
    let render = || async {
        let read = playground_detail::get_for_detail(&state.store, account_id, id).await?;
        rendered::to_json(&detail_read(&state, read).await?)
    };
    let renders = &state.renders;
    Ok(JsonBody(renders.serve(&renders.playground_detail, (account_id, id), freshness, render).await?))
}

/// Lightweight status for polling.
///
/// Reflects every write made through this replica before the request, and
/// every other write within the read staleness bound (see `Cache-Control`).
#[utoipa::path(get, path = "/api/playgrounds/{id}/status", tag = "Playgrounds", params(("id" = i64, Path),
        ("Cache-Control" = Option<String>, Header, description = "`no-cache` (or `max-age=0`): a read that starts after this request. Without it the body may be one rendered up to 250 ms earlier (`PLAY_READ_STALENESS`), never older than a write request this replica answered.")),
    responses((status = 200, body = PlaygroundStatus), (status = 404, body = ErrorEnvelope)))]
pub async fn status(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    freshness: Freshness,
) -> ApiResult<JsonBody> {
    let account_id = principal.account_id;
    let render = || async { rendered::to_json(&status_of(playgrounds::get(&state.store, account_id, id).await?)) };
    let renders = &state.renders;
    Ok(JsonBody(renders.serve(&renders.playground_status, (account_id, id), freshness, render).await?))
}

/// Destroy a Playground: answers 202 with its detail, status
/// `destroying` (the containers are removed in the background).
#[utoipa::path(delete, path = "/api/playgrounds/{id}", tag = "Playgrounds", params(("id" = i64, Path)),
    responses((status = 202, description = "Destroying: the Playground's detail", body = PlaygroundDetail),
        (status = 404, body = ErrorEnvelope)))]
pub async fn delete(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<(StatusCode, JsonResponse<PlaygroundDetail>)> {
    let playground = ops::request_destroy(&state.store, principal.account_id, id, principal.actor()).await?;
    Ok((StatusCode::ACCEPTED, JsonResponse(detail(&state, playground).await?)))
}

/// Extend the TTL: `expires_at` moves to max(expires_at, now) + duration_hours.
#[utoipa::path(post, path = "/api/playgrounds/{id}/extend_expiration", tag = "Playgrounds", params(("id" = i64, Path)),
    request_body(content = Option<ExtendRequest>, description = "Optional: without a body, 8 hours"),
    responses((status = 200, body = Extended), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn extend_expiration(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    body: Option<Json<ExtendRequest>>,
) -> ApiResult<JsonResponse<Extended>> {
    let hours = body.and_then(|Json(b)| b.duration_hours);
    let p = ops::extend(&state.store, principal.account_id, id, hours, principal.actor()).await?;
    Ok(JsonResponse(Extended { id: p.id, time_remaining: time_remaining(&p), expires_at: p.expires_at }))
}
