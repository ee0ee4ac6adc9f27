//! The dashboard's pages (issue #31), through the router as a browser
//! reaches them: each page only with a session and the scope its API
//! route needs; forms that change something only with the session's CSRF
//! token and from play's own pages; another account's Playground is a
//! 404 page; a key without the scope sees no button and its post is 403;
//! a deleted key ends its pages at once; tenant text is escaped; every
//! page carries the strict Content-Security-Policy. (In a real browser:
//! `tests/e2e/dashboard_browser_e2e.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use crate::support::browser::{Browser, post_form};
use axum::http::{Method, StatusCode, header};
use play_api::testing::{Response, TestApp};
use play_model::scopes::{Scope, ScopeSet};
use play_store::playgrounds;
use serde_json::json;

async fn page(app: &TestApp, browser: &Browser, path: &str) -> Response {
    let mut r = browser.request(app, Method::GET, path, None, false).await;
    if r.text.is_empty() {
        r.text = String::new();
    }
    r
}

async fn form(app: &TestApp, browser: &Browser, path: &str, site: &str, fields: &[(&str, &str)]) -> Response {
    let cookie = format!("play_session={}", browser.cookie);
    post_form(app, path, &cookie, &[("sec-fetch-site", site)], fields).await
}

fn scopes(list: &[Scope]) -> ScopeSet {
    list.iter().copied().collect()
}

#[tokio::test]
async fn pages_need_a_session_and_carry_a_strict_policy() {
    let app = TestApp::new().await;
    for path in ["/", "/playgrounds", "/launch", "/keys", "/playgrounds/1"] {
        let r = app.request(Method::GET, path, None, None).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{path}");
        let to = r.headers[header::LOCATION].to_str().unwrap();
        assert!(to.starts_with("/sign-in?next="), "{path} → {to}");
    }
    let admin = Browser::sign_in(&app, &app.admin).await;
    for path in
        ["/", "/playgrounds", "/launch", "/playrooms", "/playzones", "/playspecs", "/templates", "/webhooks", "/keys"]
    {
        let r = page(&app, &admin, path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text);
        let policy = r.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(policy.contains("default-src 'none'") && policy.contains("script-src 'self'"), "{policy}");
        assert!(
            !policy.contains("unsafe-inline") && !policy.contains("http"),
            "nothing inline, no other origin: {policy}"
        );
        assert_eq!(r.headers[header::CACHE_CONTROL], "no-store", "{path}");
        assert!(!r.text.contains("<script>") && !r.text.contains(" style="), "no inline script or style: {path}");
        assert!(!r.text.contains("http://") && !r.text.contains("https://"), "nothing from elsewhere: {path}");
    }
    // The assets are play's own, cached for good under a versioned URL.
    let css = app.request(Method::GET, "/assets/app.css", None, None).await;
    assert_eq!(css.status, StatusCode::OK);
    assert!(css.headers[header::CACHE_CONTROL].to_str().unwrap().contains("immutable"));
    // A browser asking for a page nothing serves gets a page; the API keeps its envelope.
    let lost = admin.request(&app, Method::GET, "/no-such-page", None, false).await;
    assert_eq!(lost.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn another_accounts_playground_is_a_404_page_and_its_actions_change_nothing() {
    let app = TestApp::new().await;
    let playground = app.new_playground().await;
    let other = app.new_account("other").await;
    let key = app.key_for(other, ScopeSet::all(), None).await;
    let stranger = Browser::sign_in(&app, &key).await;
    for path in [format!("/playgrounds/{playground}"), format!("/playgrounds/{playground}/destroy")] {
        let r = page(&app, &stranger, &path).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.text);
        assert!(r.text.contains("Not found"), "a clear page: {}", r.text);
        assert!(!r.text.contains("shop"), "nothing of it shows: {}", r.text);
    }
    let csrf = stranger.csrf.clone();
    let r =
        form(&app, &stranger, &format!("/playgrounds/{playground}/destroy"), "same-origin", &[("csrf", &csrf)]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    let p = playgrounds::get(app.store(), app.account_id, playground).await.unwrap();
    assert_eq!(p.status.as_str(), "in_progress", "untouched");
    assert!(!page(&app, &stranger, "/playgrounds").await.text.contains(&format!("/playgrounds/{playground}\"")));
}

#[tokio::test]
async fn a_reader_sees_no_buttons_and_its_posts_are_refused() {
    let app = TestApp::new().await;
    let playground = app.new_playground().await;
    let key = app.key_for(app.account_id, scopes(&[Scope::PlaygroundsRead]), None).await;
    let reader = Browser::sign_in(&app, &key).await;
    let detail = page(&app, &reader, &format!("/playgrounds/{playground}")).await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.text);
    for action in ["Destroy", "Extend", "Roll out", "Hard restart", "submit\">Sleep<"] {
        assert!(!detail.text.contains(action), "no {action} for a reader: {}", detail.text);
    }
    // The sections it may not read are not offered either.
    assert!(!detail.text.contains("href=\"/keys\"") && !detail.text.contains("href=\"/webhooks\""));
    let csrf = reader.csrf.clone();
    for action in ["destroy", "extend", "rollout", "hard_restart", "sleep", "wake"] {
        let r = form(&app, &reader, &format!("/playgrounds/{playground}/{action}"), "same-origin", &[("csrf", &csrf)])
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{action}: {}", r.text);
        assert!(r.text.contains("playgrounds:"), "names the scope it needs: {}", r.text);
    }
    let r = page(&app, &reader, "/keys").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    let p = playgrounds::get(app.store(), app.account_id, playground).await.unwrap();
    assert_eq!((p.status.as_str(), p.generation), ("in_progress", 1), "nothing changed");
}

#[tokio::test]
async fn forms_without_the_sessions_token_or_from_another_site_are_refused() {
    let app = TestApp::new().await;
    let playground = app.new_playground().await;
    let admin = Browser::sign_in(&app, &app.admin).await;
    let path = format!("/playgrounds/{playground}/destroy");
    // A form of another site: no token, or a token but the browser says cross-site.
    let no_token = form(&app, &admin, &path, "same-origin", &[("csrf", "")]).await;
    assert_eq!(no_token.status, StatusCode::FORBIDDEN, "{}", no_token.text);
    let cross = form(&app, &admin, &path, "cross-site", &[("csrf", admin.csrf.as_str())]).await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN, "{}", cross.text);
    let other = Browser::sign_in(&app, &app.admin).await;
    let wrong = form(&app, &admin, &path, "same-origin", &[("csrf", other.csrf.as_str())]).await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN, "another session's token: {}", wrong.text);
    let p = playgrounds::get(app.store(), app.account_id, playground).await.unwrap();
    assert_eq!(p.status.as_str(), "in_progress", "nothing destroyed");
    // With its own token, from its own page: done, and back to the list.
    let done = form(&app, &admin, &path, "same-origin", &[("csrf", admin.csrf.as_str())]).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.text);
    assert!(done.headers[header::LOCATION].to_str().unwrap().starts_with("/playgrounds?"));
    let p = playgrounds::get(app.store(), app.account_id, playground).await.unwrap();
    assert_eq!(p.status.as_str(), "destroying");
}

