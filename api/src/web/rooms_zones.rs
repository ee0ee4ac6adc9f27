//! The Playrooms pages (reachability, edge status, test connection) and
//! the Playzones pages (sync state, branches, env defaults with the values
//! of sensitive keys masked, sync now). Each shows the API's own view.

use axum::extract::{Form, Path};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect};
use maud::{Markup, html};
use serde_json::Value;

use super::failure::{Failure, PageResult};
use super::frame::{csrf_field, page};
use super::json_view::{fields, table};
use super::layout::notice;
use super::viewer::Viewer;

#[derive(Debug, serde::Deserialize)]
pub struct CsrfForm {
    pub csrf: String,
}

/// `GET /playrooms`.
pub async fn playroom_list(viewer: Viewer) -> PageResult {
    let rooms = viewer.get("/api/playrooms").await?;
    let rows = rooms.as_array().cloned().unwrap_or_default();
    let columns =
        [("name", "Name"), ("status", "Status"), ("host", "Host"), ("port", "Port"), ("created_at", "Created")];
    let body = html! {
        h1 { "Playrooms" }
        @if rows.is_empty() { p { "No Playroom yet: add one with " code { "play apply" } " or " code { "POST /api/playrooms" } "." } }
        @else { (table("playrooms", &rows, &columns, |r| Some(format!("/playrooms/{}", r["id"])))) }
    };
    Ok(page(&viewer, "Playrooms", "/playrooms", body).into_response())
}

async fn playroom_page(viewer: &Viewer, id: i64, report: Option<Markup>) -> PageResult {
    let room = viewer.get(&format!("/api/playrooms/{id}")).await?;
    let name = room["name"].as_str().unwrap_or_default().to_owned();
    let body = html! {
        p { a href="/playrooms" { "← Playrooms" } }
        h1 { (name) }
        @if let Some(report) = report { (report) }
        @if viewer.may("POST", "/api/playrooms/{id}/test_connection") {
            form.actions method="post" action={ "/playrooms/" (id) "/test" } {
                (csrf_field(viewer)) button type="submit" { "Test the connection" }
            }
        }
        h2 { "Reachability" }
        (fields(&serde_json::json!({
            "reachable": room["reachable"], "unreachable_since": room["unreachable_since"],
            "unreachable_reason": room["unreachable_reason"], "last_checked_at": room["last_checked_at"],
            "last_transport": room["last_transport"], "last_error": room["last_error"],
        }), &[]))
        h2 { "Edge" }
        (fields(&room["edge"], &[]))
        @if !room["edge_status"].is_null() { h3 { "Edge status" } (fields(&room["edge_status"], &[])) }
        h2 { "Settings" }
        (fields(&room, &["name", "edge", "edge_status", "reachable", "unreachable_since", "unreachable_reason",
            "last_checked_at", "last_transport", "last_error"]))
    };
    Ok(page(viewer, &name, "/playrooms", body).into_response())
}

/// `GET /playrooms/{id}`.
pub async fn playroom_detail(viewer: Viewer, Path(id): Path<i64>) -> PageResult {
    playroom_page(&viewer, id, None).await
}

