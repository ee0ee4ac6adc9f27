//! The dashboard in a real browser (issue #31): `play serve` with the
//! harness's sshd Playroom and Debian's Caddy as its edge, and a template
//! with a variable; then `tests/browser/dashboard.py` drives Debian's
//! chromium through chromium-driver with Selenium (pinned in
//! `scripts/lib/browser-venv.sh`, which installs it when missing): sign in
//! with a key; launch the template, its variable checked in the page; see
//! the Playground reach running and its URL, a link, answer; follow its
//! logs live (a line the service writes appears without a reload; a
//! tenant's `<script>` stays text); extend; open every section; create an
//! API key and see its token once; destroy and see it leave the list; sign
//! out and find the session refused by the API. A screenshot of each page
//! is kept in `target/tmp/dashboard-screenshots/`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use crate::support::caddy::{CADDY_IMAGE, ensure_caddy_image};
use crate::support::docker::{BUSYBOX_IMAGE, ensure_busybox_image};
use crate::support::serve::Play;
use crate::support::sshd::Sshd;
use serde_json::json;

const TEMPLATE: &str = "greeter";

fn template_body() -> String {
    format!(
        r#"svc:
  variables:
    GREETING: {{name: "Greeting", required: true, validation: "/^[a-z ]+$/"}}
services:
  web:
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", "mkdir -p /www && echo '$$var__GREETING' > /www/index.html && exec httpd -f -p 8080 -h /www"]
    labels:
      svc/expose: "8080"
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_launches_follows_logs_extends_makes_a_key_destroys_and_signs_out() {
    ensure_busybox_image();
    ensure_caddy_image();
    let sshd = Sshd::start();
    let play = Play::new().await.env("PLAY_EDGE_IMAGE", CADDY_IMAGE);
    let server = play.serve().await;

    let (http_port, https_port) = (crate::support::free_port(), crate::support::free_port());
    let mut room = sshd.playroom_body("box");
    room["playroom"]["edge"] = json!({"enabled": true, "http_port": http_port, "https_port": https_port});
    server.create("/api/playrooms", room).await;
    let template = server
        .create(
            "/api/import_templates",
            json!({"import_template": {"name": TEMPLATE, "category_id": 2,
                   "description": "Says hello. <script>window.__pwned=3</script>"}}),
        )
        .await;
    let id = template["id"].as_i64().unwrap();
    let (status, version) = server
        .post(&format!("/api/import_templates/{id}/create_version"), json!({"template_body": template_body()}))
        .await;
    assert_eq!(status, 201, "{version}");

    let artefacts = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots");
    let _ = std::fs::remove_dir_all(&artefacts);
    let env = vec![
        ("PLAY_URL", server.base.clone()),
        ("PLAY_TOKEN", server.token.clone()),
        ("TEMPLATE_NAME", TEMPLATE.to_owned()),
        ("ARTEFACTS", artefacts.display().to_string()),
    ];
    let (run, said) = crate::support::browser::run_script("dashboard.py", env).await;
    println!("{said}");
    assert!(
        run.status.success(),
        "the browser test failed (screenshots in {}):\n{said}\nplay's log:\n{}",
        artefacts.display(),
        server.log_tail(60)
    );
    for page in
        ["sign-in", "overview", "launch", "launch-template", "playground-running", "logs", "keys-created", "destroyed"]
    {
        assert!(artefacts.join(format!("{page}.png")).exists(), "no screenshot of {page}");
    }
}
