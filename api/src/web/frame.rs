//! The frame of a signed-in page: the navigation the session's scopes
//! allow, sign-out, and the session's CSRF field for forms.

use maud::{DOCTYPE, Markup, html};

use super::layout::head;
use super::viewer::Viewer;

/// The sections of the dashboard: path, label, and the API route whose
/// scope the section needs (its link is shown only with it).
const SECTIONS: &[(&str, &str, &str)] = &[
    ("/playgrounds", "Playgrounds", "/api/playgrounds"),
    ("/launch", "Launch", "/api/import_templates"),
    ("/playrooms", "Playrooms", "/api/playrooms"),
    ("/playzones", "Playzones", "/api/playzones"),
    ("/playspecs", "Playspecs", "/api/playspecs"),
    ("/templates", "Templates", "/api/import_templates"),
    ("/webhooks", "Webhooks", "/api/webhook_endpoints"),
    ("/keys", "API keys", "/api/keys"),
];

/// A page with the navigation; `current` is the section's path.
pub fn page(viewer: &Viewer, title: &str, current: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { (head(title)) }
            body {
                a.skip href="#content" { "Skip to content" }
                header.top {
                    a.brand href="/" aria-current=[(current == "/").then_some("page")] { "play" }
                    nav aria-label="Sections" {
                        ul {
                            @for (path, label, route) in SECTIONS {
                                @if viewer.may("GET", route) {
                                    li { a href=(path) aria-current=[(*path == current).then_some("page")] { (label) } }
                                }
                            }
                        }
                    }
                    form method="post" action="/sign-out" {
                        input type="hidden" name="csrf" value=(viewer.csrf);
                        button type="submit" { "Sign out" }
                    }
                }
                main id="content" tabindex="-1" { (body) }
            }
        }
    }
}

/// The hidden CSRF field of a form that changes something.
pub fn csrf_field(viewer: &Viewer) -> Markup {
    html! { input type="hidden" name="csrf" value=(viewer.csrf); }
}