/// `POST /playrooms/{id}/test`: connects now and shows the report.
pub async fn playroom_test(
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<CsrfForm>,
) -> PageResult {
    viewer.check_form(&headers, &form.csrf)?;
    let report = match viewer.call(Method::POST, &format!("/api/playrooms/{id}/test_connection"), None).await {
        Ok(answer) => {
            html! { div.notice role="status" #test-report { h2 { "Connection test" } (fields(&answer.body, &[])) } }
        }
        Err(e) => {
            html! { div.notice.bad role="alert" #test-report { h2 { "Connection test" } p { (e.parts().2) } } }
        }
    };
    playroom_page(&viewer, id, Some(report)).await
}

/// `GET /playzones`.
pub async fn playzone_list(viewer: Viewer) -> PageResult {
    let zones = viewer.get("/api/playzones").await?;
    let rows = zones.as_array().cloned().unwrap_or_default();
    let columns = [
        ("name", "Name"),
        ("status", "Sync"),
        ("scm_url", "Repository"),
        ("default_branch", "Default branch"),
        ("last_synced_at", "Synced"),
    ];
    let body = html! {
        h1 { "Playzones" }
        @if rows.is_empty() { p { "No Playzone yet." } }
        @else { (table("playzones", &rows, &columns, |r| Some(format!("/playzones/{}", r["id"])))) }
    };
    Ok(page(&viewer, "Playzones", "/playzones", body).into_response())
}

#[derive(Debug, Default, serde::Deserialize)]
pub struct ZoneQuery {
    branch: Option<String>,
    notice: Option<String>,
}

/// `GET /playzones/{id}`: the Playzone, its branches, and the env
/// defaults of one branch (the default one unless `branch` says).
pub async fn playzone_detail(
    viewer: Viewer,
    Path(id): Path<i64>,
    axum::extract::Query(q): axum::extract::Query<ZoneQuery>,
) -> PageResult {
    let zone = viewer.get(&format!("/api/playzones/{id}")).await?;
    let name = zone["name"].as_str().unwrap_or_default().to_owned();
    let branches = if viewer.may("GET", "/api/playzones/{id}/branches") {
        let list = viewer.get(&format!("/api/playzones/{id}/branches?limit=50")).await.unwrap_or_default();
        list["branches"].as_array().cloned().unwrap_or_default()
    } else {
        Vec::new()
    };
    let branch = q.branch.clone().or_else(|| zone["default_branch"].as_str().map(str::to_owned));
    let env = match branch.filter(|_| viewer.may("GET", "/api/playzones/{id}/env_defaults")) {
        Some(branch) => {
            let query = serde_urlencoded::to_string([("branch", branch.as_str())]).unwrap_or_default();
            let found = viewer.get(&format!("/api/playzones/{id}/env_defaults?{query}")).await;
            Some((branch, found))
        }
        None => None,
    };
    let body = html! {
        p { a href="/playzones" { "← Playzones" } }
        h1 { (name) }
        (notice(q.notice.as_deref()))
        @if viewer.may("POST", "/api/playzones/{id}/sync") {
            form.actions method="post" action={ "/playzones/" (id) "/sync" } { (csrf_field(&viewer)) button type="submit" { "Sync now" } }
        }
        (fields(&zone, &["compose_file"]))
        @if let Some(compose) = zone["compose_file"].as_str() { details { summary { "Compose file found by the last sync" } pre { (compose) } } }
        h2 { "Branches" }
        @if branches.is_empty() { p.muted { "None recorded yet." } } @else {
            (table("branches", &branches, &[("name", "Branch"), ("commit", "Commit"), ("default", "Default")],
                |b| Some(format!("/playzones/{id}?{}", serde_urlencoded::to_string([("branch", b["name"].as_str().unwrap_or_default())]).unwrap_or_default()))))
        }
        @if let Some((branch, found)) = env { (env_defaults(&branch, found)) }
    };
    Ok(page(&viewer, &name, "/playzones", body).into_response())
}

/// A branch's env defaults; the values of sensitive keys are never sent
/// to the page.
fn env_defaults(branch: &str, found: Result<Value, Failure>) -> Markup {
    html! {
        h2 { "Env defaults of " code { (branch) } }
        @match found {
            Ok(d) => {
                @let sensitive: Vec<&str> = d["sensitive_keys"].as_array().into_iter().flatten().filter_map(|k| k.as_str()).collect();
                @match d["defaults"].as_object().filter(|m| !m.is_empty()) {
                    None => { p.muted { "None." } }
                    Some(defaults) => {
                        dl #env-defaults { @for (k, v) in defaults {
                            dt { code { (k) } }
                            dd { @if sensitive.contains(&k.as_str()) { span.muted title="sensitive: not shown" { "••••••" } }
                                 @else { code { (v.as_str().unwrap_or_default()) } } }
                        } }
                    }
                }
            }
            Err(e) => { p.muted { (e.parts().2) } }
        }
    }
}

/// `POST /playzones/{id}/sync`.
pub async fn playzone_sync(
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<CsrfForm>,
) -> PageResult {
    viewer.check_form(&headers, &form.csrf)?;
    viewer.call(Method::POST, &format!("/api/playzones/{id}/sync"), None).await?;
    Ok(Redirect::to(&format!("/playzones/{id}?notice=A+sync+was+asked+for%3A+reload+in+a+moment.")).into_response())
}
