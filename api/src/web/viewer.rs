//! Who is looking at a page: the browser session, as the principal the API
//! would see for it, and what that principal may do.
//!
//! Every page but sign-in takes a [`Viewer`]. Without a live session the
//! browser is sent to `/sign-in?next=<this page>`. Pages reach the API
//! through [`Viewer::call`] (its router, in-process, authorised by the
//! route table as any request is); the few that read the store directly
//! check the same table first with [`Viewer::require`]; [`Viewer::may`]
//! decides whether to show a link or a button at all. Forms that change
//! something carry the session's CSRF token; [`Viewer::check_form`]
//! refuses them without it, and refuses a browser that says the request
//! came from another site.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::Value;

use super::api::{Answer, InProcess};
use super::failure::Failure;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::route_scopes::required_scope;
use crate::session;
use crate::state::AppState;

/// A signed-in browser session.
#[derive(Clone, Debug)]
pub struct Viewer {
    pub principal: Principal,
    /// The session's CSRF token, for the forms of the page.
    pub csrf: String,
    api: InProcess,
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        match session::current(state, &parts.headers).await {
            Ok(Some((found, secret))) => {
                let api = parts.extensions.get::<InProcess>().cloned().ok_or_else(|| {
                    let missing = play_core::Error::Internal("the pages have no API router".into());
                    Failure::from(missing).into_response()
                })?;
                let principal = crate::auth::limited(state, Principal::of_session(&found))
                    .map_err(|e| Failure::from(e).into_response())?;
                Ok(Viewer { principal, csrf: session::csrf_token(&state.pepper, &secret), api })
            }
            Ok(None) => {
                let here = parts.uri.path_and_query().map_or("/", |p| p.as_str());
                let query = serde_urlencoded::to_string([("next", here)]).unwrap_or_default();
                Err(Redirect::to(&format!("/sign-in?{query}")).into_response())
            }
            Err(e) => Err(Failure::from(e).into_response()),
        }
    }
}

impl Viewer {
    /// `method path` of the API as this session; a refusal is a
    /// [`Failure`] with the API's envelope.
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Result<Answer, Failure> {
        self.api.call(&self.principal, method, path, body).await
    }

    /// `GET path` of the API: its JSON.
    pub async fn get(&self, path: &str) -> Result<Value, Failure> {
        Ok(self.call(Method::GET, path, None).await?.body)
    }

    /// Whether the session's scopes grant what the API route
    /// `method route` needs (a path template of the route table).
    pub fn may(&self, method: &str, route: &str) -> bool {
        required_scope(method, route).is_some_and(|scope| self.principal.scopes.grants(scope))
    }

    /// [`Viewer::may`], or the API's own 403 for the route.
    pub fn require(&self, method: &str, route: &str) -> Result<(), Failure> {
        match required_scope(method, route) {
            Some(scope) if self.principal.scopes.grants(scope) => Ok(()),
            Some(scope) => Err(crate::auth::forbidden(scope).into()),
            None => {
                Err(ApiError::Core(play_core::Error::Internal(format!("no scope declared for {method} {route}")))
                    .into())
            }
        }
    }

    /// Refuses a form without the session's CSRF token, or one a browser
    /// says was sent from another site.
    pub fn check_form(&self, headers: &HeaderMap, given: &str) -> Result<(), Failure> {
        let cross_site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|site| !matches!(site, "same-origin" | "none"));
        if cross_site || !play_model::token::digests_match(&self.csrf, given) {
            return Err(Failure::from(ApiError::forbidden(
                "this form did not come from play's own page (or the session changed): open the page again",
                [("csrf".to_owned(), vec!["must be the session's CSRF token".to_owned()])].into(),
            )));
        }
        Ok(())
    }
}