#[tokio::test]
async fn deleting_the_key_ends_its_pages_at_once() {
    let app = TestApp::new().await;
    let key = app.key_for(app.account_id, ScopeSet::all(), None).await;
    let browser = Browser::sign_in(&app, &key).await;
    assert_eq!(page(&app, &browser, "/playgrounds").await.status, StatusCode::OK);
    let keys = app.get("/api/keys", &app.admin).await;
    let id = keys.body.as_array().unwrap().iter().find(|k| k["id"] != 1).unwrap()["id"].as_i64().unwrap();
    assert_eq!(app.delete(&format!("/api/keys/{id}"), &app.admin).await.status, StatusCode::NO_CONTENT);
    let after = page(&app, &browser, "/playgrounds").await;
    assert_eq!(after.status, StatusCode::SEE_OTHER, "{}", after.text);
    assert!(after.headers[header::LOCATION].to_str().unwrap().starts_with("/sign-in"));
    let api = browser.request(&app, Method::GET, "/api/playgrounds", None, false).await;
    assert_eq!(api.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn tenant_text_is_escaped_everywhere_it_is_shown() {
    let app = TestApp::new().await;
    let attack = "<script>alert(1)</script><img src=x onerror=alert(2)>";
    let body = json!({"import_template": {"name": "evil", "description": attack, "category_id": 2}});
    let t = app.post("/api/import_templates", &app.admin, body).await;
    assert_eq!(t.status, StatusCode::CREATED, "{}", t.text);
    let id = t.body["id"].as_i64().unwrap();
    let version = json!({"template_body": format!("services:\n  web:\n    image: busybox\n    labels:\n      note: \"{attack}\"\n")});
    let v = app.post(&format!("/api/import_templates/{id}/create_version"), &app.admin, version).await;
    assert_eq!(v.status, StatusCode::CREATED, "{}", v.text);
    let admin = Browser::sign_in(&app, &app.admin).await;
    for path in ["/launch".to_owned(), "/templates".to_owned(), format!("/templates/{id}")] {
        let r = page(&app, &admin, &path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert!(!r.text.contains("<script>alert") && !r.text.contains("<img src=x"), "{path}: {}", r.text);
        assert!(r.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "shown as text on {path}");
    }
}

#[tokio::test]
async fn a_refused_compose_file_comes_back_with_its_problem_lines_marked() {
    let app = TestApp::new().await;
    let admin = Browser::sign_in(&app, &app.admin).await;
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "box", "host": "127.0.0.1"}})).await;
    let room = room.body["id"].as_i64().unwrap().to_string();
    let yaml = "services:\n  web:\n    image: busybox\n    privileged: true\n";
    let boundary = "XyZ";
    let mut body = String::new();
    // The textarea is left empty: the file uploaded with the form wins.
    let fields = [("csrf", admin.csrf.as_str()), ("name", "bad"), ("playroom_id", room.as_str()), ("compose_yaml", "")];
    for (name, value) in fields {
        body.push_str(&format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"));
    }
    body.push_str(&format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"compose_file\"; filename=\"compose.yaml\"\r\n\
         Content-Type: application/yaml\r\n\r\n{yaml}\r\n"
    ));
    body.push_str(&format!("--{boundary}--\r\n"));
    let request = axum::http::Request::builder()
        .method(Method::POST)
        .uri("/launch/compose")
        .header(header::COOKIE, format!("play_session={}", admin.cookie))
        .header(header::CONTENT_TYPE, format!("multipart/form-data; boundary={boundary}"))
        .body(axum::body::Body::from(body))
        .unwrap();
    let r = app.send(request).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.text.contains("compose-errors") && r.text.contains("privileged"), "{}", r.text);
    assert!(r.text.contains("class=\"flagged\""), "the line is marked: {}", r.text);
    assert_eq!(app.count("playspecs").await, 0, "nothing made");
}

