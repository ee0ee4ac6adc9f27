//! Playzones over the real router and store: every route, scopes,
//! isolation between accounts, validation field by field with hostile
//! input, the token's secrecy, and the branch index a sync records.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::time::Duration;

use axum::http::{Method, StatusCode};
use play_api::testing::TestApp;
use play_model::playzone::model::SyncResult;
use play_model::repository::RemoteBranch;
use play_model::scopes::{Scope, ScopeSet};
use play_model::time;
use play_store::events;
use play_store::fence::Fence;
use play_store::leases;
use play_store::playzones;
use serde_json::{Value, json};

const URL: &str = "https://git.example.org/team/app.git";
const TOKEN: &str = "glpat-0123456789abcdefXYZ";

pub(crate) async fn create(app: &TestApp, body: Value) -> Value {
    let r = app.post("/api/playzones", &app.admin, json!({"playzone": body})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body
}

pub(crate) async fn patch(app: &TestApp, id: i64, body: Value) -> play_api::testing::Response {
    app.request(Method::PATCH, &format!("/api/playzones/{id}"), Some(&app.admin), Some(json!({"playzone": body}))).await
}

fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<_> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

async fn refused(app: &TestApp, body: Value) -> Vec<String> {
    let before = app.count("playzones").await;
    let r = app.post("/api/playzones", &app.admin, json!({"playzone": body})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").clone();
    assert_eq!(app.count("playzones").await, before, "a refused create wrote a row");
    keys(&details)
}

/// Records what a sync would, as the sync loop does (under its lease).
async fn synced(app: &TestApp, id: i64, branches: &[(&str, char)], compose: Option<&str>) {
    let lease = leases::claim(app.store(), "playzone_sync", id, "t", time::now(), Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    let z = playzones::find(app.store(), id).await.unwrap().unwrap();
    let result = SyncResult {
        generation: z.generation,
        default_branch: "main".into(),
        branches: branches
            .iter()
            .map(|(n, c)| RemoteBranch { name: (*n).into(), commit: c.to_string().repeat(40) })
            .collect(),
        compose_file: compose.map(str::to_owned),
        compose_commit: compose.map(|_| "b".repeat(40)),
    };
    let fence = Fence { reconciler: "playzone_sync", owner: "t", token: lease.token };
    playzones::record_sync(app.store(), fence, id, &result).await.unwrap().held().unwrap();
}

#[tokio::test]
async fn create_show_list_update_delete() {
    let app = TestApp::new().await;
    let r =
        create(&app, json!({"name": "app", "scm_url": format!("{URL}/"), "private": true, "credentials": TOKEN})).await;
    let id = r["id"].as_i64().unwrap();
    assert_eq!(r["scm_url"], URL);
    assert_eq!((r["status"].as_str(), r["private"].as_bool()), (Some("pending"), Some(true)));
    assert_eq!((r["has_credentials"].as_bool(), r["sync_pending"].as_bool()), (Some(true), Some(true)));
    assert_eq!(r["default_branch"], Value::Null);
    assert!(!r.to_string().contains(TOKEN));

    let list = app.get("/api/playzones", &app.admin).await;
    assert_eq!(
        keys(&list.body[0]),
        ["created_at", "default_branch", "id", "last_synced_at", "name", "private", "scm_url", "status", "updated_at"]
    );
    let shown = app.get(&format!("/api/playzones/{id}"), &app.admin).await;
    assert_eq!(shown.body["name"], "app");
    assert!(!shown.text.contains(TOKEN));

    let r = patch(&app, id, json!({"name": "renamed", "default_branch": "develop"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        (r.body["default_branch"].as_str(), r.body["default_branch_pinned"].as_bool()),
        (Some("develop"), Some(true))
    );
    let r = patch(&app, id, json!({"default_branch": null})).await;
    assert_eq!(
        (r.body["default_branch"].clone(), r.body["default_branch_pinned"].as_bool()),
        (Value::Null, Some(false))
    );

    let events: Vec<String> = events::list_for_account(app.store(), app.account_id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.entity_type == "playzone")
        .map(|e| e.event_type.clone())
        .collect();
    assert_eq!(events, ["playzone.created", "playzone.updated", "playzone.updated"]);
    let all = format!("{:?}", events::list_for_account(app.store(), app.account_id).await.unwrap());
    assert!(!all.contains(TOKEN), "the token reached an event");

    let r = app.delete(&format!("/api/playzones/{id}"), &app.admin).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    app.get(&format!("/api/playzones/{id}"), &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn the_token_is_write_only_and_sealed_at_rest() {
    let app = TestApp::new().await;
    let r = create(&app, json!({"name": "app", "scm_url": URL, "private": true, "credentials": TOKEN})).await;
    let id = r["id"].as_i64().unwrap();
    for path in [format!("/api/playzones/{id}"), "/api/playzones".into(), format!("/api/playzones/{id}/branches")] {
        let r = app.get(&path, &app.admin).await;
        assert!(!r.text.contains(TOKEN), "{path}: {}", r.text);
    }
    // Every text column of every row the store holds.
    for table in ["playzones", "events"] {
        let rows = sqlx::query(&format!("SELECT * FROM {table}")).fetch_all(app.store().pool()).await.unwrap();
        for row in &rows {
            use sqlx::Row;
            for i in 0..row.len() {
                if let Ok(Some(text)) = row.try_get::<Option<String>, _>(i) {
                    assert!(!text.contains(TOKEN), "{table} column {i} holds the token");
                }
            }
        }
    }
    // Removing the token from a private Playzone is refused; making it
    // public first allows it.
    patch(&app, id, json!({"credentials": ""}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let r = patch(&app, id, json!({"private": false, "credentials": ""})).await;
    assert_eq!(r.body["has_credentials"], false, "{}", r.text);
}

#[tokio::test]
async fn hostile_and_bad_input_is_refused_field_by_field() {
    let app = TestApp::new().await;
    assert_eq!(
        refused(&app, json!({"name": "", "scm_url": "https://127.0.0.1/a.git"})).await,
        ["playzone.name", "playzone.scm_url"]
    );
    for url in [
        "http://git.example.org/a.git",
        "https://x-access-token:secret@git.example.org/a.git",
        "https://169.254.169.254/latest/meta-data",
        "https://[fd00:ec2::254]/",
        "https://10.1.2.3/a.git",
        "https://localhost/a.git",
        "file:///var/run/docker.sock",
        "ssh://git@10.1.2.3/a.git",
        "git@git.example.org:a.git;id",
        "https://git.example.org/a.git?access_token=x",
    ] {
        assert_eq!(refused(&app, json!({"name": "x", "scm_url": url})).await, ["playzone.scm_url"], "{url}");
    }
    for branch in ["../../etc", "-x", "a b", "refs/heads/../x", "a..b", "x.lock"] {
        assert_eq!(
            refused(&app, json!({"name": "x", "scm_url": URL, "default_branch": branch})).await,
            ["playzone.default_branch"],
            "{branch}"
        );
    }
    assert_eq!(refused(&app, json!({"name": "x", "scm_url": URL, "private": true})).await, ["playzone.credentials"]);
    assert_eq!(
        refused(&app, json!({"name": "x", "scm_url": URL, "credentials": "has space\nnewline"})).await,
        ["playzone.credentials"]
    );
    assert_eq!(refused(&app, json!({"name": "x", "scm_url": URL, "trusted": true})).await, ["playzone.trusted"]);
    // A name is unique in the account.
    create(&app, json!({"name": "dup", "scm_url": URL})).await;
    assert_eq!(refused(&app, json!({"name": "dup", "scm_url": URL})).await, ["playzone.name"]);
}

#[tokio::test]
async fn the_operator_allowlist_admits_a_loopback_repository() {
    let mut config = TestApp::default_config();
    config.repository_policy.urls.allow_http = true;
    config.repository_policy.urls.allowlist = play_model::webhook::UrlPolicy::parse_allowlist("127.0.0.1").unwrap();
    let app = TestApp::with_config(config).await;
    create(&app, json!({"name": "local", "scm_url": "http://127.0.0.1:3000/r.git"})).await;
    assert_eq!(
        refused(&app, json!({"name": "other", "scm_url": "http://127.0.0.2:3000/r.git"})).await,
        ["playzone.scm_url"]
    );
}

#[tokio::test]
async fn scopes_and_accounts_are_enforced() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"name": "app", "scm_url": URL})).await["id"].as_i64().unwrap();
    let reader = app.key_for(app.account_id, [Scope::PlayzonesRead].into_iter().collect::<ScopeSet>(), None).await;
    app.post("/api/playzones", &reader, json!({"playzone": {"name": "b", "scm_url": URL}}))
        .await
        .assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    app.post(&format!("/api/playzones/{id}/sync"), &reader, json!({}))
        .await
        .assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    app.delete(&format!("/api/playzones/{id}"), &reader).await.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert_eq!(app.get(&format!("/api/playzones/{id}"), &reader).await.status, StatusCode::OK);
    let other = app.new_account("other").await;
    let stranger = app.key_for(other, ScopeSet::all(), None).await;
    for path in [format!("/api/playzones/{id}"), format!("/api/playzones/{id}/branches")] {
        app.get(&path, &stranger).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    }
    app.post(&format!("/api/playzones/{id}/sync"), &stranger, json!({}))
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    assert_eq!(app.get("/api/playzones", &stranger).await.body, json!([]));
}

#[tokio::test]
async fn sync_records_the_wish_and_branches_answer_from_the_index() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"name": "app", "scm_url": URL})).await["id"].as_i64().unwrap();
    let r = app.post(&format!("/api/playzones/{id}/sync"), &app.admin, json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert!(r.body["message"].as_str().unwrap().contains("sync"));
    let z = playzones::find(app.store(), id).await.unwrap().unwrap();
    assert_eq!(z.generation, 2);

    let names: Vec<String> = (0..60).map(|i| format!("feature/{i:02}")).collect();
    let mut branches: Vec<(&str, char)> = names.iter().map(|n| (n.as_str(), 'a')).collect();
    branches.push(("main", 'b'));
    synced(&app, id, &branches, Some("compose.yaml")).await;
    let r = app.get(&format!("/api/playzones/{id}/branches"), &app.admin).await;
    let list = r.body["branches"].as_array().unwrap();
    assert_eq!(list.len(), 20);
    assert_eq!(list[0], json!({"name": "main", "default": true, "commit": "b".repeat(40)}));
    assert_eq!(list[1]["name"], "feature/00");
    let r = app.get(&format!("/api/playzones/{id}/branches?query=FEATURE/5&limit=50"), &app.admin).await;
    assert_eq!(r.body["branches"].as_array().unwrap().len(), 10);
    // Above the contract's maximum reads the maximum (issue #52, item 8).
    let all = app.get(&format!("/api/playzones/{id}/branches?limit=51"), &app.admin).await;
    assert_eq!((all.status, all.body["branches"].as_array().map(Vec::len)), (StatusCode::OK, Some(50)), "{}", all.text);
    for bad in ["limit=0", "limit=-3", "limit=x"] {
        let r = app.get(&format!("/api/playzones/{id}/branches?{bad}"), &app.admin).await;
        assert!(
            r.status == StatusCode::UNPROCESSABLE_ENTITY || r.status == StatusCode::BAD_REQUEST,
            "{bad}: {}",
            r.text
        );
    }
    let long = "x".repeat(256);
    app.get(&format!("/api/playzones/{id}/branches?query={long}"), &app.admin)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");

    let r = app.get("/api/playzones/with_docker_compose", &app.admin).await;
    assert_eq!(r.body[0]["compose_file"], "compose.yaml");
    let detail = app.get(&format!("/api/playzones/{id}"), &app.admin).await.body;
    assert_eq!((detail["status"].as_str(), detail["sync_pending"].as_bool()), (Some("active"), Some(false)));
}

#[tokio::test]
async fn env_defaults_checks_its_input_before_reaching_the_repository() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"name": "app", "scm_url": URL})).await["id"].as_i64().unwrap();
    synced(&app, id, &[("main", 'b')], None).await;
    for (query, field) in [
        ("branch=../x", "branch"),
        ("branch=main&env_file_path=/etc/passwd", "env_file_path"),
        ("branch=main&env_file_path=../../x", "env_file_path"),
        ("branch=nope", "branch"),
    ] {
        let r = app.get(&format!("/api/playzones/{id}/env_defaults?{query}"), &app.admin).await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert_eq!(keys(details), [field], "{query}");
    }
    // This process has no repository access: the answer says so (502).
    let r = app.get(&format!("/api/playzones/{id}/env_defaults?branch=main"), &app.admin).await;
    r.assert_error(StatusCode::BAD_GATEWAY, "REPOSITORY_ERROR");
}

