//! The edge end to end, over the harness's sshd and the machine's Docker
//! engine, with Debian's Caddy as the edge image:
//! - a Playground with two exposed services on one host, split by path
//!   rules, answers at its URL through the edge with the right service
//!   behind each path, and an unrouted path gets the edge's 404;
//! - the edge container removed behind play's back is made again, its
//!   routes restored, and `playroom.edge.restored` is written;
//! - a container on the edge network cannot reach Caddy's admin API;
//! - after DELETE, the URL no longer answers; deleting the Playroom
//!   removes its edge container from the host and then the Playroom's row.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

mod support;

use std::time::{Duration, Instant};

use play_core::edge::EdgeSettings;
use play_reconcilers::edge::EdgeConfig;
use serde_json::json;
use support::caddy::{CADDY_IMAGE, ensure_caddy_image};
use support::docker::BUSYBOX_IMAGE;
use support::world::{World, docker_lines, inspect};
use support::{free_port, run, wait_until};

/// Two services serving their own name, one host (`shop`), split by path.
const COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    command: ["sh", "-c", "mkdir -p /www/web && echo web > /www/index.html && echo web > /www/web/index.html && exec httpd -f -p 8080 -h /www"]
    labels:
      svc/expose: "8080"
      svc/subdomain: shop
      svc/path_rule: "Path(`/`) || PathPrefix(`/web/`)"
  api:
    image: play-test/busybox:1
    command: ["sh", "-c", "mkdir -p /www/api && echo api > /www/api/index.html && exec httpd -f -p 9000 -h /www"]
    labels:
      svc/expose: "9000"
      svc/subdomain: shop
      svc/path_rule: "PathPrefix(`/api/`)"
"#;

