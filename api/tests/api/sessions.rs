//! Browser sessions over the real router and store: signing in through
//! the form, the API accepting the session cookie with its CSRF token on
//! every change, sign-out, the end of a session with its key, when idle
//! and when old, and the attacks on sign-in (a form posted from another
//! site, an open redirect, guessing keys); on HTTPS, the `__Host-` cookie
//! that a sibling subdomain cannot plant; log streams that end with their
//! session (issue #49, items 8, 9 and 11).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::browser::{
    Browser, post_form, post_form_from, session_cookie, set_cookie, set_cookie_header, sign_in_form,
};
use axum::body::{Body, BodyDataStream};
use axum::http::{Method, Request, StatusCode, header};
use futures::StreamExt;
use play_api::ApiConfig;
use play_api::testing::{NoHosts, TestApp};
use play_model::host::{ConnectionReport, HostError, HostGateway, HostTarget, LogLines};
use play_model::scopes::{Scope, ScopeSet};
use serde_json::json;
use tower::ServiceExt;

#[tokio::test]
async fn a_session_acts_with_its_key_needs_its_csrf_token_to_change_anything_and_ends_at_sign_out() {
    let app = TestApp::new().await;
    let scopes: ScopeSet = [Scope::PlayroomsRead].into_iter().collect();
    let key = app.key_for(app.account_id, scopes, None).await;
    let (csrf, form_cookie) = sign_in_form(&app).await;
    let done = post_form(
        &app,
        "/sign-in",
        &format!("play_sign_in={form_cookie}"),
        &[],
        &[("token", key.as_str()), ("csrf", csrf.as_str()), ("next", "/api/playrooms")],
    )
    .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.text);
    assert_eq!(done.headers[header::LOCATION], "/api/playrooms");
    let cookie = set_cookie_header(&done, "play_session").unwrap();
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=604800"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain HTTP here: {cookie}");

    let browser = Browser::sign_in(&app, &key).await;
    let listed = browser.request(&app, Method::GET, "/api/playrooms", None, false).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    // Its key's scopes, no more.
    let webhooks = browser.request(&app, Method::GET, "/api/webhook_endpoints", None, false).await;
    assert_eq!(webhooks.status, StatusCode::FORBIDDEN, "{}", webhooks.text);

    // A change without the CSRF token (what a form of another site sends)
    // is refused before anything; with it, the key's scopes decide.
    let body = json!({"api_key": {"label": "x", "scopes": ["playrooms:read"]}});
    let forged = browser.request(&app, Method::POST, "/api/keys", Some(body.clone()), false).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.text);
    assert!(forged.body["error"]["details"]["x-csrf-token"].is_array(), "{}", forged.text);
    let admin = Browser::sign_in(&app, &app.admin).await;
    let keys_before = app.count("api_keys").await;
    let forged = admin.request(&app, Method::POST, "/api/keys", Some(body.clone()), false).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.text);
    let mut wrong = admin.clone();
    wrong.csrf = browser.csrf.clone();
    let other_token = wrong.request(&app, Method::POST, "/api/keys", Some(body.clone()), true).await;
    assert_eq!(other_token.status, StatusCode::FORBIDDEN, "another session's token: {}", other_token.text);
    assert_eq!(app.count("api_keys").await, keys_before);
    let made = admin.request(&app, Method::POST, "/api/keys", Some(body), true).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);

    // A bearer key wins over a cookie: no CSRF token is asked of it.
    let both = axum::http::Request::builder()
        .method(Method::POST)
        .uri("/api/keys")
        .header(header::AUTHORIZATION, format!("Bearer {}", app.admin))
        .header(header::COOKIE, format!("play_session={}", browser.cookie))
        .header(header::CONTENT_TYPE, "application/json");
    let by_key = app
        .send(
            both.body(axum::body::Body::from(
                json!({"api_key": {"label": "y", "scopes": ["playrooms:read"]}}).to_string(),
            ))
            .unwrap(),
        )
        .await;
    assert_eq!(by_key.status, StatusCode::CREATED, "{}", by_key.text);

    // Sign-out needs the session's token, ends the session and clears the cookie.
    let cookies = format!("play_session={}", browser.cookie);
    let refused = post_form(&app, "/sign-out", &cookies, &[], &[("csrf", "nope")]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(browser.request(&app, Method::GET, "/api/playrooms", None, false).await.status, StatusCode::OK);
    let out = post_form(&app, "/sign-out", &cookies, &[], &[("csrf", browser.csrf.as_str())]).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER, "{}", out.text);
    assert!(set_cookie_header(&out, "play_session").unwrap().contains("Max-Age=0"));
    let after = browser.request(&app, Method::GET, "/api/playrooms", None, false).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED, "{}", after.text);
    assert_eq!(browser.request(&app, Method::GET, "/session", None, false).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_session_ends_with_its_key_and_when_idle_or_old() {
    let app = TestApp::new().await;
    let key = app.key_for(app.account_id, ScopeSet::all(), None).await;
    let browser = Browser::sign_in(&app, &key).await;
    let id = browser.request(&app, Method::GET, "/session", None, false).await.body["key_id"].as_i64().unwrap();
    let deleted = app.delete(&format!("/api/keys/{id}"), &app.admin).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    let after = browser.request(&app, Method::GET, "/api/playrooms", None, false).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED, "the key is gone, so is its session: {}", after.text);
    assert_eq!(app.count("sessions").await, 0, "and its row");

    let idle = Browser::sign_in(&app, &app.admin).await;
    let old = Browser::sign_in(&app, &app.admin).await;
    let pool = app.store().pool();
    let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM sessions ORDER BY id").fetch_all(pool).await.unwrap();
    sqlx::query("UPDATE sessions SET last_seen_at = '2000-01-01T00:00:00Z' WHERE id = $1")
        .bind(ids[0])
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("UPDATE sessions SET expires_at = '2000-01-01T00:00:00Z' WHERE id = $1")
        .bind(ids[1])
        .execute(pool)
        .await
        .unwrap();
    assert_eq!(idle.request(&app, Method::GET, "/api/playrooms", None, false).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(old.request(&app, Method::GET, "/api/playrooms", None, false).await.status, StatusCode::UNAUTHORIZED);
    let forged = Browser { cookie: "A".repeat(43), csrf: String::new() };
    assert_eq!(forged.request(&app, Method::GET, "/api/playrooms", None, false).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn sign_in_refuses_other_sites_forms_open_redirects_and_guessing() {
    let app = TestApp::new().await;
    let (csrf, form_cookie) = sign_in_form(&app).await;
    let cookies = format!("play_sign_in={form_cookie}");
    let fields = [("token", app.admin.as_str()), ("csrf", csrf.as_str())];

    // Login CSRF: a form on another site has neither the cookie (SameSite=Strict)
    // nor, in a browser, a same-origin Sec-Fetch-Site.
    let no_cookie = post_form(&app, "/sign-in", "", &[], &fields).await;
    assert_eq!(no_cookie.status, StatusCode::FORBIDDEN, "{}", no_cookie.text);
    let cross = post_form(&app, "/sign-in", &cookies, &[("sec-fetch-site", "cross-site")], &fields).await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN, "{}", cross.text);
    let other_token = [("token", app.admin.as_str()), ("csrf", "x")];
    assert_eq!(post_form(&app, "/sign-in", &cookies, &[], &other_token).await.status, StatusCode::FORBIDDEN);
    assert_eq!(app.count("sessions").await, 0);
    let form = app.request(Method::GET, "/sign-in", None, None).await;
    assert!(set_cookie_header(&form, "play_sign_in").unwrap().contains("SameSite=Strict"));
    let policy = form.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"), "{policy}");

    // `next` is a path of play, never another site.
    for next in ["//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"] {
        let mut with_next = fields.to_vec();
        with_next.push(("next", next));
        let done = post_form(&app, "/sign-in", &cookies, &[], &with_next).await;
        assert_eq!(
            (done.status, done.headers[header::LOCATION].to_str().unwrap()),
            (StatusCode::SEE_OTHER, "/"),
            "{next}"
        );
    }

    // A wrong key: the form again, one message, no session; then the
    // address is slowed down.
    let wrong = [("token", "play_nope"), ("csrf", csrf.as_str())];
    let refused = post_form(&app, "/sign-in", &cookies, &[], &wrong).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(refused.text.contains("That key was not accepted") && set_cookie(&refused, "play_session").is_none());
    let mut statuses = Vec::new();
    for _ in 0..12 {
        statuses.push(post_form(&app, "/sign-in", &cookies, &[], &wrong).await.status);
    }
    assert_eq!(statuses.last(), Some(&StatusCode::TOO_MANY_REQUESTS), "{statuses:?}");
    let limited = post_form(&app, "/sign-in", &cookies, &[], &fields).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS, "even the right key waits");
    assert!(limited.headers.contains_key(header::RETRY_AFTER));
}

/// A client at `ip`, as `play serve` sees it.
fn client(ip: &str) -> SocketAddr {
    SocketAddr::new(ip.parse().unwrap(), 40_000)
}

/// Issue #49, item 8: browsers drop tabs and newlines from a `Location`
/// and read `\` as `/`, so a `next` that hid a second slash behind one of
/// them (`/%09/elsewhere.example`) sent a signed-in person to another site.
#[tokio::test]
async fn sign_in_sends_the_browser_to_no_other_site_whatever_next_hides() {
    let app = TestApp::new().await;
    let hiding = [
        "/\t/elsewhere.example",
        "/\n/elsewhere.example",
        "/\r/elsewhere.example",
        "/\t\t/elsewhere.example/path?q=1",
        "\t//elsewhere.example",
        "/\u{0b}/elsewhere.example",
        "/\u{0}/elsewhere.example",
        "/\u{7f}/elsewhere.example",
        "/\u{85}/elsewhere.example",
        "/\\elsewhere.example",
        "/..//elsewhere.example",
        "/%2e%2e//elsewhere.example",
        "/./\t/elsewhere.example",
        " //elsewhere.example",
        "http:/elsewhere.example",
        "elsewhere.example",
    ];
    let admin = Browser::sign_in(&app, &app.admin).await;
    let issue = admin.request(&app, Method::GET, "/sign-in?next=/%09/elsewhere.example", None, false).await;
    assert_eq!((issue.status, issue.headers[header::LOCATION].to_str().unwrap()), (StatusCode::SEE_OTHER, "/"));
    for (n, next) in hiding.into_iter().enumerate() {
        let query = serde_urlencoded::to_string([("next", next)]).unwrap();
        let signed_in = admin.request(&app, Method::GET, &format!("/sign-in?{query}"), None, false).await;
        assert_eq!(
            (signed_in.status, signed_in.headers.get(header::LOCATION).and_then(|l| l.to_str().ok())),
            (StatusCode::SEE_OTHER, Some("/")),
            "signed in, {next:?}: {}",
            signed_in.text
        );
        let form = app.request(Method::GET, &format!("/sign-in?{query}"), None, None).await;
        assert_eq!(crate::support::browser::hidden(&form.text, "next"), "/", "the form's next, {next:?}");
        let (csrf, form_cookie) = sign_in_form(&app).await;
        let fields = [("token", app.admin.as_str()), ("csrf", csrf.as_str()), ("next", next)];
        // Each from its own address: sign-ins are limited per address.
        let from = client(&format!("192.0.2.{n}"));
        let posted = post_form_from(&app, from, "/sign-in", &format!("play_sign_in={form_cookie}"), &fields).await;
        assert_eq!(
            (posted.status, posted.headers.get(header::LOCATION).and_then(|l| l.to_str().ok())),
            (StatusCode::SEE_OTHER, Some("/")),
            "posted, {next:?}: {}",
            posted.text
        );
    }
    // A plain path of play keeps its query and fragment.
    for next in ["/playgrounds?q=a%20b&status=running", "/playgrounds/7#logs", "/api/playrooms", "/"] {
        let query = serde_urlencoded::to_string([("next", next)]).unwrap();
        let r = admin.request(&app, Method::GET, &format!("/sign-in?{query}"), None, false).await;
        assert_eq!((r.status, r.headers[header::LOCATION].to_str().unwrap()), (StatusCode::SEE_OTHER, next));
    }
}

/// Issue #49, item 9: an IPv6 client is given a /64 and picks any address
/// in it, so a limit per address let it guess keys without end.
#[tokio::test]
async fn sign_in_attempts_are_limited_per_ipv6_64_not_per_address() {
    let app = TestApp::new().await;
    let (csrf, form_cookie) = sign_in_form(&app).await;
    let cookies = format!("play_sign_in={form_cookie}");
    let wrong = [("token", "play_nope"), ("csrf", csrf.as_str())];
    let mut statuses = Vec::new();
    for n in 1..=12 {
        let from = client(&format!("2001:db8:1:2:{n:x}::{n:x}"));
        statuses.push(post_form_from(&app, from, "/sign-in", &cookies, &wrong).await.status);
    }
    assert_eq!(statuses.last(), Some(&StatusCode::TOO_MANY_REQUESTS), "{statuses:?}");
    let neighbour = post_form_from(&app, client("2001:db8:1:3::1"), "/sign-in", &cookies, &wrong).await;
    assert_eq!(neighbour.status, StatusCode::UNAUTHORIZED, "another /64 is another client");

    // IPv4 clients of a dual-stack socket arrive as `::ffff:a.b.c.d`: each
    // is its own client, the same as when it arrives as plain IPv4.
    for n in 1..=12 {
        let from = client(&format!("::ffff:192.0.2.{n}"));
        let r = post_form_from(&app, from, "/sign-in", &cookies, &wrong).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{from}");
    }
    for _ in 0..10 {
        post_form_from(&app, client("::ffff:198.51.100.7"), "/sign-in", &cookies, &wrong).await;
    }
    let plain = post_form_from(&app, client("198.51.100.7"), "/sign-in", &cookies, &wrong).await;
    assert_eq!(plain.status, StatusCode::TOO_MANY_REQUESTS, "{}", plain.text);
}

/// Issue #49, item 9: the sign-in limiter kept every address it ever saw.
/// Pruned as the API's is, an address is forgotten once its attempts no
/// longer count (governor keeps a state for twice the period).
#[tokio::test]
async fn the_sign_in_limiter_forgets_idle_addresses_when_pruned() {
    let app = TestApp::new().await;
    let (csrf, form_cookie) = sign_in_form(&app).await;
    let cookies = format!("play_sign_in={form_cookie}");
    let wrong = [("token", "play_nope"), ("csrf", csrf.as_str())];
    for from in ["192.0.2.1", "192.0.2.2", "2001:db8::1"] {
        post_form_from(&app, client(from), "/sign-in", &cookies, &wrong).await;
    }
    assert_eq!(app.state.sign_in_limiter.len(), 3);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        app.state.forget_idle_rate_limits();
        if app.state.sign_in_limiter.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "{} addresses kept after 30 s", app.state.sign_in_limiter.len());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Issue #49, item 11: a sibling subdomain may set a cookie for the whole
/// domain, so it could plant its own session under the old name; a
/// `__Host-` cookie can only come from play's own origin over HTTPS.
#[tokio::test]
async fn on_https_the_session_cookie_is_host_prefixed_and_one_planted_by_a_sibling_is_refused() {
    let app = TestApp::with_config(ApiConfig { secure_cookies: true, ..TestApp::default_config() }).await;
    let (csrf, form_cookie) = sign_in_form(&app).await;
    let fields = [("token", app.admin.as_str()), ("csrf", csrf.as_str()), ("next", "/")];
    let done = post_form(&app, "/sign-in", &format!("play_sign_in={form_cookie}"), &[], &fields).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.text);
    let cookie = set_cookie_header(&done, "__Host-play_session").expect("a __Host- session cookie");
    for attribute in ["Secure", "Path=/", "HttpOnly", "SameSite=Lax"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.to_ascii_lowercase().contains("domain"), "{cookie}");
    assert!(set_cookie(&done, "play_session").is_none(), "no cookie of the old name");
    let secret = set_cookie(&done, "__Host-play_session").unwrap();

    let with = |cookie: String| Request::builder().uri("/session").header(header::COOKIE, cookie).body(Body::empty());
    let own = app.send(with(format!("__Host-play_session={secret}")).unwrap()).await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.text);
    // What a sibling subdomain can set: the old name, for the whole domain.
    let planted = app.send(with(format!("play_session={secret}")).unwrap()).await;
    assert_eq!(planted.status, StatusCode::UNAUTHORIZED, "{}", planted.text);
    let request = Request::builder()
        .uri("/api/playrooms")
        .header(header::COOKIE, format!("play_session={secret}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.send(request).await.status, StatusCode::UNAUTHORIZED);

    let browser = Browser::sign_in(&app, &app.admin).await;
    let cookies = format!("__Host-play_session={}", browser.cookie);
    let out = post_form(&app, "/sign-out", &cookies, &[], &[("csrf", browser.csrf.as_str())]).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER, "{}", out.text);
    let cleared = set_cookie_header(&out, "__Host-play_session").expect("cleared by its own name");
    assert!(cleared.contains("Max-Age=0") && cleared.contains("Secure") && cleared.contains("Path=/"), "{cleared}");
}

