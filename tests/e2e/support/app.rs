//! Set-up through the in-process API (`play_api::testing::TestApp`) for
//! the tests that build their own API rather than a [`super::world::World`].

use axum::http::StatusCode;
use play_api::testing::TestApp;
use serde_json::{Value, json};

/// Through `app`'s admin key: a Playroom from `playroom` (a create body),
/// a Playspec of `compose` and a Playground on both, the last two named
/// `name`. Each must be created: (the Playroom, the Playground's detail).
pub async fn create_playground(app: &TestApp, playroom: Value, name: &str, compose: &str) -> (Value, Value) {
    let created = |what: &str, r: &play_api::testing::Response| {
        assert_eq!(r.status, StatusCode::CREATED, "{what}: {}", r.text);
    };
    let room = app.post("/api/playrooms", &app.admin, playroom).await;
    created("the Playroom", &room);
    let spec = json!({"playspec": {"name": name, "base_compose_yaml": compose}});
    let spec = app.post("/api/playspecs", &app.admin, spec).await;
    created("the Playspec", &spec);
    let pg = json!({"playground": {"name": name, "playspec_id": spec.body["id"], "playroom_id": room.body["id"]}});
    let pg = app.post("/api/playgrounds", &app.admin, pg).await;
    created("the Playground", &pg);
    (room.body, pg.body)
}
