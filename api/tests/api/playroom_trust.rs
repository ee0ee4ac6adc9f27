//! Finding 3 of issue #10: `trusted` lifts the Compose policy, so only the
//! operator's `playrooms:trust` scope may set it, a local Playroom can
//! never be trusted, and who set it is recorded.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::{Method, StatusCode};
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};
use play_model::ssh_keys;
use serde_json::json;

async fn patch(app: &TestApp, id: i64, token: &str, fields: serde_json::Value) -> play_api::testing::Response {
    app.request(Method::PATCH, &format!("/api/playrooms/{id}"), Some(token), Some(json!({"playroom": fields}))).await
}

#[tokio::test]
async fn a_tenant_key_cannot_trust_a_playroom() {
    let app = TestApp::new().await;
    // Every tenant scope (`all` in a list), playrooms:manage included.
    let tenant = app.key_for(app.account_id, ScopeSet::parse_list("all").unwrap(), None).await;
    let before = app.count("playrooms").await;
    let r = app.post("/api/playrooms", &tenant, json!({"playroom": {"name": "x", "host": "h", "trusted": true}})).await;
    let details = r.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert!(details["playroom.trusted"][0].as_str().unwrap().contains("playrooms:trust"), "{}", r.text);
    assert_eq!(app.count("playrooms").await, before, "nothing recorded");

    let r = app.post("/api/playrooms", &tenant, json!({"playroom": {"name": "x", "host": "h"}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["id"].as_i64().unwrap();
    patch(&app, id, &tenant, json!({"trusted": true})).await.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    let detail = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!(detail.body["trusted"], false);

    // A key cannot hand itself the scope either.
    let r = app.post("/api/keys", &tenant, json!({"api_key": {"label": "up", "scopes": ["playrooms:trust"]}})).await;
    r.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
}

#[tokio::test]
async fn the_operator_trusts_and_it_is_recorded() {
    let app = TestApp::new().await;
    let operator_scopes: ScopeSet =
        [Scope::PlayroomsWrite, Scope::PlayroomsRead, Scope::PlayroomsTrust].into_iter().collect();
    let operator = app.key_for(app.account_id, operator_scopes, None).await;
    let tenant = app.key_for(app.account_id, ScopeSet::parse_list("all").unwrap(), None).await;
    let r =
        app.post("/api/playrooms", &operator, json!({"playroom": {"name": "x", "host": "h", "trusted": true}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["id"].as_i64().unwrap();
    assert_eq!(r.body["trusted"], true);
    assert!(r.body["trusted_at"].is_string(), "{}", r.text);
    let operator_key = r.body["trusted_by_key_id"].as_i64().expect("who trusted it");

    // The audit trail: the event of the change names the key (the row
    // keeps actor and metadata for every entity; the webhook payload shows
    // them for Playgrounds only, as the spec says).
    let row = sqlx::query(
        "SELECT actor_id, metadata FROM events WHERE entity_type = 'playroom' AND entity_id = $1 AND action = 'created'",
    )
    .bind(id)
    .fetch_one(app.store().pool())
    .await
    .unwrap();
    use sqlx::Row as _;
    assert_eq!(row.try_get::<Option<i64>, _>("actor_id").unwrap(), Some(operator_key));
    let metadata: serde_json::Value = serde_json::from_str(&row.try_get::<String, _>("metadata").unwrap()).unwrap();
    assert_eq!(metadata["trusted"], true);

    // Anyone who may write may lift trust: that only narrows what runs.
    let r = patch(&app, id, &tenant, json!({"trusted": false})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!((r.body["trusted"].as_bool(), r.body["trusted_by_key_id"].as_i64()), (Some(false), None));
}

#[tokio::test]
async fn a_local_playroom_can_never_be_trusted() {
    let app =
        TestApp::with_config(play_api::ApiConfig { allow_local_playrooms: true, ..TestApp::default_config() }).await;
    // Even the admin credential, which holds playrooms:trust.
    let r = app
        .post(
            "/api/playrooms",
            &app.admin,
            json!({"playroom": {"name": "here", "connection": "local", "trusted": true}}),
        )
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["playroom.trusted"][0].as_str().unwrap().contains("local"), "{}", r.text);

    let r = app
        .post("/api/playrooms", &app.admin, json!({"playroom": {"name": "ssh", "host": "h", "trusted": true}}))
        .await;
    let id = r.body["id"].as_i64().unwrap();
    let r = patch(&app, id, &app.admin, json!({"connection": "local"})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let r = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "l", "connection": "local"}})).await;
    let local = r.body["id"].as_i64().unwrap();
    patch(&app, local, &app.admin, json!({"trusted": true}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
}

/// Issue #27, item 3: trust is a statement about one Docker host. A
/// tenant key that moves a trusted Playroom (to a host it controls, or to
/// another socket on the same host) must not carry the operator's trust
/// with it; the operator's own move keeps it.
#[tokio::test]
async fn moving_a_trusted_playroom_clears_trust_without_the_operator_scope() {
    let app = TestApp::new().await;
    let operator_scopes: ScopeSet =
        [Scope::PlayroomsWrite, Scope::PlayroomsRead, Scope::PlayroomsTrust].into_iter().collect();
    let operator = app.key_for(app.account_id, operator_scopes, None).await;
    let tenant = app.key_for(app.account_id, ScopeSet::parse_list("all").unwrap(), None).await;
    let moves = [
        json!({"host": "attacker.example"}),
        json!({"port": 2200}),
        json!({"user": "other"}),
        json!({"docker_socket": "/run/user/1000/docker.sock"}),
    ];
    for (n, change) in moves.iter().enumerate() {
        let body = json!({"playroom": {"name": format!("room{n}"), "host": "h", "trusted": true}});
        let r = app.post("/api/playrooms", &operator, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let id = r.body["id"].as_i64().unwrap();

        // A change that keeps the host keeps trust, whoever makes it.
        let r = patch(&app, id, &tenant, json!({"tutorial": true})).await;
        assert_eq!(r.body["trusted"], true, "{}", r.text);

        let r = patch(&app, id, &tenant, change.clone()).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(r.body["trusted"], false, "{change}: {}", r.text);
        assert!(r.body["trusted_at"].is_null() && r.body["trusted_by_key_id"].is_null(), "{}", r.text);
        let metadata = last_update_metadata(&app, id).await;
        assert_eq!(metadata["trusted"], json!({"from": true, "to": false}), "{metadata}");
        assert!(metadata["trust_cleared"].as_str().unwrap().contains("playrooms:trust"), "{metadata}");
    }

    // The operator may move a trusted Playroom and keep it trusted.
    let r =
        app.post("/api/playrooms", &operator, json!({"playroom": {"name": "op", "host": "h", "trusted": true}})).await;
    let id = r.body["id"].as_i64().unwrap();
    let r = patch(&app, id, &operator, json!({"host": "h2"})).await;
    assert_eq!((r.status, r.body["trusted"].as_bool()), (StatusCode::OK, Some(true)), "{}", r.text);
}

/// The same attack through server-side apply: a tenant's manifest that
/// re-targets a trusted Playroom gets it untrusted.
#[tokio::test]
async fn apply_moving_a_trusted_playroom_clears_trust_without_the_operator_scope() {
    let app = TestApp::new().await;
    let room = |host: &str, trusted: bool| {
        let mut spec = json!({"host": host, "port": 2222});
        if trusted {
            spec["trusted"] = json!(true);
        }
        json!({"objects": [{"apiVersion": "play/v1", "kind": "Playroom", "metadata": {"name": "box"}, "spec": spec}]})
    };
    let r = app.post("/api/apply", &app.admin, room("127.0.0.1", true)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let tenant = app.key_for(app.account_id, ScopeSet::parse_list("all").unwrap(), None).await;
    let r = app.post("/api/apply", &tenant, room("attacker.example", false)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let list = app.get("/api/playrooms", &app.admin).await;
    let room = list.body.as_array().unwrap().iter().find(|p| p["name"] == "box").unwrap().clone();
    let detail = app.get(&format!("/api/playrooms/{}", room["id"]), &app.admin).await;
    assert_eq!(
        (detail.body["host"].as_str(), detail.body["trusted"].as_bool()),
        (Some("attacker.example"), Some(false))
    );
}

/// Issue #49, item 10: a pinned host key names one machine, and the SSH
/// key decides which account (and `authorized_keys` entry) on it play
/// speaks as. A tenant key that re-pins a trusted Playroom (another host
/// key, or none, which lets the next contact pin whatever answers) or
/// replaces its SSH key has made it another machine: trust goes, as on a
/// move. Giving the same key again (in another notation too) is no change.
#[tokio::test]
async fn repinning_a_trusted_playroom_clears_trust_without_the_operator_scope() {
    let app = TestApp::new().await;
    let operator = operator(&app).await;
    let tenant = app.key_for(app.account_id, ScopeSet::parse_list("all").unwrap(), None).await;
    let pinned = ssh_keys::generate_ed25519("host").unwrap().public_openssh;
    let client = ssh_keys::generate_ed25519("client").unwrap().private_openssh;
    let other_host = ssh_keys::generate_ed25519("other host").unwrap().public_openssh;
    let other_client = ssh_keys::generate_ed25519("other client").unwrap().private_openssh;
    let repins = [
        ("host_key", json!({"host_key": other_host})),
        ("host_key", json!({"host_key": null})),
        ("ssh_private_key", json!({"ssh_private_key": other_client})),
    ];
    for (n, (what, change)) in repins.iter().enumerate() {
        let body = json!({"playroom": {"name": format!("room{n}"), "host": "h", "trusted": true,
            "host_key": pinned, "ssh_private_key": client}});
        let r = app.post("/api/playrooms", &operator, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let id = r.body["id"].as_i64().unwrap();

        // The same keys again, the pin as its fingerprint: the same machine.
        let fingerprint = ssh_keys::public_key_fingerprint(&pinned).unwrap();
        for same in [json!({"host_key": pinned}), json!({"host_key": fingerprint}), json!({"ssh_private_key": client})]
        {
            let r = patch(&app, id, &tenant, same.clone()).await;
            assert_eq!((r.status, r.body["trusted"].as_bool()), (StatusCode::OK, Some(true)), "{same}: {}", r.text);
        }

        let r = patch(&app, id, &tenant, change.clone()).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(r.body["trusted"], false, "{change}: {}", r.text);
        assert!(r.body["trusted_at"].is_null() && r.body["trusted_by_key_id"].is_null(), "{}", r.text);
        let metadata = last_update_metadata(&app, id).await;
        assert_eq!(metadata["trusted"], json!({"from": true, "to": false}), "{metadata}");
        let reason = metadata["trust_cleared"].as_str().unwrap();
        assert!(reason.contains("playrooms:trust") && reason.contains(what), "{metadata}");
    }

    // The operator may re-pin and re-key a trusted Playroom and keep it trusted.
    let body = json!({"playroom": {"name": "op", "host": "h", "trusted": true, "host_key": pinned}});
    let id = app.post("/api/playrooms", &operator, body).await.body["id"].as_i64().unwrap();
    for change in [json!({"host_key": other_host}), json!({"host_key": null}), json!({"ssh_private_key": other_client})]
    {
        let r = patch(&app, id, &operator, change.clone()).await;
        assert_eq!((r.status, r.body["trusted"].as_bool()), (StatusCode::OK, Some(true)), "{change}: {}", r.text);
    }
}

/// `generate_ssh_key` replaces the SSH key too: a tenant key's new pair
/// untrusts the Playroom, the operator's keeps it trusted.
#[tokio::test]
async fn generating_a_new_ssh_key_clears_trust_without_the_operator_scope() {
    let app = TestApp::new().await;
    let operator = operator(&app).await;
    let tenant = app.key_for(app.account_id, ScopeSet::parse_list("all").unwrap(), None).await;
    let r =
        app.post("/api/playrooms", &operator, json!({"playroom": {"name": "x", "host": "h", "trusted": true}})).await;
    let id = r.body["id"].as_i64().unwrap();

    let r = app.post(&format!("/api/playrooms/{id}/generate_ssh_key"), &operator, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let detail = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!(detail.body["trusted"], true, "{}", detail.text);

    let r = app.post(&format!("/api/playrooms/{id}/generate_ssh_key"), &tenant, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let detail = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert_eq!(
        (
            detail.body["trusted"].as_bool(),
            detail.body["trusted_at"].as_str(),
            detail.body["trusted_by_key_id"].as_i64()
        ),
        (Some(false), None, None),
        "{}",
        detail.text
    );
    let metadata = last_update_metadata(&app, id).await;
    assert_eq!(metadata["trusted"], json!({"from": true, "to": false}), "{metadata}");
    assert!(metadata["trust_cleared"].as_str().unwrap().contains("ssh_private_key"), "{metadata}");
}

/// The same attack through server-side apply: a tenant's manifest that
/// gives a trusted Playroom another host key or SSH key gets it untrusted.
#[tokio::test]
async fn apply_repinning_a_trusted_playroom_clears_trust_without_the_operator_scope() {
    let app = TestApp::new().await;
    let tenant = app.key_for(app.account_id, ScopeSet::parse_list("all").unwrap(), None).await;
    let pinned = ssh_keys::generate_ed25519("host").unwrap().public_openssh;
    let client = ssh_keys::generate_ed25519("client").unwrap().private_openssh;
    let changes = [
        json!({"host_key": ssh_keys::generate_ed25519("other host").unwrap().public_openssh}),
        json!({"ssh_private_key": ssh_keys::generate_ed25519("other client").unwrap().private_openssh}),
    ];
    for (n, change) in changes.iter().enumerate() {
        let name = format!("box{n}");
        let manifest = |spec: serde_json::Value| json!({"objects": [{"apiVersion": "play/v1", "kind": "Playroom", "metadata": {"name": name}, "spec": spec}]});
        let spec = json!({"host": "127.0.0.1", "host_key": pinned, "ssh_private_key": client});
        let mut trusted = spec.clone();
        trusted["trusted"] = json!(true);
        let r = app.post("/api/apply", &app.admin, manifest(trusted)).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let mut repinned = spec.clone();
        for (key, value) in change.as_object().unwrap() {
            repinned[key] = value.clone();
        }
        let r = app.post("/api/apply", &tenant, manifest(repinned)).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let list = app.get("/api/playrooms", &app.admin).await;
        let room = list.body.as_array().unwrap().iter().find(|p| p["name"] == name.as_str()).unwrap().clone();
        let detail = app.get(&format!("/api/playrooms/{}", room["id"]), &app.admin).await;
        assert_eq!(detail.body["trusted"], false, "{change}: {}", detail.text);
    }
}

/// The pin a first contact writes (trust on first use) does not touch
/// trust: it is the machine at the address the operator trusted, and a
/// pin can only be empty on a trusted Playroom by the operator's own act
/// (a tenant's clearing of it untrusts the Playroom, above).
#[tokio::test]
async fn the_first_contact_pin_keeps_trust() {
    let app = TestApp::new().await;
    let operator = operator(&app).await;
    let r =
        app.post("/api/playrooms", &operator, json!({"playroom": {"name": "x", "host": "h", "trusted": true}})).await;
    let id = r.body["id"].as_i64().unwrap();
    let key = ssh_keys::generate_ed25519("host").unwrap().public_openssh;
    let pin = play_store::playroom_checks::pin_first_contact(app.store(), id, &key).await.unwrap();
    assert!(pin.is_some());
    let detail = app.get(&format!("/api/playrooms/{id}"), &app.admin).await;
    assert!(detail.body["host_key"].is_string(), "{}", detail.text);
    assert_eq!(detail.body["trusted"], true, "{}", detail.text);
}

async fn operator(app: &TestApp) -> String {
    let scopes: ScopeSet = [Scope::PlayroomsWrite, Scope::PlayroomsRead, Scope::PlayroomsManage, Scope::PlayroomsTrust]
        .into_iter()
        .collect();
    app.key_for(app.account_id, scopes, None).await
}

async fn last_update_metadata(app: &TestApp, id: i64) -> serde_json::Value {
    use sqlx::Row as _;
    let row = sqlx::query(
        "SELECT metadata FROM events WHERE entity_type = 'playroom' AND entity_id = $1 AND action = 'updated' \
         ORDER BY id DESC LIMIT 1",
    )
    .bind(id)
    .fetch_one(app.store().pool())
    .await
    .unwrap();
    serde_json::from_str(&row.try_get::<String, _>("metadata").unwrap()).unwrap()
}
