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

use std::time::{Duration, Instant};

use crate::support::caddy::{edge_config, edge_get, ensure_caddy_image};
use crate::support::docker::BUSYBOX_IMAGE;
use crate::support::world::{World, docker_lines, inspect};
use crate::support::{free_port, run, wait_until};
use play_model::edge::EdgeSettings;
use serde_json::json;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_edge_routes_by_host_and_path_survives_its_removal_and_keeps_tenants_off_its_admin_api() {
    ensure_caddy_image();
    let world = World::start().await;
    let (http_port, https_port) = (free_port(), free_port());
    world.set_edge(EdgeSettings { http_port, https_port, ..EdgeSettings::default() }).await;
    let admin_dir = tempfile::tempdir().unwrap();
    let _runtimes = world.runtimes_with_edge(edge_config(admin_dir.path()));
    let spec = world.playspec("shop", COMPOSE).await;
    let created = world.playground("pr-1", spec, json!({})).await;
    let id = created["id"].as_i64().unwrap();
    let host = format!("shop-{id}.localhost");

    world.wait_for(id, "running", |status, body| status.is_success() && body["status"] == "running").await;
    let running_at = Instant::now();
    wait_until("the URL answers", Duration::from_secs(20), || async {
        edge_get(http_port, &host, "/").await.is_some_and(|(s, b)| s == 200 && b.trim() == "web")
    })
    .await;
    println!("running -> URL answering: {:?}", running_at.elapsed());

    // Each path reaches its service, and nothing else is routed.
    assert_eq!(edge_get(http_port, &host, "/web/").await.unwrap(), (200, "web\n".to_owned()));
    let api = edge_get(http_port, &host, "/api/").await.unwrap();
    assert_eq!(api, (200, "api\n".to_owned()));
    let unrouted = edge_get(http_port, &host, "/elsewhere").await.unwrap();
    assert_eq!(unrouted.0, 404, "{unrouted:?}");
    assert!(unrouted.1.contains("nothing is routed here"), "the edge's own 404: {unrouted:?}");
    // The host is part of every route: the same path under another host is not routed.
    assert_eq!(edge_get(http_port, &format!("shop-{}.localhost", id + 1), "/api/").await.unwrap().0, 404);
    assert_eq!(edge_get(http_port, "SHOP-other.localhost", "/").await.unwrap().0, 404);

    // The edge container is play's, on the edge network, admin on a unix socket only.
    let edge_name = world.edge_container();
    let edge_network = play_model::desired::edge_network_name(&world.installation, world.playroom);
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
        edge_get(http_port, &host, "/api/").await.is_some_and(|(s, b)| s == 200 && b.trim() == "api")
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
        edge_get(http_port, &host, "/").await.is_some_and(|(s, _)| s == 404)
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
        play_store::sweep::playroom_account(world.app.store(), world.playroom).await.unwrap().is_none()
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

/// Issue #27, item 4: two accounts route services on one engine, each
/// through its own Playroom's edge. A routed container of account A
/// cannot open a TCP connection to account B's routed service (on any of
/// its addresses), while each edge still routes its own account's URL.
/// With one edge network per installation it could, on every port.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_accounts_routed_container_cannot_reach_anothers() {
    ensure_caddy_image();
    let world = World::start().await;
    let (a_http, a_https, b_http, b_https) = (free_port(), free_port(), free_port(), free_port());
    world.set_edge(EdgeSettings { http_port: a_http, https_port: a_https, ..EdgeSettings::default() }).await;
    let b_edge = EdgeSettings { http_port: b_http, https_port: b_https, ..EdgeSettings::default() };
    let (b_key, b_room) = world.other_account_on_this_host("tenant-b", b_edge).await;
    let admin_dir = tempfile::tempdir().unwrap();
    let _runtimes = world.runtimes_with_edge(edge_config(admin_dir.path()));
    let app = &world.app;

    let spec = world.playspec("shop", COMPOSE).await;
    let a = world.playground("a", spec, json!({})).await["id"].as_i64().unwrap();
    let r =
        app.post("/api/playspecs", &b_key, json!({"playspec": {"name": "shop", "base_compose_yaml": COMPOSE}})).await;
    assert!(r.status.is_success(), "{}", r.text);
    let body = json!({"playground": {"name": "b", "playspec_id": r.body["id"], "playroom_id": b_room}});
    let r = app.post("/api/playgrounds", &b_key, body).await;
    assert!(r.status.is_success(), "{}", r.text);
    let (b, b_project) = (r.body["id"].as_i64().unwrap(), r.body["compose_project"].as_str().unwrap().to_owned());
    world.wait_for(a, "A running", |s, body| s.is_success() && body["status"] == "running").await;
    wait_until("B running", Duration::from_secs(90), || async {
        app.get(&format!("/api/playgrounds/{b}"), &b_key).await.body["status"] == "running"
    })
    .await;

    // Each edge routes its own account's URL.
    for (port, id) in [(a_http, a), (b_http, b)] {
        wait_until("the URL answers", Duration::from_secs(20), || async {
            edge_get(port, &format!("shop-{id}.localhost"), "/api/")
                .await
                .is_some_and(|(s, body)| s == 200 && body.trim() == "api")
        })
        .await;
    }

    // A's routed container tries every address of B's routed service.
    let a_project = world.detail(a).await.1["compose_project"].as_str().unwrap().to_owned();
    let b_api = format!("{b_project}-api-1");
    let addresses =
        docker_lines(&["inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}\n{{end}}", &b_api]);
    assert!(!addresses.is_empty());
    let a_web = format!("{a_project}-web-1");
    // busybox's `nc` with a plain request: the answer's body is `api`.
    let probe = |address: &str| format!("printf 'GET /api/ HTTP/1.0\\r\\n\\r\\n' | nc -w 2 {address} 9000; echo DONE");
    for address in &addresses {
        let seen = docker_lines(&["exec", &a_web, "sh", "-c", &probe(address)]).join("\n");
        assert!(seen.ends_with("DONE") && !seen.contains("api"), "A reached B at {address}: {seen}");
    }
    // Positive control: the same probe from B's own routed container
    // reaches it on every address it shares with it.
    let b_web = format!("{b_project}-web-1");
    let seen = docker_lines(&["exec", &b_web, "sh", "-c", &probe(&addresses[0])]).join("\n");
    assert!(seen.contains("api"), "the probe itself works: {seen}");
    // Each edge container is on its own Playroom's network only.
    let b_edge_container = format!("play-{}-edge-{b_room}", &world.installation[..6]);
    let nets = |c: &str| {
        docker_lines(&["inspect", "--format", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}}\n{{end}}", c])
    };
    assert_eq!(
        nets(&world.edge_container()),
        [play_model::desired::edge_network_name(&world.installation, world.playroom)]
    );
    assert_eq!(nets(&b_edge_container), [play_model::desired::edge_network_name(&world.installation, b_room)]);
}