#[tokio::test]
async fn attach_needs_a_source_hosting_app() {
    let app = TestApp::new().await;
    let r = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": "team/app"})).await;
    r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "SCM_APP_REQUIRED");
    assert_eq!(app.count("playzones").await, 0);
}

#[tokio::test]
async fn a_playzone_a_playspec_builds_from_is_not_deleted() {
    let app = TestApp::new().await;
    let id = create(&app, json!({"name": "app", "scm_url": URL})).await["id"].as_i64().unwrap();
    let services = json!([{"name": "web", "type": "dynamic", "playzone_id": id}]).to_string();
    sqlx::query(
        "INSERT INTO playspecs (account_id, name, description, base_compose_yaml, services, created_at, updated_at) \
         VALUES ($1, 'spec', '', 'services: {}', $2, $3, $3)",
    )
    .bind(app.account_id)
    .bind(services)
    .bind(time::to_db(&time::now()))
    .execute(app.store().pool())
    .await
    .unwrap();
    let r = app.delete(&format!("/api/playzones/{id}"), &app.admin).await;
    r.assert_error(StatusCode::CONFLICT, "CONFLICT");
    assert!(r.text.contains("spec"), "{}", r.text);
    assert_eq!(app.count("playzones").await, 1);
}

const BUILT: &str = "services:\n  web:\n    build: .\n    labels:\n      svc/repo_url: https://git.example.org/team/shop.git\n  db:\n    image: postgres:16\n";

