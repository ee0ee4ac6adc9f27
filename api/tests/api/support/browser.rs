//! A browser as far as play's pages can tell: it keeps cookies and signs
//! in through the real sign-in form (the form token cookie, the hidden
//! field), then calls the API with its session cookie and, when asked,
//! the session's CSRF token.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, header};
use play_api::testing::{Response, TestApp};
use serde_json::Value;

/// The session cookie's name as `app` sets it: `__Host-` prefixed when
/// play is served over HTTPS (spelled out here, not taken from the code,
/// so a changed name fails the tests).
pub fn session_cookie(app: &TestApp) -> &'static str {
    if app.state.config.secure_cookies { "__Host-play_session" } else { "play_session" }
}

/// A signed-in browser: its session cookie and the session's CSRF token.
#[derive(Clone, Debug)]
pub struct Browser {
    pub cookie: String,
    pub csrf: String,
}

/// The value of cookie `name` among a response's `Set-Cookie` headers.
pub fn set_cookie(response: &Response, name: &str) -> Option<String> {
    response
        .headers
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.strip_prefix(&format!("{name}=")).map(|rest| rest.split(';').next().unwrap_or("").to_owned()))
}

/// The whole `Set-Cookie` header of cookie `name`.
pub fn set_cookie_header(response: &Response, name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    response
        .headers
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&prefix))
        .map(str::to_owned)
}

/// The `value` of the hidden input `name` in a page.
pub fn hidden(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page.find(&marker).unwrap_or_else(|| panic!("no field {name} in {page}")) + marker.len();
    page[start..].split('"').next().unwrap().to_owned()
}

/// `GET /sign-in`: the form's token and its cookie.
pub async fn sign_in_form(app: &TestApp) -> (String, String) {
    let form = app.request(Method::GET, "/sign-in", None, None).await;
    assert_eq!(form.status, 200, "{}", form.text);
    (hidden(&form.text, "csrf"), set_cookie(&form, "play_sign_in").expect("the form sets its cookie"))
}

/// `POST /sign-in` of `fields` with `cookies` and extra `headers`.
pub async fn post_form(
    app: &TestApp,
    path: &str,
    cookies: &str,
    headers: &[(&str, &str)],
    fields: &[(&str, &str)],
) -> Response {
    app.send(form_request(path, cookies, headers, fields)).await
}

/// [`post_form`] from the client address `from` (what `play serve` gives
/// handlers as `ConnectInfo`).
pub async fn post_form_from(
    app: &TestApp,
    from: SocketAddr,
    path: &str,
    cookies: &str,
    fields: &[(&str, &str)],
) -> Response {
    let mut request = form_request(path, cookies, &[], fields);
    request.extensions_mut().insert(ConnectInfo(from));
    app.send(request).await
}

fn form_request(path: &str, cookies: &str, headers: &[(&str, &str)], fields: &[(&str, &str)]) -> Request<Body> {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::COOKIE, cookies);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let body = serde_urlencoded::to_string(fields).unwrap();
    builder.body(Body::from(body)).unwrap()
}

impl Browser {
    /// Signs in with `token` through the form; panics if refused.
    pub async fn sign_in(app: &TestApp, token: &str) -> Browser {
        let (csrf, form_cookie) = sign_in_form(app).await;
        let done = post_form(
            app,
            "/sign-in",
            &format!("play_sign_in={form_cookie}"),
            &[("sec-fetch-site", "same-origin")],
            &[("token", token), ("csrf", &csrf), ("next", "/")],
        )
        .await;
        assert_eq!(done.status, 303, "{}", done.text);
        let cookie = set_cookie(&done, session_cookie(app)).expect("a session cookie");
        let mut browser = Browser { cookie, csrf: String::new() };
        let session = browser.request(app, Method::GET, "/session", None, false).await;
        assert_eq!(session.status, 200, "{}", session.text);
        browser.csrf = session.body["csrf_token"].as_str().unwrap().to_owned();
        browser
    }

    /// A request with the session cookie, and the CSRF header when `csrf`.
    pub async fn request(
        &self,
        app: &TestApp,
        method: Method,
        path: &str,
        body: Option<Value>,
        csrf: bool,
    ) -> Response {
        let cookie = format!("{}={}", session_cookie(app), self.cookie);
        let mut builder = Request::builder().method(method).uri(path).header(header::COOKIE, cookie);
        if csrf {
            builder = builder.header("x-csrf-token", &self.csrf);
        }
        let body = match body {
            Some(json) => {
                builder = builder.header(header::CONTENT_TYPE, "application/json");
                Body::from(json.to_string())
            }
            None => Body::empty(),
        };
        app.send(builder.body(body).unwrap()).await
    }
}
