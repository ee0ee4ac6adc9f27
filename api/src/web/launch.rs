//! The Launch pages: the template catalog (search, categories) and a
//! Compose file pasted or uploaded. A refused Compose file comes back in
//! the form with each problem next to the line it names. Launching from a
//! template is `launch_template`.

use axum::extract::{Multipart, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use play_model::FieldErrors;
use play_model::compose::line_of;
use play_model::model::template::ListFilter;
use play_store::templates;
use serde::Deserialize;
use serde_json::json;

use super::failure::{Failure, PageResult};
use super::frame::{csrf_field, page};
use super::viewer::Viewer;
use crate::error::ApiError;
use crate::state::AppState;

/// The largest Compose file the form takes (the engine's own bound).
const MAX_COMPOSE: usize = play_model::compose::MAX_COMPOSE_BYTES;

#[derive(Debug, Default, Deserialize)]
pub struct CatalogQuery {
    #[serde(default)]
    q: String,
    category: Option<i64>,
}

/// The Playrooms the session can launch on, as a `<select>`, or a number
/// field when it may not list them.
pub async fn playroom_field(state: &AppState, viewer: &Viewer, chosen: Option<i64>) -> Result<Markup, Failure> {
    if !viewer.may("GET", "/api/playrooms") {
        return Ok(html! {
            label for="playroom_id" { "Playroom id" }
            input #playroom_id type="number" name="playroom_id" min="1" required value=[chosen];
        });
    }
    let rooms = play_store::playrooms::list(&state.store, viewer.principal.account_id).await?;
    Ok(html! {
        label for="playroom_id" { "Playroom" }
        @if rooms.is_empty() { p.error { "There is no Playroom yet: " a href="/playrooms" { "add one" } " first." } }
        select #playroom_id name="playroom_id" required {
            @for r in &rooms { option value=(r.id) selected[chosen == Some(r.id)] { (r.name) " (" (r.host) ")" } }
        }
    })
}

/// `GET /launch`.
pub async fn catalog(State(state): State<AppState>, viewer: Viewer, Query(q): Query<CatalogQuery>) -> PageResult {
    let may_templates = viewer.may("GET", "/api/import_templates");
    let (found, categories) = if may_templates {
        let filter = ListFilter { category_id: q.category, mine: None };
        let all = templates::list(&state.store, viewer.principal.account_id, filter).await?;
        let needle = q.q.trim().to_lowercase();
        let found: Vec<_> = all
            .into_iter()
            .filter(|t| t.latest_version.is_some())
            .filter(|t| {
                needle.is_empty()
                    || t.name.to_lowercase().contains(&needle)
                    || t.description.to_lowercase().contains(&needle)
            })
            .collect();
        (found, templates::categories(&state.store).await?)
    } else {
        (Vec::new(), Vec::new())
    };
    let compose = compose_form(&state, &viewer, "", "", None, &FieldErrors::new()).await?;
    let body = html! {
        h1 { "Launch" }
        @if may_templates {
            h2 { "From a template" }
            form.filters method="get" action="/launch" role="search" {
                div { label for="tq" { "Search" } input #tq type="search" name="q" value=(q.q); }
                div { label for="category" { "Category" }
                    select #category name="category" {
                        option value="" { "all" }
                        @for c in &categories { option value=(c.id) selected[q.category == Some(c.id)] { (c.name) } }
                    }
                }
                button type="submit" { "Search" }
            }
            @if found.is_empty() { p.muted { "No template matches." } } @else {
                ul #catalog { @for t in &found {
                    li { a href={ "/launch/templates/" (t.id) } { (t.name) }
                        @let category = categories.iter().find(|c| c.id == t.category_id);
                        @if let Some(c) = category { " " span.muted { "(" (c.name) ")" } }
                        @if !t.description.is_empty() { br; span.muted { (t.description) } } }
                } }
            }
        }
        (compose)
    };
    Ok(page(&viewer, "Launch", "/launch", body).into_response())
}

