//! The client commands whose server side is not built yet (`POST
//! /api/apply`, `GET /api/apply/objects`, streamed logs), run as the real
//! binary against a stub server that answers by the contract the CLI
//! codes against: what the CLI sends, how it prints the answers, its exit
//! codes, and its fallbacks.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::collections::HashMap;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

#[derive(Default)]
struct Stub {
    /// Bodies POSTed to /api/apply, with their query.
    applied: Mutex<Vec<(HashMap<String, String>, Value)>>,
    status_polls: AtomicUsize,
    log_polls: AtomicUsize,
}

type Shared = Arc<Stub>;

/// Per object: `invalid*` names make a 422 about their compose field,
/// `same*` are unchanged, others configured; Playgrounds get ids 5 (runs
/// on the second poll) or 6 (`broken*`, fails).
async fn apply(
    State(stub): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
    Json(body): Json<Value>,
) -> Response {
    stub.applied.lock().unwrap().push((query.clone(), body.clone()));
    let objects = body["objects"].as_array().cloned().unwrap_or_default();
    if let Some(i) = objects.iter().position(|o| o["metadata"]["name"].as_str().unwrap().starts_with("invalid")) {
        let envelope = json!({"error": {"code": "VALIDATION_FAILED", "message": "the manifests are not valid",
            "details": {format!("objects[{i}].spec.base_compose_yaml.services"): ["must not be empty"]}}});
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(envelope)).into_response();
    }
    let results: Vec<Value> = objects
        .iter()
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap();
            let kind = o["kind"].as_str().unwrap();
            let same = name.starts_with("same");
            let id = match kind {
                "Playground" if name.starts_with("broken") => 6,
                "Playground" => 5,
                _ => 12,
            };
            json!({"kind": kind, "name": name, "id": id, "action": if same { "unchanged" } else { "configured" },
                   "diff": if same { json!([]) } else { json!([{"path": "spec.persist_volumes", "old": false, "new": true}]) },
                   "drift": [], "revision": null})
        })
        .collect();
    Json(json!({"dry_run": query.contains_key("dry_run"), "apply_set": body["apply_set"], "results": results}))
        .into_response()
}

