//! Parts of a Playground's detail page: its actions, the region the script
//! keeps live (status, services, routes, events), and the desired state
//! next to what the host reports (`/debug`).

use maud::{Markup, html};
use play_model::playground::{Playground, PlaygroundStatus, Power};
use serde_json::Value;

use super::failure::Failure;
use super::frame::csrf_field;
use super::json_view::{text_of, time_of};
use super::layout::{ago, badge, countdown};
use super::viewer::Viewer;
use crate::views::playgrounds::PlaygroundDetail;

/// Recent events shown in the timeline.
const TIMELINE: i64 = 20;

/// Whether the Playground is on its way somewhere (worth following live).
pub fn moving(p: &Playground) -> bool {
    matches!(p.status, PlaygroundStatus::InProgress | PlaygroundStatus::Destroying)
        || p.generation != p.observed_generation
}

/// The buttons the session's scopes allow.
pub fn actions(viewer: &Viewer, p: &Playground) -> Markup {
    let id = p.id;
    let gone = p.status == PlaygroundStatus::Destroying;
    html! {
        @if !gone {
            div.actions {
                @if viewer.may("POST", "/api/playgrounds/{id}/extend_expiration") {
                    form method="post" action={ "/playgrounds/" (id) "/extend" } {
                        (csrf_field(viewer))
                        label for="duration_hours" { "Extend by" }
                        select #duration_hours name="duration_hours" {
                            option value="" { "the default" }
                            @for h in [1, 4, 8, 24, 72] { option value=(h) { (h) " h" } }
                        }
                        " " button type="submit" { "Extend" }
                    }
                }
                @if viewer.may("POST", "/api/playgrounds/{id}/rollout") {
                    form method="post" action={ "/playgrounds/" (id) "/rollout" } {
                        (csrf_field(viewer)) button type="submit" { "Roll out" }
                    }
                }
                @if viewer.may("POST", "/api/playgrounds/{id}/hard_restart") {
                    form method="post" action={ "/playgrounds/" (id) "/hard_restart" } {
                        (csrf_field(viewer)) button type="submit" { "Hard restart" }
                    }
                }
                @if !p.job_mode && p.sleep.power == Power::Awake && viewer.may("POST", "/api/playgrounds/{id}/sleep") {
                    form method="post" action={ "/playgrounds/" (id) "/sleep" } {
                        (csrf_field(viewer)) button type="submit" { "Sleep" }
                    }
                }
                @if p.sleep.power == Power::Asleep && viewer.may("POST", "/api/playgrounds/{id}/wake") {
                    form method="post" action={ "/playgrounds/" (id) "/wake" } {
                        (csrf_field(viewer)) button type="submit" { "Wake" }
                    }
                }
                @if viewer.may("DELETE", "/api/playgrounds/{id}") {
                    a.button.danger href={ "/playgrounds/" (id) "/destroy" } { "Destroy…" }
                }
            }
        }
    }
}

/// The region the script refreshes: every second while the Playground is
/// on its way somewhere, every five once it has arrived.
pub async fn live_part(viewer: &Viewer, p: &Playground, view: &PlaygroundDetail) -> Result<Markup, Failure> {
    let recent: Vec<Value> = if viewer.may("GET", "/api/playgrounds/{id}/events") {
        let events = viewer.get(&format!("/api/playgrounds/{}/events?limit={TIMELINE}", p.id)).await?;
        events.as_array().cloned().unwrap_or_default()
    } else {
        Vec::new()
    };
    let moving = moving(p);
    let interval = if moving { "1000" } else { "5000" };
    let may_logs = viewer.may("GET", "/api/playgrounds/{id}/logs/{service}");
    let converged = p.generation == p.observed_generation;
    Ok(html! {
        section #playground-live aria-live="polite" data-live={ "/playgrounds/" (p.id) "?part=live" } data-interval=(interval) {
            dl {
                dt { "Status" }
                dd #status { (badge(p.status.as_str()))
                    @if let Some(step) = p.creation_step.filter(|_| p.status == PlaygroundStatus::InProgress) { " " span.muted { (step.label()) } }
                    @if !converged { " " span.muted { "(applying generation " (p.generation) ")" } }
                }
                @if let Some(error) = &p.error_message {
                    dt { "Error" }
                    dd.error { @if let Some(step) = p.error_step { (step.label()) ": " } (error) }
                }
                dt { "Expires" } dd #expires { (countdown(view.item.expires_at)) }
                dt { "Sleep" }
                dd #sleep {
                    @match &view.sleep.sleep_after { Some(after) => { "after " (after) " without activity" } None => { "never" } }
                    @if let Some(at) = view.sleep.sleeps_at { " · sleeps " (countdown(Some(at))) }
                    @if let Some(at) = view.sleep.slept_at.filter(|_| p.status == PlaygroundStatus::Sleeping) { " · asleep since " (ago(at)) }
                    @if let Some(at) = view.sleep.last_active_at { " · last active " (ago(at)) }
                }
                dt { "Created" } dd { (ago(view.item.created_at)) }
                @if let Some(spec) = &view.item.playspec_name { dt { "Playspec" } dd { a href={ "/playspecs/" (view.item.playspec_id.unwrap_or_default()) } { (spec) } } }
                @if let Some(t) = &view.trigger {
                    dt { "Trigger" }
                    dd { @if t.ref_kind == "pull_request" { "pull request #" } @else { "branch " } (t.ref_name)
                        @if let Some(c) = &t.commit { " at " code { (c.chars().take(12).collect::<String>()) } } }
                }
                @if view.needs_rollout { dt { "Outdated" } dd { (view.outdated_services.join(", ")) " (a rollout builds the new commit)" } }
            }
            h2 { "URLs" }
            @if view.routes.is_empty() { p.muted { "No service is exposed." } } @else {
                ul #urls { @for r in &view.routes {
                    li { (r.service) ": " a href=(r.url) rel="noopener" { (r.url) } " "
                        @if r.live { (badge("live")) } @else { span.muted { (r.reason.clone().unwrap_or_default()) } } }
                } }
            }
            h2 { "Services" }
            div.table-box { table {
                thead { tr { th scope="col" { "Service" } th scope="col" { "State" } th scope="col" { "Health" } th scope="col" .hide-narrow { "Container" } th scope="col" { "Logs" } } }
                tbody { @for s in &view.services { tr {
                    td { (s.name) }
                    td { (badge(s.status.as_str())) }
                    td { @if let Some(h) = &s.health { (badge(h)) } @else { span.muted { "no check" } } }
                    td.hide-narrow.mono.wrap { (s.container.clone().unwrap_or_default()) }
                    td { @if may_logs { a href={ "/playgrounds/" (p.id) "/logs/" (s.name) } { "logs" } } }
                } } }
            } }
            @if view.services.is_empty() { p.muted { "No service has been started yet." } }
            @if !recent.is_empty() {
                h2 { "Events" }
                ol.timeline { @for e in &recent { li {
                    @if let Some(at) = time_of(&e["timestamp"]) { (ago(at)) }
                    code { (text_of(&e["event_type"])) } " " (event_summary(e))
                } } }
            }
        }
    })
}

