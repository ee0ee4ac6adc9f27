//! The README's second quick start, "A Playground for each branch of a
//! private repository" (issue #51, item 5; issue #52, item 6), run as
//! written with the `play` client against a real server and Docker: the
//! manifests make a private repository on play's own Git host and a
//! template whose push trigger follows it; the Playroom's
//! `launchDefault: true` makes the trigger act with no other call, and
//! the branch `main` is built and served through the edge.
//!
//! The manifests are copied to a work directory first: the template's
//! clone URL names the test server's port instead of 8080, and the edge
//! listens on free ports, so other tests may run beside this one.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::gitops_e2e::{ok, readme_block, repo, start_quick_start};
use crate::support::serve::Server;

const HEADING: &str = "### A Playground for each branch of a private repository";

#[tokio::test]
async fn the_branches_quick_start_runs_as_written_and_serves_main() {
    let (play, server) = start_quick_start().await;
    let work = tempfile::tempdir().unwrap();
    crate::support::run(std::process::Command::new("cp").arg("-r").arg(repo().join("manifests")).arg(work.path()));
    let dir = work.path().join("manifests");
    let site = std::fs::read_to_string(dir.join("branches/site.yaml")).unwrap();
    assert!(site.contains("http://127.0.0.1:8080/git/default/site.git"), "{site}");
    let moved = site.replace("http://127.0.0.1:8080/git/", &format!("{}/git/", server.base));
    std::fs::write(dir.join("branches/site.yaml"), moved).unwrap();
    let http_port = crate::support::free_port();
    let room = std::fs::read_to_string(dir.join("playroom.yaml")).unwrap();
    assert!(room.contains("launchDefault: true"), "{room}");
    let room = room.replace("18080", &http_port.to_string());
    std::fs::write(dir.join("playroom.yaml"), room.replace("18443", &crate::support::free_port().to_string())).unwrap();

    let commands = readme_block(HEADING);
    let (teardown, setup): (Vec<_>, Vec<_>) = commands.iter().partition(|c| c.starts_with("play delete"));
    assert!(setup.iter().any(|c| c.starts_with("play apply")) && teardown.len() == 1, "{commands:?}");
    let run = |line: &str| {
        let words: Vec<String> = line.split_whitespace().skip(1).map(str::to_owned).collect();
        let out = play.client(&server).args(&words).current_dir(work.path()).output().unwrap();
        ok(&out, line, &server)
    };
    for line in &setup {
        let stdout = run(line);
        if line.starts_with("play apply") {
            assert!(stdout.contains("repository/site created") && stdout.contains("template/site created"), "{stdout}");
        }
        if line.starts_with("play get triggers") {
            assert!(stdout.contains("site"), "{stdout}");
        }
        if line.starts_with("play repo clone-url") {
            assert_eq!(stdout.trim(), format!("{}/git/default/site.git", server.base), "{stdout}");
        }
    }
    let (_, triggers) = server.get("/api/triggers").await;
    assert!(triggers[0]["condition"].is_null(), "the trigger acts with no other call: {triggers:#}");
    let served = wait_main_served(&server, http_port).await;
    assert!(served.contains("Built by play from the private repository"), "{served}");

    let stdout = run(teardown[0]);
    assert!(stdout.contains("deleted"), "{stdout}");
    let (_, left) = server.get("/api/playgrounds").await;
    assert!(left.as_array().unwrap().iter().all(|p| p["status"] == "destroyed"), "{left:#}");
}

/// The page the trigger's Playground of `main` serves through the edge on
/// `port`, once it does (within 4 minutes: a first build).
async fn wait_main_served(server: &Server, port: u16) -> String {
    let started = Instant::now();
    let mut last = Value::Null;
    loop {
        let (_, all) = server.get("/api/playgrounds").await;
        if let Some(running) = all.as_array().unwrap().iter().find(|p| p["status"] == "running") {
            let (_, detail) = server.get(&format!("/api/playgrounds/{}", running["id"])).await;
            if let Some(url) = detail["urls"]["web"].as_str() {
                let host = url.split("://").nth(1).unwrap().split([':', '/']).next().unwrap();
                if let Some((200, body)) = crate::support::caddy::edge_get(port, host, "/").await {
                    return body;
                }
            }
            let (_, status) = server.get(&format!("/api/playgrounds/{}/status", running["id"])).await;
            last = serde_json::json!({"detail": detail, "status": status});
        } else if let Some(first) = all.as_array().unwrap().first() {
            let (_, status) = server.get(&format!("/api/playgrounds/{}/status", first["id"])).await;
            last = status;
        }
        if let Some(failed) = all.as_array().unwrap().iter().find(|p| p["status"] == "failed") {
            panic!("{failed:#}\n{}", server.log_tail(60));
        }
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "main was never served: {all:#}\n{last:#}\n{}",
            server.log_tail(80)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
