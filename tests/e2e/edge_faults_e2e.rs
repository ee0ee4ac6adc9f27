//! The edge's arbitration and faults end to end (Debian's Caddy on the
//! harness's sshd and Docker engine):
//! - two Playgrounds routing the same host: the oldest claim serves it, the
//!   other is held back with `held_by_playground_id` and a
//!   `playground.route.conflict` event, nothing flaps while both run, and
//!   the host passes on when the holder is deleted;
//! - a config Caddy refuses: the Playroom's `edge_status.error` carries
//!   Caddy's message, `playroom.edge.failed` is written, the last good
//!   config keeps serving, and no Playground is failed for it.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::time::Duration;

use crate::support::caddy::{edge_config, edge_get, ensure_caddy_image};
use crate::support::world::World;
use crate::support::{free_port, wait_until};
use play_model::edge::settings::EdgeChanges;
use play_model::model::playroom::PlayroomFields;
use play_reconcilers::edge::EdgeConfig;
use serde_json::json;

const DOMAIN: &str = "apps.test";

/// `web` answers the Playground's `WHO` at `shop.<domain>`.
const COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    environment:
      WHO: ${WHO:-nobody}
    command: ["sh", "-c", "mkdir -p /www && echo $$WHO > /www/index.html && exec httpd -f -p 8080 -h /www"]
    labels:
      svc/expose: "8080"
      svc/subdomain: shop
"#;

/// The edge's answer at `host`'s `/`, its body trimmed.
async fn get(port: u16, host: &str) -> Option<(u16, String)> {
    edge_get(port, host, "/").await.map(|(status, body)| (status, body.trim().to_owned()))
}

async fn ports(world: &World, domains: Option<Vec<String>>) -> u16 {
    let http_port = free_port();
    let edge = EdgeChanges {
        http_port: Some(http_port),
        https_port: Some(free_port()),
        enabled: Some(true),
        ..EdgeChanges::default()
    };
    world.update_playroom(PlayroomFields { domains, edge: Some(edge), ..PlayroomFields::default() }).await;
    http_port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_oldest_claim_keeps_a_host_without_flapping_and_passes_it_on() {
    ensure_caddy_image();
    let world = World::start().await;
    let port = ports(&world, Some(vec![DOMAIN.to_owned()])).await;
    let admin_dir = tempfile::tempdir().unwrap();
    let _runtimes = world.runtimes_with_edge(edge_config(admin_dir.path()));
    let spec = world.playspec("shop", COMPOSE).await;
    let host = format!("shop.{DOMAIN}");

    let first =
        world.playground("first", spec, json!({"env_overrides": {"WHO": "first"}})).await["id"].as_i64().unwrap();
    world.wait_converged(first, "the first Playground").await;
    wait_until("the first answers", Duration::from_secs(20), || async {
        get(port, &host).await == Some((200, "first".into()))
    })
    .await;

    let second =
        world.playground("second", spec, json!({"env_overrides": {"WHO": "second"}})).await["id"].as_i64().unwrap();
    world.wait_converged(second, "the second Playground").await;
    let held = world
        .wait_for(second, "the second's route held back", |_, body| {
            body["routes"].as_array().is_some_and(|r| r.iter().any(|r| r["held_by_playground_id"] == first))
        })
        .await;
    let route = held["routes"].as_array().unwrap().iter().find(|r| r["service"] == "web").unwrap().clone();
    assert_eq!(route["live"], false, "{route}");
    assert!(route["reason"].as_str().unwrap_or_default().contains(&first.to_string()), "{route}");
    let debug = world.app.get(&format!("/api/playgrounds/{second}/debug"), &world.app.admin).await;
    let exposure = &debug.body["services_configuration"][0]["exposure"];
    assert_eq!(exposure["held_by_playground_id"], first, "{exposure}");
    assert!(world.event_types().await.iter().any(|t| t == "playground.route.conflict"));
    assert_eq!(world.detail(second).await.1["status"], "running", "a held-back route fails nothing");

    // Both reconcile over several edge passes: the host stays with the first.
    for _ in 0..12 {
        assert_eq!(get(port, &host).await, Some((200, "first".into())));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let conflicts = world.event_types().await.iter().filter(|t| *t == "playground.route.conflict").count();
    assert_eq!(conflicts, 1, "the conflict is reported once, not on every pass");

    // The holder goes: the host passes on.
    let r = world.app.delete(&format!("/api/playgrounds/{first}"), &world.app.admin).await;
    assert_eq!(r.status.as_u16(), 202, "{}", r.text);
    wait_until("the second gets the host", Duration::from_secs(20), || async {
        get(port, &host).await == Some((200, "second".into()))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_config_caddy_refuses_keeps_the_last_good_one_and_fails_no_playground() {
    ensure_caddy_image();
    let world = World::start().await;
    let port = ports(&world, None).await;
    let admin_dir = tempfile::tempdir().unwrap();
    // The operator's ACME root is not PEM: any config that issues
    // certificates is refused by Caddy when it provisions the issuer.
    let bad_root = admin_dir.path().join("not-a-root.pem");
    std::fs::write(&bad_root, "not a certificate\n").unwrap();
    let config = EdgeConfig { acme_root: Some(bad_root), ..edge_config(admin_dir.path()) };
    let _runtimes = world.runtimes_with_edge(config);
    let spec = world.playspec("shop", COMPOSE).await;
    let id = world.playground("pr-1", spec, json!({"env_overrides": {"WHO": "pr-1"}})).await["id"].as_i64().unwrap();
    world.wait_converged(id, "the Playground").await;
    let host = format!("shop-{id}.localhost");
    wait_until("the URL answers", Duration::from_secs(20), || async {
        get(port, &host).await == Some((200, "pr-1".into()))
    })
    .await;

    // A domain and an ACME e-mail: the new config issues certificates.
    world
        .update_playroom(PlayroomFields {
            domains: Some(vec![DOMAIN.to_owned()]),
            acme_email: Some(Some("ops@example.test".into())),
            ..PlayroomFields::default()
        })
        .await;
    let room = format!("/api/playrooms/{}", world.playroom);
    wait_until("the refusal on the Playroom", Duration::from_secs(20), || async {
        let r = world.app.get(&room, &world.app.admin).await;
        r.body["edge_status"]["error"].as_str().is_some_and(|e| e.contains("Caddy refused"))
    })
    .await;
    let r = world.app.get(&room, &world.app.admin).await;
    println!("edge_status.error: {}", r.body["edge_status"]["error"]);
    assert!(world.event_types().await.iter().any(|t| t == "playroom.edge.failed"));
    // The last good config still serves the old host; the Playground is not failed.
    assert_eq!(get(port, &host).await, Some((200, "pr-1".into())));
    assert_eq!(world.detail(id).await.1["status"], "running");
    let status = world.app.get(&format!("/api/playgrounds/{id}/status"), &world.app.admin).await;
    assert!(status.body["error_message"].is_null(), "{}", status.text);
}
