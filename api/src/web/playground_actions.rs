//! The actions of a Playground's page: extend, roll out, hard restart and
//! destroy (after a page that asks to confirm). Each is a form post with
//! the session's CSRF token; each is the API's own request, and sends the
//! browser back to the page that follows
//! the Playground until it converges (post, redirect, get: a reload never
//! repeats the action).

use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect};
use maud::html;
use play_store::playgrounds;
use serde::Deserialize;
use serde_json::json;

use super::failure::PageResult;
use super::frame::{csrf_field, page};
use super::json_view::time_of;
use super::viewer::Viewer;
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct ActionForm {
    csrf: String,
    /// For extend: hours, empty for the default.
    #[serde(default)]
    duration_hours: String,
}

fn back(id: i64, notice: &str) -> axum::response::Response {
    let query = serde_urlencoded::to_string([("notice", notice)]).unwrap_or_default();
    Redirect::to(&format!("/playgrounds/{id}?{query}")).into_response()
}

/// `POST /playgrounds/{id}/extend`.
pub async fn extend(
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<ActionForm>,
) -> PageResult {
    viewer.check_form(&headers, &form.csrf)?;
    let hours = match form.duration_hours.trim() {
        "" => None,
        text => Some(text.parse::<i64>().map_err(|_| ApiError::field("duration_hours", "must be a whole number"))?),
    };
    let path = format!("/api/playgrounds/{id}/extend_expiration");
    let extended = viewer.call(Method::POST, &path, Some(json!({"duration_hours": hours}))).await?.body;
    let until = time_of(&extended["expires_at"]).map(|at| at.format("%Y-%m-%d %H:%M UTC").to_string());
    let until = until.unwrap_or_default();
    Ok(back(id, &format!("Extended: it now expires at {until}.")))
}

/// `POST /playgrounds/{id}/{action}` for the actions without fields:
/// `rollout`, `hard_restart`, `sleep` and `wake`, each the API's route of
/// the same name.
pub async fn act(
    viewer: Viewer,
    headers: HeaderMap,
    Path((id, action)): Path<(i64, String)>,
    Form(form): Form<ActionForm>,
) -> PageResult {
    viewer.check_form(&headers, &form.csrf)?;
    let notice = match action.as_str() {
        "rollout" => "Rolling out: the page follows it until it is running again.",
        "hard_restart" => "Restarting from scratch: containers are made again, images pulled again.",
        "sleep" => "Going to sleep: its containers stop and are kept; a visit to its URL wakes it.",
        "wake" => "Waking up: its containers start again, in dependency order.",
        _ => return Err(ApiError::RouteNotFound(format!("/playgrounds/{id}/{action}")).into()),
    };
    viewer.call(Method::POST, &format!("/api/playgrounds/{id}/{action}"), None).await?;
    Ok(back(id, notice))
}

/// `GET /playgrounds/{id}/destroy`: asks to confirm.
pub async fn confirm_destroy(State(state): State<AppState>, viewer: Viewer, Path(id): Path<i64>) -> PageResult {
    viewer.require("DELETE", "/api/playgrounds/{id}")?;
    let p = playgrounds::get(&state.store, viewer.principal.account_id, id).await?;
    let body = html! {
        p { a href={ "/playgrounds/" (id) } { "← " (p.name) } }
        h1 { "Destroy " (p.name) "?" }
        p { "Its containers, networks and volumes are removed from the Playroom and its URLs stop answering. This cannot be undone." }
        div.actions {
            form method="post" action={ "/playgrounds/" (id) "/destroy" } {
                (csrf_field(&viewer))
                button.danger type="submit" { "Destroy " (p.name) }
            }
            a.button href={ "/playgrounds/" (id) } { "Keep it" }
        }
    };
    Ok(page(&viewer, "Destroy", "/playgrounds", body).into_response())
}

/// `POST /playgrounds/{id}/destroy`.
pub async fn destroy(
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<ActionForm>,
) -> PageResult {
    viewer.check_form(&headers, &form.csrf)?;
    let detail = viewer.call(Method::DELETE, &format!("/api/playgrounds/{id}"), None).await?.body;
    let name = detail["name"].as_str().unwrap_or_default();
    let notice = format!("Destroying {name}: it leaves the list once the Playroom is clean.");
    let query = serde_urlencoded::to_string([("notice", notice.as_str())]).unwrap_or_default();
    Ok(Redirect::to(&format!("/playgrounds?{query}")).into_response())
}
