//! Playrooms through the API against a real sshd and the machine's Docker
//! engine: a generated key added to the host's authorized_keys, a successful
//! test_connection that pins the host key, then each failure the API must
//! report (host key changed, wrong key, host down), and the private key in
//! no response.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::support::sshd::Sshd;
use axum::http::StatusCode;
use play_api::testing::{Response, TestApp};
use play_core::metrics::Metrics;
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use serde_json::{Value, json};

async fn app() -> TestApp {
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(5)), Arc::new(Metrics::new()));
    TestApp::with(TestApp::default_config(), Arc::new(gateway)).await
}

fn engine_version() -> String {
    crate::support::docker::require_docker();
    let out = crate::support::run(Command::new("docker").args(["version", "--format", "{{.Server.Version}}"]));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Every response body seen, to check that no private key ever appears.
#[derive(Default)]
struct Seen(Vec<String>);

impl Seen {
    fn keep(&mut self, r: Response) -> Response {
        self.0.push(r.text.clone());
        r
    }

    fn assert_no_private_key(&self, secrets: &[&str]) {
        for text in &self.0 {
            assert!(!text.contains("PRIVATE KEY"), "a private key leaked: {text}");
            for secret in secrets {
                let body = secret.lines().nth(1).unwrap();
                assert!(!text.contains(body), "a private key leaked: {text}");
            }
        }
    }
}

/// Creates the Playroom `body` (it must be created), keeping the answer
/// for the leak check: its id.
async fn create_playroom(app: &TestApp, seen: &mut Seen, body: Value) -> i64 {
    let r = seen.keep(app.post("/api/playrooms", &app.admin, body).await);
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["id"].as_i64().unwrap()
}

async fn test_connection(app: &TestApp, seen: &mut Seen, id: i64) -> Value {
    let r = seen.keep(app.post(&format!("/api/playrooms/{id}/test_connection"), &app.admin, json!({})).await);
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body
}

#[tokio::test]
async fn generated_key_connects_pins_the_host_key_and_refuses_a_changed_one() {
    let mut sshd = Sshd::start();
    let app = app().await;
    let mut seen = Seen::default();

    let body = json!({"playroom": {"name": "box", "host": "127.0.0.1", "port": sshd.port, "user": sshd.user}});
    let id = create_playroom(&app, &mut seen, body).await;

    let key = seen.keep(app.post(&format!("/api/playrooms/{id}/generate_ssh_key"), &app.admin, json!({})).await);
    let public = key.body["ssh_public_key"].as_str().unwrap();
    let authorized = sshd.dir().join("authorized_keys");
    let mut keys = std::fs::read_to_string(&authorized).unwrap();
    keys.push_str(&format!("\n{public}\n"));
    std::fs::write(&authorized, keys).unwrap();

    let report = test_connection(&app, &mut seen, id).await;
    assert_eq!(report["ok"], true, "{report:#}\n{}", sshd.log());
    assert_eq!(report["docker"]["version"], engine_version().as_str());
    assert_eq!(report["transport"], "direct-streamlocal");
    assert_eq!(report["ssh"]["host_key_pinned_now"], true);

    let detail = seen.keep(app.get(&format!("/api/playrooms/{id}"), &app.admin).await);
    assert_eq!(detail.body["host_key"].as_str().unwrap(), sshd.host_key);
    assert!(detail.body["host_key_pinned_at"].is_string());
    assert_eq!(detail.body["last_transport"], "direct-streamlocal");
    assert_eq!(detail.body["last_error"], Value::Null);

    // The second check uses the pin and does not pin again.
    let report = test_connection(&app, &mut seen, id).await;
    assert_eq!((report["ok"].as_bool(), report["ssh"]["host_key_pinned_now"].as_bool()), (Some(true), Some(false)));

    // A new host key is refused, and the stored pin stays the old one.
    let pinned = sshd.host_key.clone();
    sshd.change_host_key();
    let report = test_connection(&app, &mut seen, id).await;
    assert_eq!(report["ok"], false);
    assert_eq!(report["failure"]["kind"], "host_key_mismatch", "{report:#}");
    let detail = seen.keep(app.get(&format!("/api/playrooms/{id}"), &app.admin).await);
    assert_eq!(detail.body["host_key"].as_str().unwrap(), pinned);
    assert!(detail.body["last_error"].as_str().unwrap().starts_with("host_key_mismatch"), "{}", detail.text);

    // Removing the pin lets the next check trust the new key.
    let r = app
        .request(
            axum::http::Method::PATCH,
            &format!("/api/playrooms/{id}"),
            Some(&app.admin),
            Some(json!({"playroom": {"host_key": null}})),
        )
        .await;
    seen.keep(r);
    assert_eq!(test_connection(&app, &mut seen, id).await["ok"], true);

    // The host going away is reported as unreachable.
    sshd.stop();
    // Hold the freed port (or another refusing one) so nothing answers there.
    let (_held, port) = crate::support::refusing_port(sshd.port);
    if port != sshd.port {
        let patch = json!({"playroom": {"port": port}});
        seen.keep(
            app.request(axum::http::Method::PATCH, &format!("/api/playrooms/{id}"), Some(&app.admin), Some(patch))
                .await,
        );
    }
    let report = test_connection(&app, &mut seen, id).await;
    assert_eq!(report["failure"]["kind"], "unreachable", "{report:#}");

    seen.assert_no_private_key(&[]);
    let events = play_store::events::list_for_account(app.store(), app.account_id).await.unwrap();
    // generate_ssh_key, the first pin, the PATCH and the pin after it (and
    // a port change if the freed port was taken meanwhile).
    let updates = events.iter().filter(|e| e.event_type == "playroom.updated").count();
    let moved = usize::from(port != sshd.port);
    assert_eq!(updates, 4 + moved, "{events:#?}");
}

#[tokio::test]
async fn a_user_supplied_key_works_and_a_wrong_one_is_refused() {
    let sshd = Sshd::start();
    let app = app().await;
    let mut seen = Seen::default();
    let good = sshd.client_key.private_openssh.clone();
    let wrong = play_model::ssh_keys::generate_ed25519("stranger").unwrap().private_openssh;

    let mut ids = Vec::new();
    for (name, key) in [("good", &good), ("wrong", &wrong)] {
        let body = json!({"playroom": {"name": name, "host": "127.0.0.1", "port": sshd.port, "user": sshd.user,
                                       "ssh_private_key": key}});
        ids.push(create_playroom(&app, &mut seen, body).await);
    }
    let report = test_connection(&app, &mut seen, ids[0]).await;
    assert_eq!(report["ok"], true, "{report:#}");
    let report = test_connection(&app, &mut seen, ids[1]).await;
    assert_eq!(report["ok"], false);
    assert_eq!(report["failure"]["kind"], "auth_refused", "{report:#}");
    // A failed check pins nothing.
    let detail = seen.keep(app.get(&format!("/api/playrooms/{}", ids[1]), &app.admin).await);
    assert_eq!(detail.body["host_key"], Value::Null);

    let list = seen.keep(app.get("/api/playrooms", &app.admin).await);
    assert_eq!(list.body.as_array().unwrap().len(), 2);
    seen.assert_no_private_key(&[&good, &wrong]);
}

/// A user that can log in over SSH but is not in the `docker` group. The
/// harness's sshd reads one AuthorizedKeysFile for every user, so the
/// harness key logs it in. `*` (not `!`) as password: sshd without PAM
/// refuses key logins to locked accounts.
fn user_without_docker_access() -> String {
    let name = "play-nodocker";
    let exists = || Command::new("id").arg(name).output().is_ok_and(|o| o.status.success());
    if !exists() {
        let created = Command::new("useradd").args(["--create-home", "--shell", "/bin/sh", name]).status().unwrap();
        assert!(created.success() || exists(), "useradd {name} failed (the e2e tests run as root)");
    }
    crate::support::run(Command::new("usermod").args(["--password", "*", name]));
    let groups = crate::support::run(Command::new("id").args(["-nG", name]));
    assert!(
        !String::from_utf8_lossy(&groups.stdout).split_whitespace().any(|g| g == "docker"),
        "{name} must not be in the docker group"
    );
    name.to_owned()
}

#[tokio::test]
async fn a_user_without_access_to_the_docker_socket_is_reported_as_permission_denied() {
    let sshd = Sshd::start();
    let user = user_without_docker_access();
    let app = app().await;
    let mut seen = Seen::default();
    let body = json!({"playroom": {"name": "nodocker", "host": "127.0.0.1", "port": sshd.port, "user": user,
                                   "ssh_private_key": sshd.client_key.private_openssh}});
    let id = create_playroom(&app, &mut seen, body).await;
    let report = test_connection(&app, &mut seen, id).await;
    assert_eq!(report["ok"], false);
    assert_eq!(report["ssh"]["authenticated"], true, "{report:#}\n{}", sshd.log());
    assert_eq!(report["failure"]["stage"], "docker", "{report:#}");
    assert_eq!(report["failure"]["kind"], "permission_denied", "{report:#}");
}
