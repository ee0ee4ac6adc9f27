//! The profile's API keys: the list, a new key with a scope picker (its
//! token shown once, on the answer to the form, never again), deleting a
//! key (which ends its sessions, this one included when it is the key the
//! session was signed in with).

use axum::extract::{Form, Path};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect};
use maud::{Markup, html};
use play_model::scopes::Scope;
use serde_json::{Value, json};

use super::failure::PageResult;
use super::frame::{csrf_field, page};
use super::json_view::{text_of, time_of};
use super::layout::ago;
use super::viewer::Viewer;

/// The page; `created` is the answer to a new key (its token shown here,
/// once).
async fn render(viewer: &Viewer, created: Option<&Value>, errors: Option<&str>) -> PageResult {
    let keys = viewer.get("/api/keys").await?;
    let keys = keys.as_array().cloned().unwrap_or_default();
    let mine: Vec<Scope> = viewer.principal.scopes.iter().collect();
    let body = html! {
        h1 { "API keys" }
        p { "This session acts with key " (viewer.principal.key_id) " of account " (viewer.principal.account_id) "." }
        @if let Some(created) = created {
            div.notice role="status" #new-key {
                p { "Key " strong { (text_of(&created["key"]["label"])) } " was made. Copy its token now: it is shown this once." }
                p.token.mono #new-token { (text_of(&created["token"])) }
            }
        }
        @if let Some(e) = errors { p.notice.bad role="alert" { (e) } }
        div.table-box { table #keys {
            thead { tr { th scope="col" { "Label" } th scope="col" { "Scopes" } th scope="col" .hide-narrow { "Last used" } th scope="col" { "Expires" } th scope="col" { "" } } }
            tbody { @for k in &keys {
                @let id = k["id"].as_i64().unwrap_or_default();
                @let label = text_of(&k["label"]);
                @let scopes: Vec<&str> = k["scopes"].as_array().into_iter().flatten().filter_map(|s| s.as_str()).collect();
                tr {
                    td.wrap { (label) @if id == viewer.principal.key_id { " " span.muted { "(this session)" } } }
                    td.wrap { (scopes.join(", ")) }
                    td.hide-narrow { @if let Some(at) = time_of(&k["last_used_at"]) { (ago(at)) } @else { "never" } }
                    td { @if let Some(at) = time_of(&k["expires_at"]) { (at.format("%Y-%m-%d")) } @else { "never" } }
                    td { @if viewer.may("DELETE", "/api/keys/{id}") {
                        form method="post" action={ "/keys/" (id) "/delete" } {
                            (csrf_field(viewer))
                            button.danger type="submit" aria-label={ "Delete key " (label) } { "Delete" }
                        }
                    } }
                }
            } }
        } }
        @if viewer.may("POST", "/api/keys") { (create_form(viewer, &mine)) }
    };
    let status = if errors.is_some() { StatusCode::UNPROCESSABLE_ENTITY } else { StatusCode::OK };
    Ok((status, page(viewer, "API keys", "/keys", body)).into_response())
}

fn create_form(viewer: &Viewer, mine: &[Scope]) -> Markup {
    html! {
        h2 { "New key" }
        form method="post" action="/keys" {
            (csrf_field(viewer))
            label for="label" { "Label" }
            input #label type="text" name="label" required maxlength="100";
            fieldset {
                legend { "Scopes " span.muted { "(a key never gets more than this session's)" } }
                @for s in mine {
                    div.check {
                        input id={ "scope-" (s.as_str()) } type="checkbox" name="scopes" value=(s.as_str());
                        label for={ "scope-" (s.as_str()) } { code { (s.as_str()) } " " span.muted { (s.description()) } }
                    }
                }
            }
            label for="expires_in_days" { "Expires after (days, empty for never)" }
            input #expires_in_days type="number" name="expires_in_days" min="1" max="3650";
            div.actions { button.primary type="submit" { "Create key" } }
        }
    }
}

/// `GET /keys`.
pub async fn list(viewer: Viewer) -> PageResult {
    render(&viewer, None, None).await
}

/// `POST /keys`.
pub async fn create(viewer: Viewer, headers: HeaderMap, Form(fields): Form<Vec<(String, String)>>) -> PageResult {
    let value = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| v.trim().to_owned());
    viewer.check_form(&headers, &value("csrf").unwrap_or_default())?;
    let scopes: Vec<String> = fields.iter().filter(|(k, _)| k == "scopes").map(|(_, v)| v.clone()).collect();
    let expires_at = match value("expires_in_days").filter(|d| !d.is_empty()) {
        None => None,
        Some(days) => match days.parse::<i64>() {
            Ok(d) if (1..=3650).contains(&d) => Some(chrono::Utc::now() + chrono::Duration::days(d)),
            _ => return render(&viewer, None, Some("expires_in_days: a whole number of days from 1 to 3650")).await,
        },
    };
    let label = value("label").unwrap_or_default();
    let request = json!({"api_key": {"label": label, "scopes": scopes, "expires_at": expires_at}});
    match viewer.call(Method::POST, "/api/keys", Some(request)).await {
        Ok(created) => render(&viewer, Some(&created.body), None).await,
        Err(e) => {
            let (status, _, message, details) = e.parts();
            if status != StatusCode::UNPROCESSABLE_ENTITY && status != StatusCode::BAD_REQUEST {
                return Err(e);
            }
            let mut text = message;
            for (field, messages) in details {
                text.push_str(&format!(" {field}: {}.", messages.join("; ")));
            }
            render(&viewer, None, Some(&text)).await
        }
    }
}

#[derive(Debug, serde::Deserialize)]
pub struct DeleteForm {
    csrf: String,
}

/// `POST /keys/{id}/delete`.
pub async fn delete(
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<DeleteForm>,
) -> PageResult {
    viewer.check_form(&headers, &form.csrf)?;
    viewer.call(Method::DELETE, &format!("/api/keys/{id}"), None).await?;
    if id == viewer.principal.key_id {
        return Ok(Redirect::to("/sign-in").into_response());
    }
    Ok(Redirect::to("/keys").into_response())
}
