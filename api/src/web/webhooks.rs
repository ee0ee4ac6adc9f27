//! The webhook endpoints pages: the list, and an endpoint with its recent
//! deliveries, redeliver and send-a-test. The signing secret stays folded
//! until asked for.

use axum::extract::{Form, Path};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect};
use maud::html;

use super::failure::PageResult;
use super::frame::{csrf_field, page};
use super::json_view::{fields, table, text_of, time_of};
use super::layout::{ago, badge, notice};
use super::rooms_zones::CsrfForm;
use super::viewer::Viewer;

/// Deliveries shown on an endpoint's page.
const DELIVERIES: i64 = 50;

/// `GET /webhooks`.
pub async fn list(viewer: Viewer) -> PageResult {
    let all = viewer.get("/api/webhook_endpoints").await?;
    let rows = all.as_array().cloned().unwrap_or_default();
    let columns = [("url", "URL"), ("enabled", "Enabled"), ("events", "Events"), ("failure_count", "Failures")];
    let body = html! {
        h1 { "Webhook endpoints" }
        @if rows.is_empty() { p { "No endpoint yet." } }
        @else { (table("endpoints", &rows, &columns, |r| Some(format!("/webhooks/{}", r["id"])))) }
    };
    Ok(page(&viewer, "Webhooks", "/webhooks", body).into_response())
}

#[derive(Debug, Default, serde::Deserialize)]
pub struct NoticeQuery {
    notice: Option<String>,
}

/// `GET /webhooks/{id}`.
pub async fn detail(
    viewer: Viewer,
    Path(id): Path<i64>,
    axum::extract::Query(q): axum::extract::Query<NoticeQuery>,
) -> PageResult {
    let view = viewer.get(&format!("/api/webhook_endpoints/{id}")).await?;
    let deliveries = match viewer.may("GET", "/api/webhook_endpoints/{id}/deliveries") {
        true => {
            let all = viewer.get(&format!("/api/webhook_endpoints/{id}/deliveries?limit={DELIVERIES}")).await?;
            all.as_array().cloned().unwrap_or_default()
        }
        false => Vec::new(),
    };
    let may_redeliver = viewer.may("POST", "/api/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver");
    let body = html! {
        p { a href="/webhooks" { "← Webhooks" } }
        h1.wrap { (text_of(&view["url"])) }
        (notice(q.notice.as_deref()))
        @if viewer.may("POST", "/api/webhook_endpoints/{id}/test") {
            form.actions method="post" action={ "/webhooks/" (id) "/test" } { (csrf_field(&viewer)) button type="submit" { "Send a test event" } }
        }
        (fields(&view, &["secret", "url"]))
        details { summary { "Signing secret" } p.mono.wrap { (text_of(&view["secret"])) } }
        h2 { "Recent deliveries" }
        @if deliveries.is_empty() { p.muted { "None yet." } } @else {
            div.table-box { table #deliveries {
                thead { tr { th scope="col" { "Event" } th scope="col" { "Outcome" } th scope="col" { "Attempts" } th scope="col" .hide-narrow { "Answer" } th scope="col" { "When" } th scope="col" { "" } } }
                tbody { @for d in &deliveries { tr {
                    td { code { (text_of(&d["event_type"])) } }
                    td { (badge(&text_of(&d["status"]))) }
                    td { (d["attempts"].as_i64().unwrap_or_default()) }
                    td.hide-narrow.wrap { @if let Some(code) = d["last_status_code"].as_i64() { (code) " " } @if let Some(e) = d["last_error"].as_str() { span.error { (e) } } }
                    td { @if let Some(at) = time_of(&d["created_at"]) { (ago(at)) } }
                    td { @if may_redeliver {
                        form method="post" action={ "/webhooks/" (id) "/deliveries/" (d["id"].as_i64().unwrap_or_default()) "/redeliver" } {
                            (csrf_field(&viewer)) button type="submit" { "Redeliver" }
                        }
                    } }
                } } }
            } }
        }
    };
    Ok(page(&viewer, "Webhook endpoint", "/webhooks", body).into_response())
}

/// `POST /webhooks/{id}/test`.
pub async fn test(viewer: Viewer, headers: HeaderMap, Path(id): Path<i64>, Form(form): Form<CsrfForm>) -> PageResult {
    viewer.check_form(&headers, &form.csrf)?;
    let outcome = viewer.call(Method::POST, &format!("/api/webhook_endpoints/{id}/test"), None).await?.body;
    let said = if outcome["delivered"] == true {
        "A test event was delivered."
    } else {
        "A test event was sent; see its delivery below."
    };
    Ok(Redirect::to(&format!("/webhooks/{id}?{}", serde_urlencoded::to_string([("notice", said)]).unwrap_or_default()))
        .into_response())
}

/// `POST /webhooks/{id}/deliveries/{delivery}/redeliver`.
pub async fn redeliver(
    viewer: Viewer,
    headers: HeaderMap,
    Path((id, delivery)): Path<(i64, i64)>,
    Form(form): Form<CsrfForm>,
) -> PageResult {
    viewer.check_form(&headers, &form.csrf)?;
    let path = format!("/api/webhook_endpoints/{id}/deliveries/{delivery}/redeliver");
    viewer.call(Method::POST, &path, None).await?;
    Ok(Redirect::to(&format!("/webhooks/{id}?notice=Queued+again.")).into_response())
}
