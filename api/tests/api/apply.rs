//! Server-side apply (`POST /api/apply`) over the real router and store:
//! created / configured / unchanged / pruned, all or nothing, dry runs,
//! Playspec revisions, scopes and hostile input. Concurrent applies and
//! the write lock are tested in `apply_concurrency.rs`; convergence on a
//! real host end to end in `tests/e2e/gitops_e2e.rs`.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use crate::support::apply::{COMPOSE, apply, object};
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};
use serde_json::{Value, json};

fn set(compose: &str, env: &str) -> Vec<Value> {
    vec![
        object("Playroom", "box", json!({"host": "127.0.0.1", "port": 2222, "ssh_private_key": null})),
        object("Playspec", "web", json!({"description": "demo", "base_compose_yaml": compose})),
        object(
            "Playground",
            "demo",
            json!({"playroomRef": "box", "playspecRef": "web", "ttl": "2h", "env_overrides": {"MODE": env, "API_TOKEN": "s3cret"}}),
        ),
        object(
            "WebhookEndpoint",
            "ci",
            json!({"url": "https://hooks.example.com/play", "events": ["playground.created"]}),
        ),
    ]
}

fn strip_nulls(mut objects: Vec<Value>) -> Vec<Value> {
    for o in &mut objects {
        o["spec"].as_object_mut().unwrap().retain(|_, v| !v.is_null());
    }
    objects
}

fn actions(r: &play_api::testing::Response) -> Vec<(String, String)> {
    r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                format!("{}/{}", x["kind"].as_str().unwrap(), x["name"].as_str().unwrap()),
                x["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Every row the apply could write, as text: equal snapshots mean nothing
/// was written.
async fn snapshot(app: &TestApp) -> String {
    let mut out = String::new();
    for (table, columns) in [
        ("events", "id"),
        ("playrooms", "id, name, updated_at"),
        ("playspecs", "id, name, updated_at"),
        ("playgrounds", "id, generation, updated_at, playspec_id, expires_at"),
        ("webhook_endpoints", "id, updated_at"),
        ("applied_objects", "id, version, updated_at"),
    ] {
        let rows = sqlx::query(&format!("SELECT {columns} FROM {table} ORDER BY id"))
            .fetch_all(app.store().pool())
            .await
            .unwrap();
        out.push_str(&format!("{table}: {}\n", rows.len()));
        for row in rows {
            use sqlx::Row;
            for i in 0..row.len() {
                let v: Option<String> = row
                    .try_get::<Option<String>, _>(i)
                    .ok()
                    .flatten()
                    .or_else(|| row.try_get::<Option<i64>, _>(i).ok().flatten().map(|n| n.to_string()));
                out.push_str(&format!("{v:?} "));
            }
            out.push('\n');
        }
    }
    out
}

#[tokio::test]
async fn a_set_is_created_then_unchanged_with_nothing_written() {
    let app = TestApp::new().await;
    let body = json!({"apply_set": "git:demo/manifests", "objects": strip_nulls(set(COMPOSE, "dev"))});
    let r = apply(&app, &app.admin, body.clone(), false).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        actions(&r),
        [
            ("Playroom/box".into(), "created".into()),
            ("Playspec/web".into(), "created".into()),
            ("Playground/demo".into(), "created".into()),
            ("WebhookEndpoint/ci".into(), "created".into()),
        ]
    );
    let revision = r.body["results"][1]["revision"].as_str().unwrap().to_owned();
    assert!(revision.starts_with("web-") && revision.len() == 12, "{revision}");
    assert!(!r.text.contains("s3cret"), "a secret-looking value is never answered: {}", r.text);
    let playground = r.body["results"][2]["id"].as_i64().unwrap();
    let detail = app.get(&format!("/api/playgrounds/{playground}"), &app.admin).await;
    assert_eq!(detail.body["playspec_name"], revision.as_str());
    assert_eq!(detail.body["env_overrides"]["MODE"], "dev");

    let before = snapshot(&app).await;
    let again = apply(&app, &app.admin, body, false).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.text);
    assert!(actions(&again).iter().all(|(_, a)| a == "unchanged"), "{}", again.text);
    assert!(again.body["results"].as_array().unwrap().iter().all(|x| x["diff"] == json!([])));
    assert_eq!(snapshot(&app).await, before, "an unchanged apply writes nothing");
    let listed = app.get("/api/apply/objects?kind=Playspec", &app.admin).await;
    assert_eq!(listed.body[0]["name"], "web");
    assert_eq!(listed.body[0]["revision"], revision.as_str());
}