/// A host whose every followed log writes a line every 100 ms until its
/// reader goes; `following` counts the follows still read.
#[derive(Debug, Default)]
struct EndlessLogs {
    following: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl HostGateway for EndlessLogs {
    async fn test_connection(&self, target: &HostTarget) -> ConnectionReport {
        NoHosts.test_connection(target).await
    }

    async fn service_logs(&self, _: &HostTarget, _: &str, _: usize) -> Result<Vec<String>, HostError> {
        Err(HostError::Unreachable("only follows here".into()))
    }

    async fn follow_logs(&self, _: &HostTarget, _: &str, _: usize, _: Duration) -> Result<LogLines, HostError> {
        let (lines, rx) = tokio::sync::mpsc::channel(8);
        let following = Arc::clone(&self.following);
        following.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = lines.closed() => break,
                    () = tokio::time::sleep(Duration::from_millis(100)) => {
                        let _ = lines.try_send(Ok("a line".into()));
                    }
                }
            }
            following.fetch_sub(1, Ordering::SeqCst);
        });
        Ok(rx)
    }
}

/// Follows `path` as `browser`: the event stream, after its first line.
async fn follow(app: &TestApp, browser: &Browser, path: &str) -> BodyDataStream {
    let request = Request::builder()
        .uri(path)
        .header(header::COOKIE, format!("{}={}", session_cookie(app), browser.cookie))
        .body(Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    if response.status() != StatusCode::OK {
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        panic!("{status}: {}", String::from_utf8_lossy(&body));
    }
    let mut body = response.into_body().into_data_stream();
    let first = tokio::time::timeout(Duration::from_secs(5), body.next()).await.expect("a line").unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("data: a line"), "{first:?}");
    body
}

