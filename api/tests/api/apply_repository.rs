//! Server-side apply's `Repository` kind, and a Playzone's
//! `repositoryRef`, over the real router and store with play's own Git
//! host: files written as one commit and unchanged after; a change, a push
//! from outside and a settings change; a dry run and an invalid set that
//! leave nothing on the host; prune; scopes. Against GitHub (undo of a
//! create when a later host write fails, settings changed with PATCH):
//! `github_repos.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use crate::support::apply::{COMPOSE, apply, object};
use crate::support::hosted::{Hosted, git};
use axum::http::StatusCode;
use play_api::testing::{Response, TestApp};
use play_model::repository::Reach;
use play_model::scm::FullName;
use play_model::scopes::{Scope, ScopeSet};
use play_store::playzone_access;
use serde_json::{Value, json};

fn files(pairs: &[(&str, &str)]) -> Value {
    pairs.iter().map(|(path, content)| json!({"path": path, "content": content})).collect()
}

fn shop(spec_files: Value) -> Vec<Value> {
    vec![
        object("Repository", "shop", json!({"description": "the shop", "files": spec_files})),
        object("Playzone", "shop", json!({"repositoryRef": "shop"})),
    ]
}

fn results(r: &Response) -> Vec<(String, String)> {
    let list = r.body["results"].as_array().unwrap_or_else(|| panic!("{}", r.text));
    list.iter()
        .map(|x| {
            (
                format!("{}/{}", x["kind"].as_str().unwrap(), x["name"].as_str().unwrap()),
                x["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pair(kind_name: &str, action: &str) -> (String, String) {
    (kind_name.to_owned(), action.to_owned())
}

/// The commits of the default branch, newest first, from the bare repository.
fn commits(h: &Hosted, full: &str) -> Vec<String> {
    let out = git(&h.repo_path(full), &["log", "--format=%s", "main"]);
    out.lines().map(str::to_owned).collect()
}

fn file(h: &Hosted, full: &str, path: &str) -> String {
    git(&h.repo_path(full), &["show", &format!("main:{path}")])
}

async fn pushes(app: &TestApp) -> i64 {
    let row = sqlx::query("SELECT COUNT(*) AS n FROM events WHERE entity_type = 'repo' AND action = 'push'");
    sqlx::Row::get(&row.fetch_one(app.store().pool()).await.unwrap(), "n")
}

#[tokio::test]
async fn a_repository_and_its_files_are_one_commit_then_unchanged_and_a_change_is_one_more() {
    let h = Hosted::new().await;
    let app = &h.app;
    let body = |f: Value| json!({"apply_set": "shop", "objects": shop(f)});
    let first =
        apply(app, &app.admin, body(files(&[("compose.yaml", COMPOSE), ("app/Dockerfile", "FROM x\n")])), false).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    assert_eq!(results(&first), [pair("Repository/shop", "created"), pair("Playzone/shop", "created")]);
    assert_eq!(commits(&h, "default/shop"), ["play apply"], "the files are one commit");
    assert_eq!(h.cloned("default/shop").1, ["app/Dockerfile", "compose.yaml"]);
    assert_eq!(pushes(app).await, 1, "the push is a repo.push event");
    let repo = app.get("/api/repos/default/shop", &app.admin).await;
    assert_eq!((repo.body["private"].as_bool(), repo.body["description"].as_str()), (Some(true), Some("the shop")));
    let zone = first.body["results"][1]["id"].as_i64().unwrap();
    let reach = playzone_access::access(app.store(), &app.state.secrets, zone).await.unwrap().reach;
    assert_eq!(reach, Reach::Builtin(FullName::parse("t", "default/shop").unwrap()), "attached, no token");

    // The same set again: nothing is written, on the host or in the store.
    let same = body(files(&[("compose.yaml", COMPOSE), ("app/Dockerfile", "FROM x\n")]));
    let again = apply(app, &app.admin, same.clone(), false).await;
    assert_eq!(results(&again), [pair("Repository/shop", "unchanged"), pair("Playzone/shop", "unchanged")]);
    assert_eq!(commits(&h, "default/shop").len(), 1);

    // One file changes: one commit, the diff names the path.
    let changed = body(files(&[("compose.yaml", COMPOSE), ("app/Dockerfile", "FROM y\n")]));
    let third = apply(app, &app.admin, changed.clone(), false).await;
    assert_eq!(results(&third)[0], pair("Repository/shop", "configured"));
    let diff = third.body["results"][0]["diff"].to_string();
    assert!(diff.contains("spec.files.app/Dockerfile") && !diff.contains("FROM"), "{diff}");
    assert_eq!(commits(&h, "default/shop").len(), 2);
    assert_eq!(file(&h, "default/shop", "app/Dockerfile"), "FROM y\n");

    // Someone pushes outside apply, changing a file the manifest names:
    // the moved head is drift, and apply puts the file back.
    let outside = json!({"repo": "default/shop", "message": "hand edit",
        "files": files(&[("app/Dockerfile", "FROM hand\n"), ("NOTES", "mine\n")])});
    assert_eq!(app.post("/api/repos/push", &app.admin, outside).await.status, StatusCode::OK);
    let repaired = apply(app, &app.admin, changed.clone(), false).await;
    assert_eq!(results(&repaired)[0], pair("Repository/shop", "configured"));
    let drift = repaired.body["results"][0]["drift"].to_string();
    assert!(drift.contains("live.head"), "{drift}");
    assert_eq!(file(&h, "default/shop", "app/Dockerfile"), "FROM y\n");
    assert_eq!(file(&h, "default/shop", "NOTES"), "mine\n", "files the manifest does not name are kept");
    assert_eq!(commits(&h, "default/shop"), ["play apply", "hand edit", "play apply", "play apply"]);
    // A push that changed none of its files leaves the branch where it was.
    let outside = json!({"repo": "default/shop", "message": "notes", "files": files(&[("NOTES", "more\n")])});
    app.post("/api/repos/push", &app.admin, outside).await;
    let moved = apply(app, &app.admin, changed.clone(), false).await;
    assert_eq!(results(&moved)[0], pair("Repository/shop", "configured"));
    assert_eq!(commits(&h, "default/shop")[0], "notes", "no commit: the files were in place");
    assert_eq!(results(&apply(app, &app.admin, changed, false).await)[0], pair("Repository/shop", "unchanged"));

    // Settings: description and visibility follow the manifest.
    let mut public = shop(files(&[("compose.yaml", COMPOSE), ("app/Dockerfile", "FROM y\n")]));
    public[0]["spec"]["private"] = json!(false);
    public[0]["spec"]["description"] = json!("open shop");
    let settings = apply(app, &app.admin, json!({"apply_set": "shop", "objects": public}), false).await;
    assert_eq!(results(&settings)[0], pair("Repository/shop", "configured"), "{}", settings.text);
    let repo = app.get("/api/repos/default/shop", &app.admin).await;
    assert_eq!((repo.body["private"].as_bool(), repo.body["description"].as_str()), (Some(false), Some("open shop")));
    assert_eq!(std::fs::read_to_string(h.repo_path("default/shop").join("description")).unwrap().trim(), "open shop");
}

#[tokio::test]
async fn a_dry_run_or_an_invalid_set_leaves_nothing_on_the_host() {
    let h = Hosted::new().await;
    let app = &h.app;
    let set = shop(files(&[("compose.yaml", COMPOSE)]));
    let dry = apply(app, &app.admin, json!({"objects": set}), true).await;
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.text);
    assert_eq!(results(&dry), [pair("Repository/shop", "created"), pair("Playzone/shop", "created")]);
    assert!(!h.repo_path("default/shop").exists(), "a dry run writes no repository");
    assert_eq!(app.count("repositories").await, 0);

    // A later object is invalid: the repository is neither recorded nor made.
    let mut invalid = shop(files(&[("compose.yaml", COMPOSE)]));
    invalid.push(object("Playspec", "web", json!({"base_compose_yaml": "services: [nope"})));
    let refused = apply(app, &app.admin, json!({"objects": invalid}), false).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text);
    assert!(!h.repo_path("default/shop").exists());
    assert_eq!((app.count("repositories").await, app.count("playzones").await), (0, 0));

    // Hostile paths and bounds are refused field by field, before any write.
    let attacks = json!({"objects": [object("Repository", "evil", json!({"files": files(&[
        ("../escape", "x"), (".git/hooks/post-update", "#!/bin/sh\n"), ("/etc/passwd", "x"), ("a\\b", "x")])}))]});
    let refused = apply(app, &app.admin, attacks, false).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text);
    let details = refused.body["error"]["details"].as_object().unwrap();
    for i in 0..4 {
        assert!(details.contains_key(&format!("objects[0].spec.files[{i}].path")), "{}", refused.text);
    }
    let too_many: Vec<(String, String)> = (0..1001).map(|i| (format!("f{i}"), String::new())).collect();
    let list: Value = too_many.iter().map(|(p, c)| json!({"path": p, "content": c})).collect();
    let refused =
        apply(app, &app.admin, json!({"objects": [object("Repository", "big", json!({"files": list}))]}), false).await;
    assert!(refused.body["error"]["details"]["objects[0].spec.files"].is_array(), "{}", refused.text);
    let bad = json!({"objects": [object("Repository", "x", json!({"provider": "gitlab", "branch": "a..b"}))]});
    let refused = apply(app, &app.admin, bad, false).await;
    let details = &refused.body["error"]["details"];
    assert!(
        details["objects[0].spec.provider"].is_array() && details["objects[0].spec.branch"].is_array(),
        "{}",
        refused.text
    );
    assert_eq!(app.count("repositories").await, 0);
    assert!(!h.dir.path().join("repos").join("default").join("evil.git").exists());

    // A repository made outside apply is not taken over.
    app.post("/api/repos", &app.admin, json!({"name": "mine"})).await;
    let taken = apply(app, &app.admin, json!({"objects": [object("Repository", "mine", json!({}))]}), false).await;
    assert!(taken.body["error"]["details"]["objects[0].metadata.name"].is_array(), "{}", taken.text);
    // A Playzone names a Repository that does not exist.
    let dangling =
        apply(app, &app.admin, json!({"objects": [object("Playzone", "z", json!({"repositoryRef": "nope"}))]}), false)
            .await;
    assert!(dangling.body["error"]["details"]["objects[0].spec.repositoryRef"].is_array(), "{}", dangling.text);
}

#[tokio::test]
async fn prune_removes_the_repository_and_its_playzone_and_scopes_are_checked() {
    let h = Hosted::new().await;
    let app = &h.app;
    let made = apply(app, &app.admin, json!({"apply_set": "s", "objects": shop(files(&[("a", "1")]))}), false).await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.text);
    assert!(h.repo_path("default/shop").exists());

    // Without repos:write the set is refused whole.
    let scopes: ScopeSet = [Scope::PlayzonesRead, Scope::PlayzonesWrite, Scope::ReposRead].into_iter().collect();
    let key = app.key_for(app.account_id, scopes, None).await;
    let refused = apply(app, &key, json!({"apply_set": "s", "objects": shop(files(&[("a", "2")]))}), false).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);
    assert_eq!(file(&h, "default/shop", "a"), "1");

    let pruned = apply(app, &app.admin, json!({"apply_set": "s", "prune": true, "objects": []}), false).await;
    assert_eq!(pruned.status, StatusCode::OK, "{}", pruned.text);
    assert_eq!(results(&pruned), [pair("Playzone/shop", "pruned"), pair("Repository/shop", "pruned")]);
    assert!(!h.repo_path("default/shop").exists(), "play's own host deletes a pruned repository");
    assert_eq!((app.count("repositories").await, app.count("playzones").await), (0, 0));
}
