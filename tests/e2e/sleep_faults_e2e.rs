//! Sleep and wake in a real browser and when a wake fails (issue #32),
//! through the edge (Debian's Caddy) on the harness's sshd and Docker
//! engine:
//! - a browser's page load of a sleeping Playground gets the waiting page,
//!   which becomes the service's own page without a manual reload (Debian's
//!   chromium, `tests/browser/waiting_page.py`);
//! - a wake that cannot finish (the container and its image removed while
//!   asleep, so the image cannot be pulled) answers a held client with the
//!   edge's error page within the documented hold, shows a browser the
//!   failure on the waiting page, and records the error on the Playground
//!   as a failed pass does; once the image is back, the next request wakes
//!   it;
//! - a service that listens seconds after its container starts (an
//!   application server loading, no healthcheck) answers the request held
//!   while it woke: the route switches only once it accepts connections
//!   (`reconcilers/src/playground/wake_gate.rs`).

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::time::{Duration, Instant};

use crate::support::docker::BUSYBOX_IMAGE;
use crate::support::edged::{Edged, SLEEPY_IMAGE, client, status, wait_status};
use crate::support::world::{World, docker_lines};
use serde_json::json;

/// One exposed service answering `hello from <IMAGE>` on `/`.
fn compose(image: &str, subdomain: &str) -> String {
    format!(
        r#"
services:
  web:
    image: {image}
    command: ["sh", "-c", "mkdir -p /www && echo hello from {subdomain} > /www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]
    stop_grace_period: 1s
    labels:
      svc/expose: "8080"
      svc/subdomain: {subdomain}
"#
    )
}

/// Creates a Playground of `compose`, waits for it to run, and puts it to
/// sleep through the API; answers its id and its edge host name.
async fn asleep(world: &World, name: &str, compose: &str, subdomain: &str) -> (i64, String) {
    let spec = world.playspec(name, compose).await;
    let created = world.playground(name, spec, json!({})).await;
    let id = created["id"].as_i64().unwrap();
    world.wait_converged(id, "the first start").await;
    let r = world.app.post(&format!("/api/playgrounds/{id}/sleep"), &world.app.admin, json!({})).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    wait_status(world, id, "sleeping", Duration::from_secs(15)).await;
    (id, format!("{subdomain}-{id}.localhost"))
}

/// Runs `waiting_page.py` on `url` expecting `expect`; panics with what
/// the browser said unless every step held.
async fn browser(url: &str, expect: &str, shot: &str) {
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("sleep-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let env = vec![
        ("PAGE_URL", url.to_owned()),
        ("EXPECT", expect.to_owned()),
        ("SHOT", shots.join(format!("{shot}.png")).display().to_string()),
    ];
    let (run, said) = crate::support::browser::run_script("waiting_page.py", env).await;
    println!("{said}");
    assert!(run.status.success(), "the browser on the waiting page: {said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_browser_on_the_waiting_page_reaches_the_service_without_a_reload() {
    let Edged { world, http_port, _admin_dir, _runtimes } = Edged::start().await;
    let (id, host) = asleep(&world, "browsed", &compose(SLEEPY_IMAGE, "browsed"), "browsed").await;
    browser(&format!("http://{host}:{http_port}/"), "service:hello from browsed", "woken").await;
    wait_status(&world, id, "running", Duration::from_secs(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wake_that_fails_answers_the_error_page_records_why_and_a_later_request_wakes_it() {
    const FRAGILE: &str = "play-test/fragile:1";
    let Edged { world, http_port, _admin_dir, _runtimes } = Edged::start().await;
    crate::support::run(std::process::Command::new("docker").args(["tag", BUSYBOX_IMAGE, FRAGILE]));
    let (id, host) = asleep(&world, "fragile", &compose(FRAGILE, "fragile"), "fragile").await;
    let url = format!("http://{host}:{http_port}/");

    // Asleep, its container and its image go: waking must make the
    // container again from an image no registry here has.
    let project = status(&world, id).await["compose_project"].as_str().unwrap().to_owned();
    let filter = format!("label=com.docker.compose.project={project}");
    for container in docker_lines(&["ps", "-aq", "--filter", &filter]) {
        crate::support::run(std::process::Command::new("docker").args(["rm", "-f", &container]));
    }
    crate::support::run(std::process::Command::new("docker").args(["rmi", FRAGILE]));

    // A held client and a browser, at once.
    let http = client(&host, http_port);
    let asked = Instant::now();
    let held = tokio::spawn(async move {
        let answer = http.get(&url).send().await.unwrap();
        let sleeping = answer.headers().get("x-play-sleeping").map(|v| v.to_str().unwrap().to_owned());
        let retry = answer.headers().get("retry-after").is_some();
        (answer.status().as_u16(), sleeping, retry, answer.text().await.unwrap(), asked.elapsed())
    });
    browser(&format!("http://{host}:{http_port}/"), "failed:did not answer within 30s", "failed").await;
    let (code, sleeping, retry, body, after) = held.await.unwrap();
    println!("the held request answered {code} after {after:?}: {body}");
    assert_eq!((code, sleeping.as_deref(), retry), (503, Some("failed"), true), "{body}");
    assert!(body.contains("did not answer within 30s") && body.contains("status"), "{body}");
    assert!(after < Duration::from_secs(40), "held past the documented bound: {after:?}");

    // The Playground shows why, as a failed pass of an awake one would:
    // its status carries the pull's error, and it is awake (desired).
    let view = world.app.get(&format!("/api/playgrounds/{id}/status"), &world.app.admin).await.body;
    let message = view["error_message"].as_str().unwrap_or_default();
    assert!(message.contains("fragile"), "the error names the image: {view}");
    assert_eq!(view["error_step"], "image_pull", "{view}");
    assert_eq!(status(&world, id).await["power"], "awake", "a request woke it");

    // The image is back: the next request wakes it and gets the service.
    crate::support::run(std::process::Command::new("docker").args(["tag", BUSYBOX_IMAGE, FRAGILE]));
    let answer = client(&host, http_port).get(format!("http://{host}:{http_port}/")).send().await.unwrap();
    assert_eq!(answer.text().await.unwrap().trim(), "hello from fragile");
    wait_status(&world, id, "running", Duration::from_secs(20)).await;
    let view = world.app.get(&format!("/api/playgrounds/{id}/status"), &world.app.admin).await.body;
    assert!(view["error_message"].is_null(), "the error is cleared once it runs: {view}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_service_that_listens_seconds_after_it_starts_answers_the_request_held_while_it_woke() {
    let Edged { world, http_port, _admin_dir, _runtimes } = Edged::start().await;
    let slow = compose(SLEEPY_IMAGE, "slow").replace("trap 'exit 0' TERM; httpd", "trap 'exit 0' TERM; sleep 3; httpd");
    assert!(slow.contains("sleep 3; httpd"), "{slow}");
    let (id, host) = asleep(&world, "slow", &slow, "slow").await;
    let asked = Instant::now();
    let answer = client(&host, http_port).get(format!("http://{host}:{http_port}/")).send().await.unwrap();
    let sleeping = answer.headers().get("x-play-sleeping").map(|v| v.to_str().unwrap().to_owned());
    let (code, body) = (answer.status().as_u16(), answer.text().await.unwrap());
    println!("the held request answered {code} after {:?}", asked.elapsed());
    assert_eq!((code, sleeping, body.trim()), (200, None, "hello from slow"));
    assert!(asked.elapsed() >= Duration::from_secs(3), "answered by the service, so after it listened");
    wait_status(&world, id, "running", Duration::from_secs(20)).await;
}