/// The rest of an event stream; panics if it is still open after `within`.
async fn rest(body: &mut BodyDataStream, within: Duration, why: &str) -> String {
    let all = async {
        let mut text = String::new();
        while let Some(chunk) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        text
    };
    tokio::time::timeout(within, all).await.unwrap_or_else(|_| panic!("still streaming {within:?} after {why}"))
}

/// Issue #49, item 11: a followed log (up to an hour) ran on after its
/// session signed out or its key was deleted.
#[tokio::test]
async fn a_followed_log_ends_when_its_session_signs_out_or_its_key_is_deleted() {
    let host = Arc::new(EndlessLogs::default());
    let app = TestApp::with(TestApp::default_config(), host.clone()).await;
    let id = app.new_playground().await;
    let room = app.get(&format!("/api/playgrounds/{id}"), &app.admin).await.body["playroom_id"].clone();
    let keyed = app.post(&format!("/api/playrooms/{room}/generate_ssh_key"), &app.admin, json!({})).await;
    assert_eq!(keyed.status, StatusCode::OK, "{}", keyed.text);
    let path = format!("/api/playgrounds/{id}/logs/web?follow=true");
    let key = app.key_for(app.account_id, ScopeSet::all(), None).await;
    let leaving = Browser::sign_in(&app, &app.admin).await;
    let staying = Browser::sign_in(&app, &key).await;
    let mut left = follow(&app, &leaving, &path).await;
    let mut stays = follow(&app, &staying, &path).await;

    let cookies = format!("play_session={}", leaving.cookie);
    let out = post_form(&app, "/sign-out", &cookies, &[], &[("csrf", leaving.csrf.as_str())]).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER, "{}", out.text);
    let end = rest(&mut left, Duration::from_secs(10), "sign-out").await;
    assert!(end.contains("event: end") && end.contains("session"), "{end}");
    let more = tokio::time::timeout(Duration::from_secs(5), stays.next()).await.expect("the other session's lines");
    assert!(String::from_utf8_lossy(&more.unwrap().unwrap()).contains("a line"), "another session streams on");

    let key_id = staying.request(&app, Method::GET, "/session", None, false).await.body["key_id"].as_i64().unwrap();
    let deleted = app.delete(&format!("/api/keys/{key_id}"), &app.admin).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    let end = rest(&mut stays, Duration::from_secs(10), "its key was deleted").await;
    assert!(end.contains("event: end"), "{end}");
    let released = Instant::now() + Duration::from_secs(2);
    while host.following.load(Ordering::SeqCst) > 0 {
        assert!(Instant::now() < released, "the host's follows were released");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
