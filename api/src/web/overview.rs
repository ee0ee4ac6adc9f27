//! The overview (`/`): Playgrounds per state, how long launches took to
//! run over the last day, and how webhook deliveries went, drawn on the
//! server as SVG (no chart library, nothing to load). Each figure is
//! shown only with the scope its data needs.

use axum::extract::State;
use axum::response::IntoResponse;
use maud::{Markup, html};
use play_model::model::overview::Launch;
use play_model::playground::PlaygroundStatus;
use play_store::{overview, playgrounds};

use super::failure::PageResult;
use super::frame::page;
use super::viewer::Viewer;
use crate::state::AppState;

/// Launches drawn at most (the newest).
const MAX_BARS: usize = 60;

/// Horizontal bars, one per `(label, value, class)`.
pub fn bars(title: &str, rows: &[(String, i64, &str)]) -> Markup {
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    let height = rows.len() * 24 + 8;
    html! {
        svg.chart viewBox={ "0 0 320 " (height) } role="img" aria-label=(title) {
            title { (title) }
            @for (i, (label, value, class)) in rows.iter().enumerate() {
                @let y = i * 24 + 4;
                @let width = (*value as f64 / max as f64 * 180.0).round() as i64;
                text x="0" y=(y + 14) { (label) }
                rect class=(class) x="100" y=(y) width=(width.max(1)) height="16" {}
                text x=(104 + width) y=(y + 13) { (value) }
            }
        }
    }
}

/// One bar per launch, its height the seconds to `running`.
fn launch_chart(launches: &[Launch]) -> Markup {
    let shown: Vec<&Launch> = launches.iter().rev().take(MAX_BARS).rev().collect();
    let seconds: Vec<Option<f64>> =
        shown.iter().map(|l| l.to_running.map(|d| d.num_milliseconds() as f64 / 1000.0)).collect();
    let max = seconds.iter().flatten().cloned().fold(1.0_f64, f64::max);
    let width = 320.0 / MAX_BARS as f64;
    html! {
        svg.chart viewBox="0 0 320 130" role="img" aria-label="Seconds from create to running, per launch" {
            title { "Seconds from create to running, per launch, oldest first" }
            line.axis x1="0" y1="110" x2="320" y2="110" {}
            text x="0" y="126" { "0 s" }
            text x="0" y="10" { (format!("{max:.1} s")) }
            @for (i, s) in seconds.iter().enumerate() {
                @let x = format!("{:.1}", i as f64 * width);
                @match s {
                    Some(s) => {
                        @let h = (s / max * 95.0).max(1.0);
                        rect.ok x=(x) y=(format!("{:.1}", 110.0 - h)) width=(format!("{:.1}", width * 0.8)) height=(format!("{h:.1}")) {
                            title { (format!("{s:.1} s")) }
                        }
                    }
                    None => { rect.bad x=(x) y="106" width=(format!("{:.1}", width * 0.8)) height="4" { title { "not running yet" } } }
                }
            }
        }
    }
}

/// The seconds each launch took to run, sorted (launches not running yet
/// left out).
fn seconds_to_running(launches: &[Launch]) -> Vec<f64> {
    let mut done: Vec<f64> =
        launches.iter().filter_map(|l| l.to_running).map(|d| d.num_milliseconds() as f64 / 1000.0).collect();
    done.sort_by(f64::total_cmp);
    done
}

fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted.get(rank).copied()
}

/// `GET /`.
pub async fn home(State(state): State<AppState>, viewer: Viewer) -> PageResult {
    let account = viewer.principal.account_id;
    let since = play_model::time::now() - chrono::Duration::hours(24);
    let by_state = if viewer.may("GET", "/api/playgrounds") {
        let all = playgrounds::list(&state.store, account).await?;
        let rows: Vec<(String, i64, &str)> = PlaygroundStatus::ALL
            .iter()
            .filter(|s| **s != PlaygroundStatus::Destroyed)
            .map(|s| {
                let n = all.iter().filter(|p| p.status == *s).count() as i64;
                let class = match s {
                    PlaygroundStatus::Running | PlaygroundStatus::Complete => "ok",
                    PlaygroundStatus::Failed => "bad",
                    _ => "bar",
                };
                (s.as_str().replace('_', " "), n, class)
            })
            .collect();
        let launches = overview::launches(&state.store, account, since).await?;
        Some((all.len(), rows, launches))
    } else {
        None
    };
    let deliveries = if viewer.may("GET", "/api/webhook_endpoints") {
        Some(overview::deliveries(&state.store, account, since).await?)
    } else {
        None
    };
    let body = html! {
        h1 { "Overview" }
        div.grid {
            @if let Some((total, rows, launches)) = &by_state {
                section.card aria-labelledby="by-state" {
                    h2 #by-state { "Playgrounds by state" }
                    (bars("Playgrounds per state", rows))
                    p.muted { (total) " in all. " a href="/playgrounds" { "All Playgrounds" } }
                }
                section.card aria-labelledby="to-running" {
                    h2 #to-running { "Create to running, last 24 h" }
                    @let done = seconds_to_running(launches);
                    @if launches.is_empty() { p.muted { "No launch in the last day." } } @else {
                        (launch_chart(launches))
                        p { (launches.len()) " launches; "
                            @if let (Some(p50), Some(p90)) = (percentile(&done, 0.5), percentile(&done, 0.9)) {
                                "median " (format!("{p50:.1}")) " s, 90th percentile " (format!("{p90:.1}")) " s"
                            } @else { "none running yet" }
                            @let waiting = launches.len() - done.len();
                            @if waiting > 0 { "; " (waiting) " not running (yet)" } "." }
                    }
                }
            }
            @if let Some(deliveries) = &deliveries {
                section.card aria-labelledby="deliveries" {
                    h2 #deliveries { "Webhook deliveries, last 24 h" }
                    @if deliveries.is_empty() { p.muted { "No delivery in the last day." } } @else {
                        @let rows: Vec<(String, i64, &str)> = deliveries.iter().map(|(s, n)| {
                            (s.clone(), *n, if s == "succeeded" { "ok" } else if s == "pending" { "bar" } else { "bad" })
                        }).collect();
                        (bars("Webhook deliveries per outcome", &rows))
                        @let total: i64 = deliveries.iter().map(|d| d.1).sum();
                        @let ok: i64 = deliveries.iter().filter(|d| d.0 == "succeeded").map(|d| d.1).sum();
                        p { (format!("{:.0}", ok as f64 * 100.0 / total.max(1) as f64)) " % succeeded of " (total) ". " a href="/webhooks" { "Endpoints" } }
                    }
                }
            }
            section.card aria-labelledby="session" {
                h2 #session { "This session" }
                p { "Account " (account) ", key " (viewer.principal.key_id) "." }
                @let scopes: Vec<&str> = viewer.principal.scopes.iter().map(|s| s.as_str()).collect();
                details { summary { (scopes.len()) " scopes" } p { (scopes.join(", ")) } }
                p { a href="/api/docs" { "The API" } " accepts this session too (with its CSRF token for changes)." }
            }
        }
    };
    Ok(page(&viewer, "Overview", "/", body).into_response())
}
