//! The Playspecs pages (the Compose file with its warnings at their
//! lines, services, mounted files) and the templates pages (the catalog
//! the account sees, each template's versions and variables, a link to
//! launch it).

use axum::extract::Path;
use axum::response::IntoResponse;
use maud::html;

use super::failure::PageResult;
use super::frame::page;
use super::json_view::{fields, table, text_of, value};
use super::viewer::Viewer;

/// `GET /playspecs`.
pub async fn playspec_list(viewer: Viewer) -> PageResult {
    let all = viewer.get("/api/playspecs").await?;
    let rows = all.as_array().cloned().unwrap_or_default();
    let columns = [
        ("name", "Name"),
        ("description", "Description"),
        ("playground_count", "Playgrounds"),
        ("updated_at", "Updated"),
    ];
    let body = html! {
        h1 { "Playspecs" }
        @if rows.is_empty() { p { "No Playspec yet: " a href="/launch" { "launch" } " a Compose file to make one." } }
        @else { (table("playspecs", &rows, &columns, |r| Some(format!("/playspecs/{}", r["id"])))) }
    };
    Ok(page(&viewer, "Playspecs", "/playspecs", body).into_response())
}

/// `GET /playspecs/{id}`.
pub async fn playspec_detail(viewer: Viewer, Path(id): Path<i64>) -> PageResult {
    let view = viewer.get(&format!("/api/playspecs/{id}")).await?;
    let warnings = view["warnings"].as_array().cloned().unwrap_or_default();
    let warned: Vec<u64> = warnings.iter().filter_map(|w| w["line"].as_u64()).collect();
    let name = text_of(&view["name"]);
    let compose = text_of(&view["base_compose_yaml"]);
    let body = html! {
        p { a href="/playspecs" { "← Playspecs" } }
        h1 { (name) }
        (fields(&view, &["base_compose_yaml", "services", "warnings", "mounted_files", "credentials"]))
        h2 { "Warnings" }
        @if warnings.is_empty() { p.muted { "None." } } @else {
            ul #warnings { @for w in &warnings {
                li { @if let Some(line) = w["line"].as_u64() { "line " (line) ": " }
                     @if let Some(path) = w["path"].as_str().filter(|p| !p.is_empty()) { code { (path) } ": " }
                     (text_of(&w["message"])) }
            } }
        }
        h2 { "Compose" }
        pre.compose-lines #compose { @for (n, line) in compose.lines().enumerate() {
            @let marked = warned.contains(&(n as u64 + 1));
            span class=[marked.then_some("flagged")] { (format!("{:>4} ", n + 1)) (line) @if marked { "  ← warning" } }
        } }
        h2 { "Services" } (value("services", &view["services"]))
        h2 { "Mounted files" } (value("mounted_files", &view["mounted_files"]))
        h2 { "Registry credentials" } (value("credentials", &view["credentials"]))
    };
    Ok(page(&viewer, &name, "/playspecs", body).into_response())
}

/// `GET /templates`.
pub async fn template_list(viewer: Viewer) -> PageResult {
    let all = viewer.get("/api/import_templates").await?;
    let rows = all.as_array().cloned().unwrap_or_default();
    let columns = [
        ("name", "Name"),
        ("description", "Description"),
        ("latest_version", "Latest version"),
        ("public", "Public"),
        ("owner", "Yours"),
    ];
    let body = html! {
        h1 { "Templates" }
        @if rows.is_empty() { p { "No template yet." } }
        @else { (table("templates", &rows, &columns, |r| Some(format!("/templates/{}", r["id"])))) }
    };
    Ok(page(&viewer, "Templates", "/templates", body).into_response())
}

/// `GET /templates/{id}`.
pub async fn template_detail(viewer: Viewer, Path(id): Path<i64>) -> PageResult {
    let template = viewer.get(&format!("/api/import_templates/{id}")).await?;
    let versions = match viewer.may("GET", "/api/import_templates/{id}/versions") {
        true => {
            viewer.get(&format!("/api/import_templates/{id}/versions")).await?.as_array().cloned().unwrap_or_default()
        }
        false => Vec::new(),
    };
    let name = text_of(&template["name"]);
    let latest = template["latest_version"].as_i64();
    let body = html! {
        p { a href="/templates" { "← Templates" } }
        h1 { (name) }
        @if viewer.may("POST", "/api/import_templates/{id}/launch") && latest.is_some() {
            p { a.button href={ "/launch/templates/" (id) } { "Launch…" } }
        }
        (fields(&template, &["name"]))
        h2 { "Versions" }
        @if versions.is_empty() { p.muted { "None that this session can see." } }
        @for v in versions.iter().rev() {
            details open[v["version"].as_i64() == latest] {
                summary { "Version " (v["version"].as_i64().unwrap_or_default()) @if v["public"] == true { " (public)" } }
                h3 { "Variables" } (value("variables", &v["variables"]))
                h3 { "Body" } pre { (text_of(&v["template_body"])) }
            }
        }
    };
    Ok(page(&viewer, &name, "/templates", body).into_response())
}