#[tokio::test]
async fn an_edited_compose_file_makes_a_revision_and_rolls_the_playground_to_it() {
    let app = TestApp::new().await;
    let first = apply(&app, &app.admin, json!({"objects": strip_nulls(set(COMPOSE, "dev"))}), false).await;
    let old_revision = first.body["results"][1]["id"].as_i64().unwrap();
    let playground = first.body["results"][2]["id"].as_i64().unwrap();
    let generation = app.get(&format!("/api/playgrounds/{playground}"), &app.admin).await;
    let edited = COMPOSE.replace("  db:\n    image: play-test/busybox:1\n", "  db:\n    image: play-test/busybox:2\n");

    let dry = apply(&app, &app.admin, json!({"objects": strip_nulls(set(&edited, "dev"))}), true).await;
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.text);
    assert_eq!(dry.body["results"][1]["action"], "configured");
    assert_eq!(dry.body["results"][2]["action"], "configured", "the Playground moves to the new revision");
    let diff = &dry.body["results"][1]["diff"][0];
    assert_eq!(diff["path"], "spec.base_compose_yaml");
    assert_eq!(app.count("playspecs").await, 1, "a dry run writes nothing");

    let r = apply(&app, &app.admin, json!({"objects": strip_nulls(set(&edited, "dev"))}), false).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let new_revision = r.body["results"][1]["id"].as_i64().unwrap();
    assert_ne!(new_revision, old_revision);
    let detail = app.get(&format!("/api/playgrounds/{playground}"), &app.admin).await;
    assert_eq!(detail.body["playspec_id"], new_revision);
    assert_eq!(detail.body["status"], "in_progress", "a rollout was asked for");
    assert_ne!(detail.text, generation.text);
    // The old revision is locked no more (nothing runs it): deleted.
    app.get(&format!("/api/playspecs/{old_revision}"), &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn a_change_made_outside_apply_is_drift_and_is_undone() {
    let app = TestApp::new().await;
    let first = apply(&app, &app.admin, json!({"objects": strip_nulls(set(COMPOSE, "dev"))}), false).await;
    let playground = first.body["results"][2]["id"].as_i64().unwrap();
    let r = app
        .post(
            &format!("/api/playgrounds/{playground}/rollout"),
            &app.admin,
            json!({"playground": {"env_overrides": {"MODE": "hacked"}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let dry = apply(&app, &app.admin, json!({"objects": strip_nulls(set(COMPOSE, "dev"))}), true).await;
    let pg = &dry.body["results"][2];
    assert_eq!(pg["action"], "configured", "{}", dry.text);
    let drift = pg["drift"].as_array().unwrap();
    assert!(drift.iter().any(|d| d.as_str().unwrap().contains("live.env_overrides.MODE")), "{drift:?}");
    let r = apply(&app, &app.admin, json!({"objects": strip_nulls(set(COMPOSE, "dev"))}), false).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let detail = app.get(&format!("/api/playgrounds/{playground}"), &app.admin).await;
    assert_eq!(detail.body["env_overrides"]["MODE"], "dev");
}

#[tokio::test]
async fn prune_deletes_only_what_its_set_created_and_no_longer_lists() {
    let app = TestApp::new().await;
    let all = strip_nulls(set(COMPOSE, "dev"));
    let r = apply(&app, &app.admin, json!({"apply_set": "a", "objects": all.clone()}), false).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    // Another set's webhook of the same account.
    let other = object(
        "WebhookEndpoint",
        "other",
        json!({"url": "https://hooks.example.com/x", "events": ["playground.created"]}),
    );
    apply(&app, &app.admin, json!({"apply_set": "b", "objects": [other]}), false).await;
    let without_hook: Vec<Value> = all.iter().filter(|o| o["kind"] != "WebhookEndpoint").cloned().collect();
    let dry =
        apply(&app, &app.admin, json!({"apply_set": "a", "prune": true, "objects": without_hook.clone()}), true).await;
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.text);
    assert!(actions(&dry).contains(&("WebhookEndpoint/ci".into(), "pruned".into())));
    assert_eq!(app.count("webhook_endpoints").await, 2);
    let r = apply(&app, &app.admin, json!({"apply_set": "a", "prune": true, "objects": without_hook}), false).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        actions(&r).iter().filter(|(_, a)| a == "pruned").collect::<Vec<_>>(),
        [&("WebhookEndpoint/ci".to_owned(), "pruned".to_owned())]
    );
    let hooks = app.get("/api/webhook_endpoints", &app.admin).await;
    assert_eq!(hooks.body.as_array().unwrap().len(), 1, "the other set's endpoint stays: {}", hooks.text);
    // Without the set name, prune is refused.
    apply(&app, &app.admin, json!({"prune": true, "objects": []}), false)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
}

#[tokio::test]
async fn one_bad_object_applies_nothing_and_every_error_names_its_object() {
    let app = TestApp::new().await;
    let before = snapshot(&app).await;
    let mut objects = strip_nulls(set(COMPOSE, "dev"));
    objects[1]["spec"]["base_compose_yaml"] = json!("services:\n  web:\n    image: x\n    privileged: maybe\n");
    objects[3]["spec"]["url"] = json!("http://169.254.169.254/latest/meta-data");
    objects.push(object("Playground", "orphan", json!({"playroomRef": "nowhere", "playspecRef": "web"})));
    objects.push(object("Deployment", "x", json!({})));
    objects.push(object("Playroom", "box", json!({"host": "127.0.0.2"})));
    objects.push(
        json!({"apiVersion": "play/v1", "kind": "Playroom", "metadata": {"name": "../etc"}, "spec": {"host": "h"}}),
    );
    let r = apply(&app, &app.admin, json!({"objects": objects}), false).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").clone();
    for key in ["objects[5].kind", "objects[6].metadata.name", "objects[7].metadata.name"] {
        assert!(details.get(key).is_some(), "{key}: {details}");
    }
    // The envelope is checked first; then every object's errors at once.
    let objects = strip_nulls(set(COMPOSE, "dev"));
    let mut bad = objects.clone();
    bad[1]["spec"]["base_compose_yaml"] = json!("services: [");
    bad[3]["spec"]["url"] = json!("http://169.254.169.254/latest/meta-data");
    bad[2]["spec"]["unknown_field"] = json!(1);
    let r = apply(&app, &app.admin, json!({"objects": bad}), false).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").clone();
    let keys: Vec<&String> = details.as_object().unwrap().keys().collect();
    assert!(keys.iter().any(|k| k.starts_with("objects[1].spec.base_compose_yaml")), "{details}");
    assert!(keys.iter().any(|k| k.starts_with("objects[3].spec.url")), "{details}");
    assert!(keys.iter().any(|k| k.starts_with("objects[2].spec")), "{details}");
    assert_eq!(snapshot(&app).await, before, "nothing of the set was written");
}

#[tokio::test]
async fn scopes_are_checked_per_kind_and_trust_stays_the_operators() {
    let app = TestApp::new().await;
    let only_specs = app
        .key_for(app.account_id, [Scope::PlayspecsRead, Scope::PlayspecsWrite].into_iter().collect::<ScopeSet>(), None)
        .await;
    let spec_only = json!({"objects": [object("Playspec", "web", json!({"base_compose_yaml": COMPOSE}))]});
    assert_eq!(apply(&app, &only_specs, spec_only, false).await.status, StatusCode::OK);
    let r = apply(&app, &only_specs, json!({"objects": strip_nulls(set(COMPOSE, "dev"))}), false).await;
    let details = r.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert!(details["scope"][0].as_str().unwrap().contains("playrooms:"), "{details}");
    let readers = app.key_for(app.account_id, [Scope::PlayspecsRead].into_iter().collect::<ScopeSet>(), None).await;
    let dry = apply(
        &app,
        &readers,
        json!({"objects": [object("Playspec", "web", json!({"base_compose_yaml": COMPOSE}))]}),
        true,
    )
    .await;
    assert_eq!(dry.status, StatusCode::OK, "a reader may dry-run: {}", dry.text);
    let write = apply(
        &app,
        &readers,
        json!({"objects": [object("Playspec", "web2", json!({"base_compose_yaml": COMPOSE}))]}),
        false,
    )
    .await;
    write.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    // A tenant key cannot make a Playroom trusted through apply.
    let tenant_scopes: ScopeSet = Scope::ALL.iter().copied().filter(|s| !s.is_operator()).collect();
    let tenant = app.key_for(app.account_id, tenant_scopes, None).await;
    let trusted = json!({"objects": [object("Playroom", "root", json!({"host": "10.0.0.1", "trusted": true}))]});
    apply(&app, &tenant, trusted, false).await.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert_eq!(app.count("playrooms").await, 0);
}

/// A Playzone and a Playspec whose built service names it, applied
/// together; the token never comes back; pruning both removes both.
#[tokio::test]
async fn a_playzone_is_applied_and_referenced_by_name() {
    let app = TestApp::new().await;
    let compose = "services:\n  api:\n    build: .\n  db:\n    image: play-test/busybox:1\n";
    let objects = json!([
        object(
            "Playzone",
            "shop",
            json!({"scm_url": "https://git.example.com/shop.git", "private": true, "credentials": "tok-123456"})
        ),
        object(
            "Playspec",
            "shop",
            json!({"base_compose_yaml": compose, "services": [{"name": "api", "playzoneRef": "shop"}]})
        ),
    ]);
    let r = apply(&app, &app.admin, json!({"apply_set": "z", "objects": objects.clone()}), false).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(!r.text.contains("tok-123456"), "{}", r.text);
    let zone = r.body["results"][0]["id"].as_i64().unwrap();
    let spec = app.get(&format!("/api/playspecs/{}", r.body["results"][1]["id"]), &app.admin).await;
    let api = spec.body["services"].as_array().unwrap().iter().find(|s| s["name"] == "api").unwrap().clone();
    assert_eq!(api["playzone_id"], zone);
    let detail = app.get(&format!("/api/playzones/{zone}"), &app.admin).await;
    assert_eq!(detail.body["private"], true);
    let again = apply(&app, &app.admin, json!({"apply_set": "z", "objects": objects}), false).await;
    assert!(actions(&again).iter().all(|(_, a)| a == "unchanged"), "{}", again.text);
    // A built service without its Playzone is refused, naming the fix.
    let bare = json!([object("Playspec", "bare", json!({"base_compose_yaml": compose}))]);
    let r = apply(&app, &app.admin, json!({"objects": bare}), false).await;
    let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["objects[0].spec.services"][0].as_str().unwrap().contains("playzoneRef"), "{details}");
    // Pruning both: the revision goes first, then the Playzone.
    let r = apply(&app, &app.admin, json!({"apply_set": "z", "prune": true, "objects": []}), false).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(app.count("playzones").await, 0);
    assert_eq!(app.count("playspecs").await, 0);
}

#[tokio::test]
async fn the_applied_objects_index_checks_its_filters() {
    let app = TestApp::new().await;
    let long = "a".repeat(201);
    app.get(&format!("/api/apply/objects?apply_set={long}"), &app.admin)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    app.get("/api/apply/objects?kind=Deployment", &app.admin)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    let ok = app.get("/api/apply/objects?kind=Playground&apply_set=git:x/y", &app.admin).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text);
}

/// An import template's versions are its revisions: a new body is the
/// next version, `public` alone flips the latest, pruning deletes it.
#[tokio::test]
async fn an_import_template_gets_a_version_per_body() {
    let app = TestApp::new().await;
    let body = "svc:\n  variables:\n    NAME: {name: \"Name\", default: \"app\"}\nservices:\n  web:\n    image: play-test/busybox:1\n    environment:\n      APP: $$var__NAME\n";
    let doc = |body: &str, public: bool| json!({"apply_set": "t", "objects": [object("ImportTemplate", "starter", json!({"description": "a starter", "category_id": 2, "template_body": body, "public": public}))]});
    let r = apply(&app, &app.admin, doc(body, false), false).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let id = r.body["results"][0]["id"].as_i64().unwrap();
    let again = apply(&app, &app.admin, doc(body, false), false).await;
    assert_eq!(actions(&again), [("ImportTemplate/starter".into(), "unchanged".into())]);
    let edited = body.replace("default: \"app\"", "default: \"shop\"");
    let r = apply(&app, &app.admin, doc(&edited, false), false).await;
    assert_eq!(actions(&r), [("ImportTemplate/starter".into(), "configured".into())]);
    let versions = app.get(&format!("/api/import_templates/{id}/versions"), &app.admin).await;
    let list = versions.body.as_array().unwrap();
    assert_eq!(list.len(), 2, "{}", versions.text);
    assert_eq!(list[1]["template_body"], edited.as_str());
    apply(&app, &app.admin, doc(&edited, true), false).await;
    let versions = app.get(&format!("/api/import_templates/{id}/versions"), &app.admin).await;
    assert_eq!(versions.body.as_array().unwrap().len(), 2, "public alone makes no version");
    assert_eq!(versions.body[1]["public"], true);
    let bad = apply(&app, &app.admin, doc("services: [", false), false).await;
    let details = bad.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details.as_object().unwrap().keys().any(|k| k.starts_with("objects[0].spec.template_body")), "{details}");
    let pruned = apply(&app, &app.admin, json!({"apply_set": "t", "prune": true, "objects": []}), false).await;
    assert_eq!(actions(&pruned), [("ImportTemplate/starter".into(), "pruned".into())]);
    app.get(&format!("/api/import_templates/{id}"), &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}

/// A service whose name holds a dot: its secret-looking env_vars are
/// redacted like any other's (a dotted redaction path used to point at
/// `services.web` → `api` and leave the value in the answer).
#[tokio::test]
async fn a_secret_of_a_service_named_with_a_dot_is_never_answered() {
    let app = TestApp::new().await;
    let compose = "services:\n  web.api:\n    image: nginx:1.27\n";
    let objects = vec![
        object("Playroom", "box", json!({"host": "127.0.0.1", "port": 2222})),
        object("Playspec", "dotted", json!({"description": "demo", "base_compose_yaml": compose})),
        object(
            "Playground",
            "dotted",
            json!({"playroomRef": "box", "playspecRef": "dotted", "ttl": "2h",
                   "services": {"web.api": {"env_vars": {"API_TOKEN": "dotted-s3cret"}}}}),
        ),
    ];
    let body = json!({"apply_set": "git:demo/dotted", "objects": objects});
    for dry_run in [true, false] {
        let r = apply(&app, &app.admin, body.clone(), dry_run).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert!(!r.text.contains("dotted-s3cret"), "the secret was answered: {}", r.text);
    }
}

#[tokio::test]
async fn a_manifests_sleep_after_is_the_playgrounds_own_and_absent_inherits() {
    let app = TestApp::new().await;
    let mut objects = strip_nulls(set(COMPOSE, "dev"));
    objects[2]["spec"]["sleep_after"] = json!("45m");
    let r = apply(&app, &app.admin, json!({"objects": objects.clone()}), false).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let playground = r.body["results"][2]["id"].as_i64().unwrap();
    let detail = app.get(&format!("/api/playgrounds/{playground}"), &app.admin).await;
    assert_eq!(detail.body["sleep_after"], "45m", "{}", detail.text);
    // Applied again unchanged: nothing to do.
    let again = apply(&app, &app.admin, json!({"objects": objects.clone()}), false).await;
    assert_eq!(again.body["results"][2]["action"], "unchanged", "{}", again.text);
    // Taken out of the manifest: the Playground inherits again (never, here).
    objects[2]["spec"].as_object_mut().unwrap().remove("sleep_after");
    let r = apply(&app, &app.admin, json!({"objects": objects.clone()}), false).await;
    assert_eq!(r.body["results"][2]["action"], "configured", "{}", r.text);
    let detail = app.get(&format!("/api/playgrounds/{playground}"), &app.admin).await;
    assert_eq!(detail.body["sleep_after"], Value::Null, "{}", detail.text);
    // A bad value names its field and applies nothing.
    objects[2]["spec"]["sleep_after"] = json!("1s");
    let r = apply(&app, &app.admin, json!({"objects": objects}), false).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.text.contains("sleep_after") && r.text.contains("between"), "{}", r.text);
}