/// GET `path` on the edge's HTTP port with `host`: status and body
/// (`None` when nothing answers).
async fn get(port: u16, host: &str, path: &str) -> Option<(u16, String)> {
    let client = reqwest::Client::builder()
        .resolve(host, ([127, 0, 0, 1], port).into())
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let answer = client.get(format!("http://{host}:{port}{path}")).send().await.ok()?;
    let status = answer.status().as_u16();
    Some((status, answer.text().await.unwrap_or_default()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_edge_routes_by_host_and_path_survives_its_removal_and_keeps_tenants_off_its_admin_api() {
    ensure_caddy_image();
    let world = World::start().await;
    let (http_port, https_port) = (free_port(), free_port());
    world.set_edge(EdgeSettings { http_port, https_port, ..EdgeSettings::default() }).await;
    let admin_dir = tempfile::tempdir().unwrap();
    let config = EdgeConfig {
        image: CADDY_IMAGE.to_owned(),
        admin_dir: admin_dir.path().display().to_string(),
        check_interval: Duration::from_millis(500),
        ..EdgeConfig::default()
    };
    let _runtimes = world.runtimes_with_edge(config);
    let spec = world.playspec("shop", COMPOSE).await;
    let created = world.playground("pr-1", spec, json!({})).await;
    let id = created["id"].as_i64().unwrap();
    let host = format!("shop-{id}.localhost");

    world.wait_for(id, "running", |status, body| status.is_success() && body["status"] == "running").await;
    let running_at = Instant::now();
    wait_until("the URL answers", Duration::from_secs(20), || async {
        get(http_port, &host, "/").await.is_some_and(|(s, b)| s == 200 && b.trim() == "web")
    })
    .await;
    println!("running -> URL answering: {:?}", running_at.elapsed());

    // Each path reaches its service, and nothing else is routed.
    assert_eq!(get(http_port, &host, "/web/").await.unwrap(), (200, "web\n".to_owned()));
    let api = get(http_port, &host, "/api/").await.unwrap();
    assert_eq!(api, (200, "api\n".to_owned()));
    let unrouted = get(http_port, &host, "/elsewhere").await.unwrap();
    assert_eq!(unrouted.0, 404, "{unrouted:?}");
    assert!(unrouted.1.contains("nothing is routed here"), "the edge's own 404: {unrouted:?}");
    // The host is part of every route: the same path under another host is not routed.
    assert_eq!(get(http_port, &format!("shop-{}.localhost", id + 1), "/api/").await.unwrap().0, 404);
    assert_eq!(get(http_port, "SHOP-other.localhost", "/").await.unwrap().0, 404);

    // The edge container is play's, on the edge network, admin on a unix socket only.
    let edge_name = world.edge_container();
    let edge_network = format!("play-{}-edge", &world.installation[..6]);
    assert_eq!(inspect(&edge_name, "{{.State.Running}}"), "true");
    let socket = admin_dir.path().join(&edge_name).join("admin.sock");
    assert!(socket.exists(), "the admin socket is on the host: {}", socket.display());

    // A tenant container on the edge network finds no admin API: Caddy's
    // default admin port and the HTTP ports' admin paths are both closed.
    let probe = |script: &str| {
        let out = std::process::Command::new("docker")
            .args(["run", "--rm", "--network", &edge_network, BUSYBOX_IMAGE, "sh", "-c", script])
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, out) = probe(&format!("wget -q -T 3 -O- http://{edge_name}:2019/config/ && echo REACHED"));
    assert_ne!(code, Some(0), "the admin API answered on :2019: {out}");
    assert!(!out.contains("REACHED"));
    let (_, out) = probe(&format!("wget -q -T 3 -O- http://{edge_name}:{http_port}/config/ 2>&1; echo done"));
    assert!(!out.contains("\"admin\""), "the config leaked on the HTTP port: {out}");
    let (code, out) =
        probe(&format!("printf 'GET /config/ HTTP/1.0\\r\\n\\r\\n' | nc -w 3 {edge_name} 2019 && echo OPEN"));
    assert!(code != Some(0) || !out.contains("OPEN"), "port 2019 is open: {out}");
    // The probe itself works: the HTTP port is open to the same probe.
    let (_, out) =
        probe(&format!("printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 {edge_name} {http_port} && echo OPEN"));
    assert!(out.contains("OPEN"), "the probe cannot see the edge at all: {out}");

    // Drift: the edge container removed while its routes are in use.
    let before = docker_lines(&["inspect", "--format", "{{.Id}}", &edge_name]);
    run(std::process::Command::new("docker").args(["rm", "-f", &edge_name]));
    let removed_at = Instant::now();
    // A functional bound (the edge is checked every 2 s), wide enough for a
    // loaded 2-core CI machine; the printed time is the measurement.
    let restored = wait_until("routes restored after docker rm -f", Duration::from_secs(20), || async {
        get(http_port, &host, "/api/").await.is_some_and(|(s, b)| s == 200 && b.trim() == "api")
    })
    .await;
    println!("edge container removed -> routes restored: {restored:?} ({:?} since removal)", removed_at.elapsed());
    assert_ne!(docker_lines(&["inspect", "--format", "{{.Id}}", &edge_name]), before, "a new container");
    wait_until("the drift event", Duration::from_secs(5), || async {
        world.event_types().await.iter().any(|t| t == "playroom.edge.restored")
    })
    .await;

    // DELETE: the URL stops answering with the service.
    let r = world.app.delete(&format!("/api/playgrounds/{id}"), &world.app.admin).await;
    assert_eq!(r.status.as_u16(), 202, "{}", r.text);
    wait_until("the URL stops answering", Duration::from_secs(20), || async {
        get(http_port, &host, "/").await.is_some_and(|(s, _)| s == 404)
    })
    .await;

    // Deleting the Playroom: gone from the API at once (its name free
    // again), and the edge loop removes the container, then the row.
    wait_until("the Playground's row is gone", Duration::from_secs(30), || async {
        world.detail(id).await.0.as_u16() == 404
    })
    .await;
    // Issue #27, item 12: a crash may leave an edge container in
    // `Created`, under another name; the delete removes it too.
    let labels = [
        format!("label=dev.play.installation={}", world.installation),
        format!("label=dev.play.edge-playroom={}", world.playroom),
    ];
    let stale = format!("{edge_name}-stale");
    let mut create = std::process::Command::new("docker");
    create.args(["create", "--name", &stale]);
    for l in &labels {
        create.args(["--label", l.trim_start_matches("label=")]);
    }
    run(create.args([BUSYBOX_IMAGE, "true"]));
    let labelled = |what: &str| {
        let mut args = vec![what, "ls", "-q"];
        if what == "container" {
            args.push("-a");
        }
        for l in &labels {
            args.extend(["--filter", l.as_str()]);
        }
        docker_lines(&args)
    };
    assert!(!labelled("volume").is_empty(), "the edge's volumes exist before the delete");
    let r = world.app.delete(&format!("/api/playrooms/{}", world.playroom), &world.app.admin).await;
    assert!(r.status.is_success(), "{}", r.text);
    let r = world.app.get(&format!("/api/playrooms/{}", world.playroom), &world.app.admin).await;
    assert_eq!(r.status.as_u16(), 404);
    wait_until("the edge container removed", Duration::from_secs(15), || async {
        docker_lines(&["ps", "-a", "--filter", &format!("name=^{edge_name}$"), "--format", "{{.Names}}"]).is_empty()
    })
    .await;
    wait_until("the Playroom's row purged", Duration::from_secs(10), || async {
        play_core::store::sweep::playroom_account(world.app.store(), world.playroom).await.unwrap().is_none()
    })
    .await;
    assert_eq!(labelled("container"), Vec::<String>::new(), "no container labelled with the deleted Playroom's edge");
    assert_eq!(labelled("volume"), Vec::<String>::new(), "no volume (certificates, ACME keys) left behind");
    assert!(
        !docker_lines(&["network", "ls", "--format", "{{.Name}}"]).contains(&edge_network),
        "the installation's edge network goes with its last user on the engine"
    );
    assert!(world.event_types().await.iter().any(|t| t == "playroom.destroyed"));
}