async fn objects() -> Json<Value> {
    Json(json!([{"kind": "Playspec", "name": "web", "id": 12, "apply_set": "s", "labels": {}, "revision": "web-1",
                 "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}]))
}

async fn playspec(Path(id): Path<i64>) -> Response {
    if id != 12 {
        let envelope = json!({"error": {"code": "RESOURCE_NOT_FOUND", "message": "playspec not found", "details": {}}});
        return (StatusCode::NOT_FOUND, Json(envelope)).into_response();
    }
    Json(json!({"id": 12, "name": "web-1", "locked": false})).into_response()
}

async fn status(State(stub): State<Shared>, Path(id): Path<i64>) -> Json<Value> {
    let polls = stub.status_polls.fetch_add(1, Ordering::SeqCst);
    let status = match (id, polls) {
        (6, _) => json!({"id": 6, "status": "failed", "job_mode": false, "error_step_label": "Pulling Images",
                         "error_message": "manifest unknown"}),
        (_, 0) => json!({"id": id, "status": "in_progress", "job_mode": false, "creation_step_label": "Queued"}),
        _ => json!({"id": id, "status": "running", "job_mode": false}),
    };
    Json(status)
}

/// Playground 1 streams; playground 2 refuses `follow` (an older server)
/// and has one more line on every poll.
async fn logs(
    State(stub): State<Shared>,
    Path((id, _service)): Path<(i64, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let follow = query.get("follow").is_some_and(|f| f == "true");
    if id == 1 && follow {
        let body = ": hello\n\ndata: one\n\ndata: two\n\nevent: end\ndata:\n\ndata: after the end\n\n";
        return ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response();
    }
    if follow {
        let envelope = json!({"error": {"code": "VALIDATION_FAILED", "message": "unknown parameter", "details": {"follow": ["unknown"]}}});
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(envelope)).into_response();
    }
    let n = stub.log_polls.fetch_add(1, Ordering::SeqCst) + 3;
    let lines: Vec<String> = (1..=n).map(|i| format!("line {i}")).collect();
    Json(json!({"service": "web", "lines": lines, "source": "live"})).into_response()
}

async fn start() -> (String, Shared) {
    let stub = Shared::default();
    let app = Router::new()
        .route("/api/apply", post(apply))
        .route("/api/apply/objects", get(objects))
        .route("/api/playspecs/{id}", get(playspec))
        .route("/api/playgrounds/{id}/status", get(status))
        .route("/api/playgrounds/{id}/logs/{service}", get(logs))
        .with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, stub)
}

fn play(base: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_play"));
    cmd.args(args)
        .env("PLAY_URL", base)
        .env("PLAY_TOKEN", "play_stub_token")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("NO_COLOR", "1")
        .env("STUB_SECRET", "from-the-environment")
        .env_remove("PLAY_CONTEXT");
    cmd
}

/// Runs the binary off the test's runtime (the stub serves on it).
async fn run(base: &str, args: &[&str]) -> Output {
    let mut cmd = play(base, args);
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A repository `infra` with `envs/app.yaml` (and its Compose file).
fn repository(name: &str, playground: Option<&str>) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let envs = tmp.path().join("infra/envs");
    std::fs::create_dir_all(tmp.path().join("infra/.git")).unwrap();
    std::fs::create_dir_all(&envs).unwrap();
    std::fs::write(envs.join("compose.yaml"), "services:\n  web:\n    image: nginx\n").unwrap();
    let mut manifest = format!(
        "apiVersion: play/v1\nkind: Playspec\nmetadata:\n  name: {name}\nspec:\n  composeFile: compose.yaml\n  \
         description: {{valueFrom: {{env: STUB_SECRET}}}}\n"
    );
    if let Some(pg) = playground {
        manifest.push_str(&format!(
            "---\napiVersion: play/v1\nkind: Playground\nmetadata:\n  name: {pg}\nspec:\n  playspecRef: {name}\n"
        ));
    }
    std::fs::write(envs.join("app.yaml"), manifest).unwrap();
    tmp
}

#[tokio::test]
async fn apply_sends_resolved_objects_under_the_derived_apply_set_and_prints_the_results() {
    let (base, stub) = start().await;
    let repo = repository("web", None);
    let envs = repo.path().join("infra/envs");
    let out = run(&base, &["apply", "-f", envs.to_str().unwrap(), "--prune"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "playspec/web configured\n  ~ spec.persist_volumes: false -> true\n1 configured\n");
    let (query, body) = stub.applied.lock().unwrap()[0].clone();
    assert!(query.is_empty());
    assert_eq!(body["apply_set"], "git:infra/envs");
    assert_eq!(body["prune"], true);
    let spec = &body["objects"][0]["spec"];
    assert_eq!(spec["base_compose_yaml"], "services:\n  web:\n    image: nginx\n");
    assert_eq!(spec["description"], "from-the-environment");
    assert!(spec.get("composeFile").is_none());

    let out =
        run(&base, &["apply", "-f", envs.to_str().unwrap(), "--dry-run", "--apply-set", "team@prod", "-o", "json"])
            .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((answer["dry_run"].clone(), answer["apply_set"].clone()), (json!(true), json!("team@prod")));
    assert_eq!(stub.applied.lock().unwrap()[1].0.get("dry_run").map(String::as_str), Some("true"));
}

#[tokio::test]
async fn diff_exits_1_on_differences_and_0_without() {
    let (base, _stub) = start().await;
    let changed = repository("web", None);
    let out = run(&base, &["diff", "-f", changed.path().join("infra/envs/app.yaml").to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).ends_with("1 configured (dry run)\n"), "{}", text(&out.stdout));
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
    let same = repository("same-web", None);
    let out = run(&base, &["diff", "-f", same.path().join("infra/envs").to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[tokio::test]
async fn validation_errors_point_into_the_manifest() {
    let (base, _stub) = start().await;
    let repo = repository("invalid", None);
    let file = repo.path().join("infra/envs/app.yaml");
    let out = run(&base, &["apply", "-f", file.to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let expected =
        format!("{}: document 1: spec.base_compose_yaml.services (line 6): must not be empty", file.display());
    assert!(text(&out.stderr).contains(&expected), "{}", text(&out.stderr));
}

#[tokio::test]
async fn apply_wait_waits_for_playgrounds_and_reports_a_failure() {
    let (base, stub) = start().await;
    let repo = repository("web", Some("demo"));
    let envs = repo.path().join("infra/envs");
    let out = run(&base, &["apply", "-f", envs.to_str().unwrap(), "--wait", "--timeout", "30s"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stub.status_polls.load(Ordering::SeqCst) >= 2);

    let broken = repository("web", Some("broken"));
    let out = run(&base, &["apply", "-f", broken.path().join("infra/envs").to_str().unwrap(), "--wait"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("playground/broken failed at Pulling Images: manifest unknown"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn manifest_names_resolve_through_the_apply_index() {
    let (base, _stub) = start().await;
    let out = run(&base, &["get", "playspec", "web", "-o", "json"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["name"], "web-1");
}

#[tokio::test]
async fn followed_logs_stream_until_the_end_event() {
    let (base, _stub) = start().await;
    let out = run(&base, &["logs", "1", "web", "-f"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "one\ntwo\n");
}

#[tokio::test]
async fn followed_logs_fall_back_to_polling_without_repeating_lines() {
    let (base, _stub) = start().await;
    let mut cmd = play(&base, &["logs", "2", "web", "-f"]);
    let output = tokio::task::spawn_blocking(move || {
        let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let pid = child.id().to_string();
        std::thread::sleep(Duration::from_millis(4500));
        Command::new("kill").args(["-INT", &pid]).status().unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let lines: Vec<String> = text(&output.stdout).lines().map(str::to_owned).collect();
    // The first answer has 3 lines and each poll one more: at least two
    // polls in 4.5 s, every line once, in order.
    assert!(lines.len() >= 5, "{lines:?}");
    let expected: Vec<String> = (1..=lines.len()).map(|i| format!("line {i}")).collect();
    assert_eq!(lines, expected);
}
