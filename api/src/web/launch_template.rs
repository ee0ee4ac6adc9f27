//! Launching a template from the page: a form generated from the latest
//! version's declared variables (required, default, the validation regex
//! shown and checked in the page, and again by the server), then the
//! API's own launch.

use std::collections::BTreeMap;

use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect};
use maud::{Markup, html};
use play_model::FieldErrors;
use play_store::templates;
use serde_json::json;

use super::failure::PageResult;
use super::frame::{csrf_field, page};
use super::launch::playroom_field;
use super::viewer::Viewer;
use crate::error::ApiError;
use crate::state::AppState;

const ROUTE: &str = "/api/import_templates/{id}/launch";

/// `/regex/` as written → the pattern between the slashes.
fn pattern(validation: &str) -> &str {
    validation.strip_prefix('/').and_then(|v| v.strip_suffix('/')).unwrap_or(validation)
}

async fn render(
    state: &AppState,
    viewer: &Viewer,
    id: i64,
    values: &BTreeMap<String, String>,
    errors: &FieldErrors,
) -> PageResult {
    let template = templates::get(&state.store, viewer.principal.account_id, id).await?;
    let versions = templates::versions(&state.store, viewer.principal.account_id, id).await?;
    let latest = versions.iter().max_by_key(|v| v.version).ok_or(play_core::Error::NotFound("template version"))?;
    let variables = latest.variables.as_object().cloned().unwrap_or_default();
    let rooms = playroom_field(state, viewer, values.get("playroom_id").and_then(|v| v.parse().ok())).await?;
    let field_errors = |name: &str| -> Vec<String> {
        [format!("variables.{name}"), name.to_owned()].iter().filter_map(|k| errors.get(k)).flatten().cloned().collect()
    };
    let body = html! {
        p { a href="/launch" { "← Launch" } }
        h1 { "Launch " (template.name) }
        @if !template.description.is_empty() { p { (template.description) } }
        p.muted { "Version " (latest.version) }
        @if !errors.is_empty() {
            div.notice.bad role="alert" #launch-errors {
                p { "Nothing was launched:" }
                ul { @for (field, messages) in errors { @for m in messages { li { code { (field) } ": " (m) } } } }
            }
        }
        form method="post" action={ "/launch/templates/" (id) } {
            (csrf_field(viewer))
            label for="name" { "Name " span.muted { "(optional)" } }
            input #name type="text" name="name" maxlength="100" value=[values.get("name")];
            (rooms)
            @if !variables.is_empty() { h2 { "Variables" } }
            @for (key, def) in &variables { (variable(key, def, values.get(&format!("var.{key}")), &field_errors(key))) }
            div.actions { button.primary type="submit" { "Launch" } }
        }
    };
    let status = if errors.is_empty() { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
    Ok((status, page(viewer, "Launch", "/launch", body)).into_response())
}

/// One variable's field.
fn variable(key: &str, def: &serde_json::Value, value: Option<&String>, errors: &[String]) -> Markup {
    let text = |k: &str| def.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let required = def.get("required").and_then(|v| v.as_bool()).unwrap_or(false);
    let random = def.get("random").and_then(|v| v.as_bool()).unwrap_or(false);
    let default = text("default");
    let validation = text("validation");
    let id = format!("var-{key}");
    let hint = format!("{id}-hint");
    html! {
        label for=(id) { (text("name").unwrap_or_else(|| key.to_owned())) " " code { (key) } @if required { " (required)" } }
        input id=(id) type="text" name={ "var." (key) } required[required && !random]
            value=[value.cloned().or(default.clone())] placeholder=[random.then_some("generated when left empty")]
            data-regex=[validation.as_deref().map(pattern)] aria-describedby=(hint) aria-invalid=[(!errors.is_empty()).then_some("true")];
        p.hint id=(hint) {
            @if let Some(d) = &default { "Default: " code { (d) } ". " }
            @if let Some(v) = &validation { "Must match " code { (v) } ". " }
            @if random { "A random value is generated when left empty." }
        }
        @for e in errors { p.error { (e) } }
    }
}

/// `GET /launch/templates/{id}`.
pub async fn form(State(state): State<AppState>, viewer: Viewer, Path(id): Path<i64>) -> PageResult {
    viewer.require("POST", ROUTE)?;
    render(&state, &viewer, id, &BTreeMap::new(), &FieldErrors::new()).await
}

/// `POST /launch/templates/{id}`.
pub async fn submit(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(fields): Form<Vec<(String, String)>>,
) -> PageResult {
    let values: BTreeMap<String, String> = fields.into_iter().collect();
    viewer.check_form(&headers, values.get("csrf").map_or("", String::as_str))?;
    let variables: BTreeMap<String, serde_json::Value> = values
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("var.")?.to_owned(), v)))
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k, serde_json::Value::String(v.clone())))
        .collect();
    let name = values.get("name").map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    let playroom_id = match values.get("playroom_id").map(|v| v.trim()) {
        Some(v) if !v.is_empty() => {
            Some(v.parse::<i64>().map_err(|_| ApiError::field("playroom_id", "must be a number"))?)
        }
        _ => None,
    };
    let request = json!({"playroom_id": playroom_id, "variables": variables, "name": name});
    let path = format!("/api/import_templates/{id}/launch");
    match viewer.call(Method::POST, &path, Some(request)).await {
        Ok(answer) => Ok(Redirect::to(&format!(
            "/playgrounds/{}?notice=Launched%3A+the+page+follows+it+until+it+runs.",
            answer.body["playground_id"].as_i64().unwrap_or_default()
        ))
        .into_response()),
        Err(e) => {
            let (status, _, message, mut details) = e.parts();
            if status != StatusCode::UNPROCESSABLE_ENTITY {
                return Err(e);
            }
            if details.is_empty() {
                details.insert(String::new(), vec![message]);
            }
            render(&state, &viewer, id, &values, &details).await
        }
    }
}