/// The words of an event's metadata worth a glance (status moves, errors).
fn event_summary(e: &Value) -> String {
    let Some(meta) = e["metadata"].as_object() else { return String::new() };
    let pick = |k: &str| meta.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    match (pick("from"), pick("to")) {
        (Some(from), Some(to)) => format!("{from} → {to}"),
        _ => ["reason", "error", "message", "service"].iter().filter_map(|k| pick(k)).collect::<Vec<_>>().join(" · "),
    }
}

/// What play asks of the host next to what the host reports, per service
/// (`GET /api/playgrounds/{id}/debug`); built images with the end of their
/// build log.
pub fn debug_part(debug: &Value, observed: &[play_model::playground::ServiceStatus]) -> Markup {
    let services = debug["services_configuration"].as_array().cloned().unwrap_or_default();
    let builds = debug["build_records"].as_array().cloned().unwrap_or_default();
    let short = |v: &Value, n: usize| text_of(v).chars().take(n).collect::<String>();
    html! {
        h2 { "Desired and observed" }
        @if let Some(error) = debug["error"].as_str() { p.error role="alert" { (error) } }
        div.table-box { table #desired {
            thead { tr {
                th scope="col" { "Service" } th scope="col" { "Desired image" } th scope="col" .hide-narrow { "Config" }
                th scope="col" { "Route" } th scope="col" { "Observed" }
            } }
            tbody { @for s in &services {
                @let name = text_of(&s["name"]);
                @let seen = observed.iter().find(|o| o.name == name);
                @let exposure = &s["exposure"];
                tr {
                    td { (name) }
                    td.wrap.mono { @if let Some(image) = s["image"].as_str() { (image) } @else { "built" } }
                    td.hide-narrow.mono { (short(&s["config_hash"], 12)) }
                    td.wrap { @if exposure.is_object() {
                        @if let Some(url) = exposure["url"].as_str() { (url) } @else { span.muted { "not routed" } }
                        @if exposure["live"] == true { " " (badge("live")) }
                    } @else { span.muted { "not exposed" } } }
                    td { @if let Some(o) = seen { (badge(o.status.as_str())) } @else { span.muted { "not seen" } } }
                }
            } }
        } }
        @if !builds.is_empty() {
            h2 { "Builds" }
            @for b in builds.iter().rev() {
                details {
                    summary { (text_of(&b["service"])) " at " code { (short(&b["commit"], 12)) } " "
                        @if b["cache_hit"] == true { (badge("cached")) } @else if b["succeeded"] == true { (badge("succeeded")) } @else { (badge("failed")) }
                        " " (b["duration_ms"].as_i64().unwrap_or_default()) " ms"
                        @if let Some(at) = time_of(&b["created_at"]) { ", " (ago(at)) } }
                    pre.mono { (super::json_view::without_escapes(&text_of(&b["log_tail"]))) }
                }
            }
        }
        @if let Some(yaml) = debug["generated_compose_yaml"].as_str() {
            details { summary { "The Compose file play runs" } pre { (yaml) } }
        }
    }
}