/// The "from a Compose file" form, with the problems of a refused one.
async fn compose_form(
    state: &AppState,
    viewer: &Viewer,
    name: &str,
    yaml: &str,
    playroom: Option<i64>,
    errors: &FieldErrors,
) -> Result<Markup, Failure> {
    if !viewer.may("POST", "/api/launch") {
        return Ok(super::layout::nothing());
    }
    let rooms = playroom_field(state, viewer, playroom).await?;
    let flagged = flagged_lines(yaml, errors);
    Ok(html! {
        h2 { "From a Compose file" }
        @if !errors.is_empty() {
            div.notice.bad role="alert" #compose-errors {
                p { "The Compose file was not launched:" }
                ul { @for (field, messages) in errors { @for m in messages { li { code { (field) } ": " (m) } } } }
            }
            @if !flagged.is_empty() {
                pre.compose-lines aria-label="The Compose file, problem lines marked" {
                    @for (n, line) in yaml.lines().enumerate() {
                        @let marked = flagged.contains(&(n + 1));
                        span class=[marked.then_some("flagged")] { (format!("{:>4} ", n + 1)) (line) @if marked { "  ← here" } }
                    }
                }
            }
        }
        form method="post" action="/launch/compose" enctype="multipart/form-data" {
            (csrf_field(viewer))
            label for="name" { "Name" }
            input #name type="text" name="name" required maxlength="100" value=(name);
            (rooms)
            label for="compose_yaml" { "Compose YAML" }
            p.hint { "Paste it here, or choose a file below (the file wins)." }
            textarea #compose_yaml name="compose_yaml" spellcheck="false" { (yaml) }
            label for="compose_file" { "Compose file" }
            input #compose_file type="file" name="compose_file" accept=".yml,.yaml,text/yaml,application/yaml";
            div.actions { button.primary type="submit" { "Launch" } }
        }
    })
}

/// The lines the problems are at: named by the message (`… (line 7)`),
/// or found from the field's path in the document.
fn flagged_lines(yaml: &str, errors: &FieldErrors) -> Vec<usize> {
    let mut lines = Vec::new();
    for (field, messages) in errors {
        for m in messages {
            let named = m.rsplit_once("(line ").and_then(|(_, n)| n.strip_suffix(')')?.parse().ok());
            let path = field.strip_prefix("compose_yaml").map(|p| p.trim_start_matches('.'));
            if let Some(line) = named.or_else(|| path.filter(|p| !p.is_empty()).and_then(|p| line_of(yaml, p))) {
                lines.push(line);
            }
        }
    }
    lines
}

/// `POST /launch/compose` (multipart: a file may come with it).
pub async fn launch_compose(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    mut multipart: Multipart,
) -> PageResult {
    let (mut csrf, mut name, mut yaml, mut file, mut playroom) =
        (String::new(), String::new(), String::new(), None, None);
    while let Some(field) = multipart.next_field().await.map_err(|e| ApiError::BadRequest(e.body_text()))? {
        let key = field.name().unwrap_or_default().to_owned();
        let text = field.text().await.map_err(|e| ApiError::BadRequest(e.body_text()))?;
        if text.len() > MAX_COMPOSE {
            return Err(ApiError::field(key, format!("is larger than {MAX_COMPOSE} bytes")).into());
        }
        match key.as_str() {
            "csrf" => csrf = text,
            "name" => name = text,
            "compose_yaml" => yaml = text,
            "compose_file" if !text.is_empty() => file = Some(text),
            "playroom_id" => playroom = text.trim().parse().ok(),
            _ => {}
        }
    }
    viewer.check_form(&headers, &csrf)?;
    let yaml = file.unwrap_or(yaml);
    let request = json!({"name": name, "compose_yaml": yaml, "playroom_id": playroom, "create_playground": true});
    match viewer.call(Method::POST, "/api/launch", Some(request)).await {
        Ok(answer) => Ok(launched(answer.body["playground_id"].as_i64())),
        Err(e) => refused(&state, &viewer, e, &name, &yaml, playroom).await,
    }
}

fn launched(playground: Option<i64>) -> Response {
    match playground {
        Some(id) => Redirect::to(&format!("/playgrounds/{id}?notice=Launched%3A+the+page+follows+it+until+it+runs.")),
        None => Redirect::to("/playgrounds"),
    }
    .into_response()
}

/// The form again with the problems, for a validation refusal; the error
/// page for anything else.
async fn refused(
    state: &AppState,
    viewer: &Viewer,
    e: Failure,
    name: &str,
    yaml: &str,
    playroom: Option<i64>,
) -> PageResult {
    let (status, _, message, mut details) = e.parts();
    if status != StatusCode::UNPROCESSABLE_ENTITY {
        return Err(e);
    }
    if details.is_empty() {
        details.insert(String::new(), vec![message]);
    }
    let form = compose_form(state, viewer, name, yaml, playroom, &details).await?;
    let body = html! { h1 { "Launch" } (form) };
    Ok((status, page(viewer, "Launch", "/launch", body)).into_response())
}