#[tokio::test]
async fn a_sign_in_link_opens_one_session_of_its_key_after_a_confirmation() {
    let app = TestApp::new().await;
    let key = app.key_for(app.account_id, scopes(&[Scope::PlaygroundsRead]), None).await;
    let made = app.post("/api/sign_in_links", &key, json!({})).await;
    assert_eq!(made.status, StatusCode::CREATED, "any key may ask: {}", made.text);
    let path = made.body["path"].as_str().unwrap().to_owned();
    assert!(path.starts_with("/sign-in/link/"), "{path}");
    let secret = path.rsplit('/').next().unwrap().to_owned();

    // Opening the link spends nothing (a link previewer cannot use it up).
    for _ in 0..2 {
        let page = app.request(Method::GET, &path, None, None).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text);
        assert_eq!(page.headers[header::REFERRER_POLICY], "no-referrer");
        assert!(crate::support::browser::set_cookie(&page, "play_session").is_none(), "no session from a GET");
    }
    let page = app.request(Method::GET, &path, None, None).await;
    let nonce = crate::support::browser::hidden(&page.text, "csrf");
    let form_cookie = format!("play_sign_in={}", crate::support::browser::set_cookie(&page, "play_sign_in").unwrap());
    let fields = [("csrf", nonce.as_str()), ("secret", secret.as_str())];
    // A form of another site (no form cookie, or cross-site) is refused and spends nothing.
    let forged = post_form(&app, "/sign-in/link", "", &[], &fields).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.text);
    let cross = post_form(&app, "/sign-in/link", &form_cookie, &[("sec-fetch-site", "cross-site")], &fields).await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN, "{}", cross.text);

    let done = post_form(&app, "/sign-in/link", &form_cookie, &[("sec-fetch-site", "same-origin")], &fields).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.text);
    let cookie = crate::support::browser::set_cookie(&done, "play_session").unwrap();
    let browser = Browser { cookie, csrf: String::new() };
    // Exactly the key's scopes.
    assert_eq!(browser.request(&app, Method::GET, "/api/playgrounds", None, false).await.status, StatusCode::OK);
    assert_eq!(browser.request(&app, Method::GET, "/api/keys", None, false).await.status, StatusCode::FORBIDDEN);
    let again = post_form(&app, "/sign-in/link", &form_cookie, &[("sec-fetch-site", "same-origin")], &fields).await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED, "once: {}", again.text);
    // Without a key, no link.
    assert_eq!(app.request(Method::POST, "/api/sign_in_links", None, None).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_playgrounds_list_pages_and_filters_on_the_server() {
    let mut config = TestApp::default_config();
    config.quotas.set(play_model::model::quota::Resource::Playgrounds, 1000);
    let app = TestApp::with_config(config).await;
    let compose = "services:\n  web:\n    image: busybox\n";
    let spec = app
        .post("/api/playspecs", &app.admin, json!({"playspec": {"name": "shop", "base_compose_yaml": compose}}))
        .await;
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "box", "host": "127.0.0.1"}})).await;
    for n in 0..60 {
        let body = json!({"playground": {"name": format!("pg-{n}"), "playspec_id": spec.body["id"], "playroom_id": room.body["id"]}});
        assert_eq!(app.post("/api/playgrounds", &app.admin, body).await.status, StatusCode::CREATED);
    }
    let admin = Browser::sign_in(&app, &app.admin).await;
    let rows = |html: &str| html.matches("<tr><td class=\"name\"><a href=\"/playgrounds/").count();
    let first = page(&app, &admin, "/playgrounds").await;
    assert_eq!(rows(&first.text), 50, "a page of 50");
    assert!(first.text.contains("60 of 60 Playgrounds, page 1 of 2"), "{}", first.text);
    assert!(first.text.contains(">pg-59<") && !first.text.contains(">pg-9<"), "newest first");
    assert!(first.text.contains("rel=\"next\""));
    let second = page(&app, &admin, "/playgrounds?q=&status=&page=2").await;
    assert_eq!(rows(&second.text), 10);
    assert!(second.text.contains(">pg-0<") && second.text.contains("rel=\"prev\""));
    let beyond = page(&app, &admin, "/playgrounds?page=99").await;
    assert_eq!(rows(&beyond.text), 10, "a page past the end shows the last");
    let found = page(&app, &admin, "/playgrounds?q=PG-5&status=").await;
    assert_eq!(rows(&found.text), 11, "pg-5 and pg-50..59, case-insensitive");
    assert!(found.text.contains("11 of 60 Playgrounds."), "a filter still counts them all: {}", found.text);
    let none = page(&app, &admin, "/playgrounds?q=&status=running").await;
    assert_eq!(rows(&none.text), 0);
    assert!(none.text.contains("None matches."));
    // The live region alone, for the page's script.
    let live = page(&app, &admin, "/playgrounds?page=2&part=live").await;
    assert!(live.text.starts_with("<div id=\"playgrounds-live\""), "{}", &live.text[..80.min(live.text.len())]);
}