#[tokio::test]
async fn launch_finds_or_creates_the_playzone_of_a_build_service() {
    let app = TestApp::new().await;
    let r = app.post("/api/launch", &app.admin, json!({"name": "shop", "compose_yaml": BUILT})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let created = r.body["playzones_created"].as_array().unwrap().clone();
    assert_eq!(created.len(), 1, "{}", r.text);
    let id = created[0].as_i64().unwrap();
    let zone = app.get(&format!("/api/playzones/{id}"), &app.admin).await.body;
    assert_eq!((zone["name"].as_str(), zone["auto_created"].as_bool()), (Some("shop"), Some(true)));
    assert_eq!(zone["scm_url"], "https://git.example.org/team/shop.git");
    let spec = app.get(&format!("/api/playspecs/{}", r.body["playspecs_created"]), &app.admin).await.body;
    let web = spec["services"].as_array().unwrap().iter().find(|s| s["name"] == "web").unwrap().clone();
    assert_eq!((web["type"].as_str(), web["playzone_id"].as_i64()), (Some("dynamic"), Some(id)));
    // The same repository again: the Playzone is reused.
    let r = app.post("/api/launch", &app.admin, json!({"name": "shop-2", "compose_yaml": BUILT})).await;
    assert_eq!(r.body["playzones_created"], json!([]), "{}", r.text);
    assert_eq!(app.count("playzones").await, 1);
    // A hostile repository URL in the label is refused, and nothing is written.
    let before = (app.count("playzones").await, app.count("playspecs").await);
    let hostile = BUILT.replace("https://git.example.org/team/shop.git", "http://169.254.169.254/latest/meta-data");
    let r = app.post("/api/launch", &app.admin, json!({"name": "evil", "compose_yaml": hostile})).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details.as_object().unwrap().keys().any(|k| k.contains("svc/repo_url")), "{details}");
    assert_eq!((app.count("playzones").await, app.count("playspecs").await), before);
}

