//! The pieces every page shares: the head (stylesheet and script from play
//! itself), the frame of a page without a session, status badges, times.
//! The frame of a signed-in page is `frame`. Everything is rendered with
//! maud, which escapes every value: a tenant's `<script>` in a name, a
//! label or a log line is shown as text.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use sha2::{Digest, Sha256};

/// The stylesheet and the script, compiled into the binary.
pub const APP_CSS: &str = include_str!("assets/app.css");
pub const APP_JS: &str = include_str!("assets/app.js");

/// A short digest of both assets: their URLs carry it, so they can be
/// cached for good and a new build is fetched at once.
pub static ASSET_VERSION: LazyLock<String> = LazyLock::new(|| {
    let digest = Sha256::new().chain_update(APP_CSS).chain_update(APP_JS).finalize();
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
});

pub fn head(title: &str) -> Markup {
    let version = ASSET_VERSION.as_str();
    html! {
        meta charset="utf-8";
        meta name="viewport" content="width=device-width, initial-scale=1";
        meta name="color-scheme" content="light dark";
        title { (title) " · play" }
        link rel="stylesheet" href={ "/assets/app.css?v=" (version) };
        script src={ "/assets/app.js?v=" (version) } defer {}
    }
}

/// A page without navigation (sign-in, refusals).
pub fn bare_page(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { (head(title)) }
            body { main id="content" { (body) } }
        }
    }
}

/// A status word as a badge (colour and text: never colour alone).
pub fn badge(word: &str) -> Markup {
    html! { span class={ "badge s-" (word) } { (word.replace('_', " ")) } }
}

/// A moment, machine-readable, shown as how long ago.
pub fn ago(at: DateTime<Utc>) -> Markup {
    html! { time datetime=(at.to_rfc3339()) title=(at.format("%Y-%m-%d %H:%M:%S UTC")) { (since(at)) } }
}

/// `3m ago`, `2h ago`, `5d ago`.
pub fn since(at: DateTime<Utc>) -> String {
    let seconds = (Utc::now() - at).num_seconds().max(0);
    match seconds {
        s if s < 60 => format!("{s}s ago"),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s => format!("{}d ago", s / 86_400),
    }
}

/// Time left until `at`, counted down in the page by the script.
pub fn countdown(at: Option<DateTime<Utc>>) -> Markup {
    match at {
        None => html! { span.muted { "no expiry" } },
        Some(at) => {
            let left = (at - Utc::now()).num_seconds();
            let text = match left {
                l if l <= 0 => "expired".to_owned(),
                l if l >= 86_400 => format!("{}d {}h left", l / 86_400, l % 86_400 / 3600),
                l if l >= 3600 => format!("{}h {}m left", l / 3600, l % 3600 / 60),
                l => format!("{}m {}s left", l / 60, l % 60),
            };
            html! { time data-countdown datetime=(at.to_rfc3339()) { (text) } }
        }
    }
}

/// A notice above a page's content (after an action).
pub fn notice(text: Option<&str>) -> Markup {
    html! { @if let Some(text) = text { p.notice role="status" { (text) } } }
}

/// Nothing: for `@if` branches that render no markup.
pub fn nothing() -> Markup {
    PreEscaped(String::new())
}
