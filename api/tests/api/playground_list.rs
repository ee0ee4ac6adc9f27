//! `GET /api/playgrounds` with filters and pages, and compressed answers
//! (issue #52, item 7; `docs/playgrounds.md`).

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::io::Read;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use play_api::testing::TestApp;
use serde_json::{Value, json};

const COMPOSE: &str = "services:\n  web:\n    image: nginx:alpine\n";

/// An account with Playgrounds `pr-1`..`pr-5` on Playroom `a` (of
/// Playspec `one`) and `main` on Playroom `b` (of Playspec `two`); `pr-2`
/// is `running`: (app, ids of pr-1..pr-5 then main, Playspec two, Playroom b).
async fn world() -> (TestApp, Vec<i64>, i64, i64) {
    let app = TestApp::new().await;
    let spec = |name: &str| json!({"playspec": {"name": name, "base_compose_yaml": COMPOSE}});
    let one = app.post("/api/playspecs", &app.admin, spec("one")).await.body["id"].as_i64().unwrap();
    let two = app.post("/api/playspecs", &app.admin, spec("two")).await.body["id"].as_i64().unwrap();
    let room = |name: &str| json!({"playroom": {"name": name, "host": "127.0.0.1"}});
    let a = app.post("/api/playrooms", &app.admin, room("a")).await.body["id"].as_i64().unwrap();
    let b = app.post("/api/playrooms", &app.admin, room("b")).await.body["id"].as_i64().unwrap();
    let mut ids = Vec::new();
    for (name, spec, room) in
        [("pr-1", one, a), ("pr-2", one, a), ("pr-3", one, a), ("pr-4", one, a), ("pr-5", one, a), ("main", two, b)]
    {
        let body = json!({"playground": {"name": name, "playspec_id": spec, "playroom_id": room}});
        let r = app.post("/api/playgrounds", &app.admin, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        ids.push(r.body["id"].as_i64().unwrap());
    }
    sqlx::query("UPDATE playgrounds SET status = 'running' WHERE id = $1")
        .bind(ids[1])
        .execute(app.store().pool())
        .await
        .unwrap();
    (app, ids, two, b)
}

fn names(body: &Value) -> Vec<&str> {
    body.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn filters_combine_and_pages_say_the_rest() {
    let (app, _, two, b) = world().await;
    let get = async |query: &str| app.get(&format!("/api/playgrounds{query}"), &app.admin).await;
    let all = get("").await;
    assert_eq!(names(&all.body), ["pr-1", "pr-2", "pr-3", "pr-4", "pr-5", "main"]);
    assert!(all.headers.get("x-total-count").is_none(), "the contract's whole list: no page headers");
    assert_eq!(names(&get("?status=running").await.body), ["pr-2"]);
    assert_eq!(names(&get(&format!("?playspec_id={two}")).await.body), ["main"]);
    assert_eq!(names(&get(&format!("?playroom_id={b}&status=in_progress")).await.body), ["main"]);
    assert_eq!(names(&get("?name=pr-").await.body), ["pr-1", "pr-2", "pr-3", "pr-4", "pr-5"]);
    assert!(names(&get("?name=PR-").await.body).is_empty(), "a prefix, case as written");

    let page = get("?name=pr-&per_page=2&page=2").await;
    assert_eq!(names(&page.body), ["pr-3", "pr-4"]);
    assert_eq!(page.headers["x-total-count"], "5");
    let link = page.headers[header::LINK].to_str().unwrap();
    for rel in [
        "</api/playgrounds?name=pr-&per_page=2&page=1>; rel=\"first\"",
        "</api/playgrounds?name=pr-&per_page=2&page=1>; rel=\"prev\"",
        "</api/playgrounds?name=pr-&per_page=2&page=3>; rel=\"next\"",
        "</api/playgrounds?name=pr-&per_page=2&page=3>; rel=\"last\"",
    ] {
        assert!(link.contains(rel), "{rel} in {link}");
    }
    let last = get("?name=pr-&per_page=2&page=3").await;
    assert_eq!(names(&last.body), ["pr-5"]);
    assert!(!last.headers[header::LINK].to_str().unwrap().contains("rel=\"next\""));
    assert!(names(&get("?page=9").await.body).is_empty(), "past the end: an empty page");

    // Another account sees none of them, filters or not.
    let other = app.new_account("other").await;
    let key = app.key_for(other, play_model::scopes::ScopeSet::all(), None).await;
    assert!(names(&app.get(&format!("/api/playgrounds?playroom_id={b}"), &key).await.body).is_empty());
}

#[tokio::test]
async fn every_bad_parameter_is_refused_by_name() {
    let (app, _, _, _) = world().await;
    for (query, field) in [
        ("?status=asleep", "query.status"),
        ("?playroom_id=-1", "query.playroom_id"),
        ("?playspec_id=x", "query.playspec_id"),
        ("?trigger_id=0", "query.trigger_id"),
        ("?page=0", "query.page"),
        ("?per_page=501", "query.per_page"),
        ("?name=", "query.name"),
        ("?stauts=running", "query.stauts"),
        ("?status=running&status=failed", "query.status"),
        ("?name=%27%20OR%201%3D1%20--", ""),
    ] {
        let r = app.get(&format!("/api/playgrounds{query}"), &app.admin).await;
        if field.is_empty() {
            // SQL in a filter is a name like any other: nothing matches.
            assert_eq!((r.status, r.body.clone()), (StatusCode::OK, json!([])), "{query}");
            continue;
        }
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert!(details.get(field).is_some(), "{query}: {details}");
    }
}

#[tokio::test]
async fn json_of_a_kilobyte_or_more_is_gzipped_for_a_client_that_takes_it() {
    let (app, _, _, _) = world().await;
    let ask = |encoding: Option<&str>, path: &str| {
        let mut request = Request::get(path).header(header::AUTHORIZATION, format!("Bearer {}", app.admin));
        if let Some(encoding) = encoding {
            request = request.header(header::ACCEPT_ENCODING, encoding);
        }
        request.body(Body::empty()).unwrap()
    };
    let plain = app.send_raw(ask(None, "/api/playgrounds")).await;
    assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
    assert!(plain.body().len() >= 1024, "the list is over a kilobyte: {}", plain.body().len());
    assert_eq!(plain.headers()[header::VARY], "accept-encoding");

    let zipped = app.send_raw(ask(Some("gzip, br"), "/api/playgrounds")).await;
    assert_eq!(zipped.headers()[header::CONTENT_ENCODING], "gzip");
    assert!(zipped.body().len() < plain.body().len() / 2, "{} of {}", zipped.body().len(), plain.body().len());
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(&zipped.body()[..]).read_to_end(&mut text).unwrap();
    assert_eq!(text, plain.body().to_vec(), "the same JSON");

    let refused = app.send_raw(ask(Some("gzip;q=0"), "/api/playgrounds")).await;
    assert!(refused.headers().get(header::CONTENT_ENCODING).is_none());
    let small = app.send_raw(ask(Some("gzip"), "/healthz")).await;
    assert!(small.headers().get(header::CONTENT_ENCODING).is_none(), "small bodies are sent as they are");
}