#[tokio::test]
async fn sleep_and_wake_from_the_detail_page() {
    let app = TestApp::new().await;
    let playground = app.new_playground().await;
    let admin = Browser::sign_in(&app, &app.admin).await;
    let path = format!("/playgrounds/{playground}");
    let detail = page(&app, &admin, &path).await;
    assert!(detail.text.contains("submit\">Sleep<") && !detail.text.contains("submit\">Wake<"), "{}", detail.text);
    assert!(detail.text.contains("id=\"sleep\""), "the sleep setting is shown: {}", detail.text);
    let done = form(&app, &admin, &format!("{path}/sleep"), "same-origin", &[("csrf", admin.csrf.as_str())]).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.text);
    let p = playgrounds::get(app.store(), app.account_id, playground).await.unwrap();
    assert_eq!(p.sleep.power.as_str(), "asleep");
    let detail = page(&app, &admin, &path).await;
    assert!(detail.text.contains("submit\">Wake<") && !detail.text.contains("submit\">Sleep<"), "{}", detail.text);
    let done = form(&app, &admin, &format!("{path}/wake"), "same-origin", &[("csrf", admin.csrf.as_str())]).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.text);
    let p = playgrounds::get(app.store(), app.account_id, playground).await.unwrap();
    assert_eq!(p.sleep.power.as_str(), "awake");
}

/// Issue #51, item 6: a failed Playground's page says at which step and why.
#[tokio::test]
async fn a_failed_playgrounds_page_shows_its_step_and_error() {
    let app = TestApp::new().await;
    let playground = app.new_playground().await;
    sqlx::query(
        "UPDATE playgrounds SET status = 'failed', error_step = 'image_build', error_message = $1 WHERE id = $2",
    )
    .bind("the Dockerfile's RUN step failed <exit 2>")
    .bind(playground)
    .execute(app.store().pool())
    .await
    .unwrap();
    let admin = Browser::sign_in(&app, &app.admin).await;
    let detail = page(&app, &admin, &format!("/playgrounds/{playground}")).await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.text);
    let shown = "Building Images: the Dockerfile&#39;s RUN step failed &lt;exit 2&gt;";
    let shown_alt = "Building Images: the Dockerfile's RUN step failed &lt;exit 2&gt;";
    assert!(detail.text.contains(shown) || detail.text.contains(shown_alt), "{}", detail.text);
    let api = app.get(&format!("/api/playgrounds/{playground}"), &app.admin).await;
    assert_eq!(api.body["error_step_label"], "Building Images", "{}", api.text);
    assert_eq!(api.body["error_message"], "the Dockerfile's RUN step failed <exit 2>", "{}", api.text);
}
