//! Playzones on ssh URLs over the real router and store (issue #52, item
//! 2): both spellings accepted and made without credentials; a deploy key
//! generated (its private half never answered, never in an event) or given
//! in `credentials`; the host key pinned once and settable; a key and a
//! pin that never follow the URL to another host; every refusal with the
//! attack itself.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::repository::Reach;
use play_model::scopes::{Scope, ScopeSet};
use play_model::ssh_keys::generate_ed25519;
use play_store::{events, playzone_access, playzone_ssh};
use serde_json::{Value, json};

use crate::playzones::{create, patch};

const SSH_URL: &str = "git@git.example.org:team/app.git";

async fn reach(app: &TestApp, id: i64) -> Reach {
    playzone_access::access(app.store(), &app.state.secrets, id).await.unwrap().reach
}

async fn everything_said(app: &TestApp, id: i64) -> String {
    let events = events::list_for_account(app.store(), app.account_id).await.unwrap();
    let detail = app.get(&format!("/api/playzones/{id}"), &app.admin).await.text;
    format!("{detail}{}", serde_json::to_string(&events.iter().map(|e| &e.metadata).collect::<Vec<_>>()).unwrap())
}

#[tokio::test]
async fn a_generated_deploy_key_is_shown_by_its_public_half_only() {
    let app = TestApp::new().await;
    for url in [SSH_URL, "ssh://git@git.example.org:2222/team/other.git"] {
        let zone =
            create(&app, json!({"name": url.replace(['@', ':', '/', '.'], "-"), "scm_url": url, "private": true}))
                .await;
        assert_eq!(
            (zone["scm_url"].as_str(), &zone["has_credentials"], &zone["ssh_public_key"]),
            (Some(url), &json!(false), &Value::Null)
        );
    }
    let id = app.get("/api/playzones", &app.admin).await.body[0]["id"].as_i64().unwrap();
    // Without a key nothing is dialled, and the reason says what to do.
    let Reach::Lost(why) = reach(&app, id).await else { panic!("no key yet: nothing to dial") };
    assert!(why.contains(&format!("/api/playzones/{id}/generate_ssh_key")), "{why}");

    let r = app.post(&format!("/api/playzones/{id}/generate_ssh_key"), &app.admin, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let public = r.body["ssh_public_key"].as_str().unwrap().to_owned();
    assert!(public.starts_with("ssh-ed25519 ") && r.body["fingerprint"].as_str().unwrap().starts_with("SHA256:"));
    assert_eq!(r.body.as_object().unwrap().len(), 3, "id, ssh_public_key, fingerprint: {}", r.body);
    let detail = app.get(&format!("/api/playzones/{id}"), &app.admin).await.body;
    assert_eq!((&detail["ssh_public_key"], &detail["has_credentials"]), (&json!(public), &json!(true)));
    let Reach::Ssh(access) = reach(&app, id).await else { panic!("reached with the key") };
    assert_eq!(play_model::playzone::ssh::public_half(&access.private_key_openssh).as_deref(), Some(public.as_str()));
    let said = everything_said(&app, id).await;
    assert!(!said.contains("PRIVATE KEY") && !said.contains(access.private_key_openssh.lines().nth(1).unwrap()));

    // A new key replaces it; a reader may not make one.
    let again = app.post(&format!("/api/playzones/{id}/generate_ssh_key"), &app.admin, json!({})).await;
    assert_ne!(again.body["ssh_public_key"], json!(public));
    let reader = app.key_for(app.account_id, [Scope::PlayzonesRead].into_iter().collect::<ScopeSet>(), None).await;
    let r = app.post(&format!("/api/playzones/{id}/generate_ssh_key"), &reader, json!({})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    let stranger = app.key_for(app.new_account("them").await, ScopeSet::all(), None).await;
    let r = app.post(&format!("/api/playzones/{id}/generate_ssh_key"), &stranger, json!({})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);

    // An https Playzone takes a token, not a key.
    let https = create(&app, json!({"name": "web", "scm_url": "https://git.example.org/team/web.git"})).await;
    let r = app.post(&format!("/api/playzones/{}/generate_ssh_key", https["id"]), &app.admin, json!({})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
}

#[tokio::test]
async fn a_key_in_credentials_a_pin_and_a_move_to_another_host() {
    let app = TestApp::new().await;
    let pair = generate_ed25519("given").unwrap();
    let zone = create(&app, json!({"name": "app", "scm_url": SSH_URL, "credentials": pair.private_openssh})).await;
    let id = zone["id"].as_i64().unwrap();
    assert_eq!(
        zone["ssh_public_key"].as_str().unwrap().split_whitespace().nth(1),
        pair.public_openssh.split_whitespace().nth(1)
    );
    assert!(!everything_said(&app, id).await.contains("PRIVATE KEY"));

    // The first contact pins once: a second first contact sees the first.
    let host = generate_ed25519("host").unwrap().public_openssh;
    let other = generate_ed25519("other host").unwrap().public_openssh;
    let first = playzone_ssh::pin_first(app.store(), id, &host).await.unwrap();
    assert_eq!(playzone_ssh::pin_first(app.store(), id, &other).await.unwrap(), first);
    let detail = app.get(&format!("/api/playzones/{id}"), &app.admin).await.body;
    assert_eq!(detail["ssh_host_key"], json!(host));
    assert!(detail["ssh_host_key_fingerprint"].as_str().unwrap().starts_with("SHA256:"));
    let Reach::Ssh(access) = reach(&app, id).await else { panic!() };
    assert_eq!(access.pinned_host_key.as_deref(), Some(host.as_str()));

    // Set by hand (a known_hosts line, normalised), and forgotten.
    let body = other.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    let r = patch(&app, id, json!({"ssh_host_key": format!("[git.example.org]:22 {other}")})).await;
    assert_eq!((r.status, &r.body["ssh_host_key"]), (StatusCode::OK, &json!(body)), "{}", r.text);
    let r = patch(&app, id, json!({"ssh_host_key": ""})).await;
    assert_eq!(r.body["ssh_host_key"], Value::Null, "{}", r.text);
    let r = patch(&app, id, json!({"ssh_host_key": "ssh-ed25519 not-base64"})).await;
    assert!(
        r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").get("playzone.ssh_host_key").is_some()
    );

    // Another path on the same host keeps key and pin; another host
    // drops both (a key never follows the URL to a host it was not for).
    playzone_ssh::pin_first(app.store(), id, &host).await.unwrap();
    let r = patch(&app, id, json!({"scm_url": "ssh://git@git.example.org/team/renamed.git"})).await;
    assert_eq!((&r.body["has_credentials"], &r.body["ssh_host_key"]), (&json!(true), &json!(host)), "{}", r.text);
    let r = patch(&app, id, json!({"scm_url": "git@evil.example:team/app.git"})).await;
    assert_eq!(
        (&r.body["has_credentials"], &r.body["ssh_host_key"], &r.body["ssh_public_key"]),
        (&json!(false), &Value::Null, &Value::Null),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn hostile_ssh_urls_tokens_as_keys_and_pins_on_https_are_refused() {
    let app = TestApp::new().await;
    for url in [
        "ssh://git@git.example.org/app.git';touch /tmp/pwned;'",
        "git@git.example.org:-oProxyCommand=touch%20/tmp/pwned",
        "ssh://-oProxyCommand=x@git.example.org/app.git",
        "ssh://git@127.0.0.1/app.git",
        "git@169.254.169.254:latest/meta-data",
        "ssh://git@localhost:2222/app.git",
        "ssh://git@git.example.org/../../etc/shadow",
    ] {
        let r = app.post("/api/playzones", &app.admin, json!({"playzone": {"name": "x", "scm_url": url}})).await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert!(details.get("playzone.scm_url").is_some(), "{url}: {details}");
    }
    assert_eq!(app.count("playzones").await, 0, "nothing was written");
    let r = app
        .post(
            "/api/playzones",
            &app.admin,
            json!({"playzone": {"name": "x", "scm_url": SSH_URL, "credentials": "glpat-secret-token"}}),
        )
        .await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let message = details["playzone.credentials"].to_string();
    assert!(message.contains("deploy key") && !message.contains("glpat-secret-token"), "{message}");
    let https = create(&app, json!({"name": "web", "scm_url": "https://git.example.org/team/web.git"})).await;
    let host = generate_ed25519("host").unwrap().public_openssh;
    let r = patch(&app, https["id"].as_i64().unwrap(), json!({"ssh_host_key": host})).await;
    assert!(
        r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").get("playzone.ssh_host_key").is_some()
    );
}
