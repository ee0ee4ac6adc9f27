//! One-time sign-in links (`play login --web`, `POST /api/sign_in_links`).
//!
//! - `GET /sign-in/link/{secret}`: a page that asks to confirm, with the
//!   sign-in form's one-time token (`sign_in::form_nonce`). Opening the
//!   link uses nothing: a chat client or mail scanner that fetches links
//!   to preview them cannot spend it, and no page elsewhere can sign a
//!   visitor in by making the browser load it.
//! - `POST /sign-in/link`: from that page only (its token and cookie,
//!   `Sec-Fetch-Site`), rate limited per address as sign-in is; the link is
//!   spent (`play_store::sign_in_links::redeem`) and a session of its
//!   key starts.

use axum::extract::{Form, Path, State};
use axum::http::{Extensions, HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::html;
use play_store::sign_in_links;
use serde::Deserialize;

use super::layout::bare_page;
use super::sign_in::{form_nonce, from_own_form, over_limit, refused, start_session};
use crate::error::ApiError;
use crate::session;
use crate::state::AppState;

/// `GET /sign-in/link/{secret}`.
pub async fn confirm(State(state): State<AppState>, Path(secret): Path<String>) -> Result<Response, ApiError> {
    let (nonce, cookie) = form_nonce(state.config.secure_cookies);
    let body = bare_page(
        "Sign in",
        html! {
            h1 { "Sign in to play" }
            p { "This link signs this browser in with the API key that made it (" code { "play login --web" } "): its account and scopes, no more. It works once, within ten minutes." }
            p { "Only go on if you asked for this link yourself." }
            form method="post" action="/sign-in/link" {
                input type="hidden" name="csrf" value=(nonce);
                input type="hidden" name="secret" value=(secret);
                button.primary type="submit" autofocus { "Sign in" }
            }
        },
    );
    let mut response = body.into_response();
    response.headers_mut().append(header::SET_COOKIE, session::header_value(&cookie)?);
    // The secret is in this page's URL: never sent on as a referrer.
    response.headers_mut().insert(header::REFERRER_POLICY, header::HeaderValue::from_static("no-referrer"));
    Ok(response)
}

#[derive(Deserialize)]
pub struct Redeem {
    csrf: String,
    secret: String,
}

impl std::fmt::Debug for Redeem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redeem").finish_non_exhaustive()
    }
}

/// `POST /sign-in/link`.
pub async fn redeem(
    State(state): State<AppState>,
    extensions: Extensions,
    headers: HeaderMap,
    Form(form): Form<Redeem>,
) -> Result<Response, ApiError> {
    if !from_own_form(&headers, &form.csrf) {
        return Ok(refused(
            StatusCode::FORBIDDEN,
            "This sign-in did not come from play's own page (or the page expired): open the link again.",
        ));
    }
    if let Some(limited) = over_limit(&state, &extensions) {
        return Ok(limited);
    }
    match sign_in_links::redeem(&state.store, &state.pepper, &form.secret).await? {
        Some((key_id, account_id)) => start_session(&state, key_id, account_id, "/").await,
        None => Ok(refused(
            StatusCode::UNAUTHORIZED,
            "This link was used already, expired, or is unknown: run `play login --web` again for a new one.",
        )),
    }
}