#[tokio::test]
async fn a_playspec_links_its_build_service_to_a_playzone_of_the_account() {
    let app = TestApp::new().await;
    let zone = create(&app, json!({"name": "app", "scm_url": URL})).await["id"].as_i64().unwrap();
    let compose = "services:\n  web:\n    build: ./web\n  db:\n    image: postgres:16\n";
    let body = |services: Value| json!({"playspec": {"name": "s", "base_compose_yaml": compose, "services": services}});
    let r = app.post("/api/playspecs", &app.admin, body(json!([{"name": "db", "playzone_id": zone}]))).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["playspec.services[0].playzone_id"][0].as_str().unwrap().contains("only services built"));
    let other = app.new_account("other").await;
    let stranger = app.key_for(other, play_model::scopes::ScopeSet::all(), None).await;
    let r = app.post("/api/playspecs", &stranger, body(json!([{"name": "web", "playzone_id": zone}]))).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["playspec.services.web.playzone_id"][0].as_str().unwrap().contains("no Playzone"), "{details}");
    let r = app.post("/api/playspecs", &app.admin, body(json!([{"name": "web", "playzone_id": zone}]))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let web = r.body["services"].as_array().unwrap().iter().find(|s| s["name"] == "web").unwrap().clone();
    assert_eq!(web["playzone_id"], zone);
    // The link survives an update of the Compose text, and blocks a delete.
    let spec = r.body["id"].as_i64().unwrap();
    let updated = compose.replace("./web", "./app");
    let r = app
        .request(
            Method::PATCH,
            &format!("/api/playspecs/{spec}"),
            Some(&app.admin),
            Some(json!({"playspec": {"base_compose_yaml": updated}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let web = r.body["services"].as_array().unwrap().iter().find(|s| s["name"] == "web").unwrap().clone();
    assert_eq!((web["playzone_id"].as_i64(), web["workdir"].as_str()), (Some(zone), Some("./app")));
    app.delete(&format!("/api/playzones/{zone}"), &app.admin).await.assert_error(StatusCode::CONFLICT, "CONFLICT");
}

#[tokio::test]
async fn a_tenant_cannot_name_a_play_build_image() {
    let app = TestApp::new().await;
    // Issue #27, item 7: every spelling the engine normalises to it.
    for image in [
        "play-build:0123456789abcdef0123456789abcdef01234567",
        "index.docker.io/play-build:0123456789abcdef0123456789abcdef01234567",
        "index.docker.io/library/play-build:k",
        "docker.io/play-build:k",
    ] {
        let compose = format!("services:\n  peek:\n    image: {image}\n");
        let r = app
            .post("/api/playspecs", &app.admin, json!({"playspec": {"name": "peek", "base_compose_yaml": compose}}))
            .await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert!(details.to_string().contains("reserved"), "{image}: {details}");
    }
}

#[tokio::test]
async fn a_playspec_names_the_playzone_its_compose_file_belongs_to() {
    let app = TestApp::new().await;
    let zone = create(&app, json!({"name": "monitoring", "scm_url": URL})).await["id"].as_i64().unwrap();
    let yaml =
        "services:\n  prometheus:\n    image: prom/prometheus\n    volumes:\n      - ./prometheus:/etc/prometheus\n";
    let body =
        |playzone: Value| json!({"playspec": {"name": "mon", "base_compose_yaml": yaml, "playzone_id": playzone}});

    // Another account's Playzone, an unknown one and a bad id: refused
    // field by field, nothing written.
    let theirs = app.key_for(app.new_account("them").await, ScopeSet::all(), None).await;
    let foreign = app.post("/api/playzones", &theirs, json!({"playzone": {"name": "x", "scm_url": URL}})).await;
    let foreign = foreign.body["id"].as_i64().unwrap();
    for bad in [json!(foreign), json!(99_999), json!(0)] {
        let r = app.post("/api/playspecs", &app.admin, body(bad.clone())).await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        assert!(details.get("playspec.playzone_id").is_some(), "{bad}: {details}");
    }
    assert_eq!(app.count("playspecs").await, 0);

    // Without a repository the relative path is refused on untrusted
    // Playrooms (a warning on the Playspec); with one it is the
    // repository's.
    let r = app.post("/api/playspecs", &app.admin, body(Value::Null)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert!(r.body["warnings"].to_string().contains("./prometheus"), "{}", r.text);
    let plain = r.body["id"].as_i64().unwrap();
    let to = |playzone: Value| json!({"playspec": {"playzone_id": playzone}});
    let path = format!("/api/playspecs/{plain}");
    let r = app.request(Method::PATCH, &path, Some(&app.admin), Some(to(json!(zone)))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["playzone_id"], zone);
    assert!(!r.body["warnings"].to_string().contains("./prometheus"), "{}", r.text);
    let listed = app.get("/api/playspecs", &app.admin).await.body;
    assert_eq!(listed[0]["playzone_id"], zone);

    // The Playzone cannot go while the Playspec names it; `null` unlinks.
    let r = app.delete(&format!("/api/playzones/{zone}"), &app.admin).await;
    r.assert_error(StatusCode::CONFLICT, "CONFLICT");
    let r = app.request(Method::PATCH, &path, Some(&app.admin), Some(to(Value::Null))).await;
    assert_eq!(r.body["playzone_id"], Value::Null, "{}", r.text);
    let r = app.delete(&format!("/api/playzones/{zone}"), &app.admin).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
}

#[tokio::test]
async fn create_branch_refuses_a_branch_that_exists_at_another_commit() {
    let app = TestApp::new().await;
    let zone = create(&app, json!({"name": "app", "scm_url": URL})).await["id"].as_i64().unwrap();
    synced(&app, zone, &[("main", 'a'), ("taken", 'c'), ("same", 'a')], None).await;
    let body = json!({"playspec": {"name": "spec", "base_compose_yaml": "services:\n  web:\n    build: .\n",
                                   "services": [{"name": "web", "playzone_id": zone}]}});
    let spec = app.post("/api/playspecs", &app.admin, body).await.body["id"].as_i64().unwrap();
    let r = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "room", "host": "h"}})).await;
    let room = r.body["id"].as_i64().unwrap();
    let create = |name: &'static str, branch: &'static str| {
        let git = json!({"branch_name": branch, "create_branch": true, "base_branch_name": "main"});
        json!({"playground": {"name": name, "playspec_id": spec, "playroom_id": room,
                              "services": {"web": {"git_config": git}}}})
    };
    let r = app.post("/api/playgrounds", &app.admin, create("one", "taken")).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let message = details["playground.services.web.git_config.branch_name"][0].as_str().unwrap();
    assert!(message.contains("already exists") && message.contains("cccccccccccc"), "{message}");
    assert_eq!(app.count("playgrounds").await, 0);
    // The same commit as the base (created before), or a new name: fine.
    for (name, branch) in [("two", "same"), ("three", "fresh")] {
        let r = app.post("/api/playgrounds", &app.admin, create(name, branch)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{branch}: {}", r.text);
    }
}
