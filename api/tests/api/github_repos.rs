//! The repositories facility and attach through a GitHub App installation,
//! over the real router and store, against the loopback GitHub: a
//! repository created in an organisation and pushed in one commit through
//! the Git database API, a refusal on a user account, the choice between
//! hosts, a private repository attached and read over git's smart HTTP
//! with the installation's token, and concurrent pushes that lose nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use crate::support::github::Github;
use crate::support::hosted::Hosted;
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_model::repository::{Reach, RepositoryGateway};
use play_model::scm::model::Provider;
use serde_json::json;

async fn account(app: &TestApp, name: &str) -> i64 {
    let row = sqlx::query("SELECT id FROM accounts WHERE name = $1").bind(name);
    sqlx::Row::get(&row.fetch_one(app.store().pool()).await.unwrap(), "id")
}

/// GitHub only, installation 7 (organisation `acme`) connected to the
/// default account.
async fn github_only() -> Github {
    let g = Github::with_app(TestApp::new().await).await;
    let default = account(&g.app, "default").await;
    g.connect(default, 7).await;
    g
}

fn files(pairs: &[(&str, &str)]) -> serde_json::Value {
    pairs.iter().map(|(path, content)| json!({"path": path, "content": content})).collect()
}

#[tokio::test]
async fn create_and_push_makes_one_commit_in_the_organisation_and_pushes_build_on_it() {
    let g = github_only().await;
    let app = &g.app;
    let body =
        json!({"name": "shop", "files": files(&[("compose.yaml", "services: {}\n"), ("app/Dockerfile", "FROM x\n")])});
    let made = app.post("/api/repos/create_and_push", &app.admin, body).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let repo = &made.body["repo"];
    assert_eq!((repo["full_name"].as_str(), repo["provider"].as_str()), (Some("acme/shop"), Some("github")));
    assert_eq!(repo["clone_url"], format!("{}/acme/shop.git", g.github.api_url()));
    assert_eq!(repo["private"], true);
    let first = made.body["commit"]["commit_sha"].as_str().unwrap().to_owned();
    assert_eq!(g.github.head("acme/shop", "main").as_deref(), Some(first.as_str()));
    assert_eq!(g.github.git("acme/shop", &["rev-list", "--count", "main"]), "1", "one commit");
    assert_eq!(g.github.git("acme/shop", &["ls-tree", "-r", "--name-only", "main"]), "app/Dockerfile\ncompose.yaml");
    assert!(g.github.repo("acme/shop").unwrap().private, "created private on GitHub");

    // A push is one commit on top, keeping the other files.
    let push = json!({"repo": "acme/shop", "message": "readme", "files": files(&[("README.md", "# shop\n")])});
    let pushed = app.post("/api/repos/push", &app.admin, push.clone()).await;
    assert_eq!(pushed.status, StatusCode::OK, "{}", pushed.text);
    assert_eq!(pushed.body["files_pushed"], 1);
    let second = pushed.body["commit_sha"].as_str().unwrap();
    assert_eq!(g.github.git("acme/shop", &["rev-parse", &format!("{second}^")]), first);
    assert_eq!(g.github.git("acme/shop", &["ls-tree", "-r", "--name-only", "main"]).lines().count(), 3);
    assert_eq!(
        g.github.git("acme/shop", &["log", "-1", "--format=%an <%ae>|%s", "main"]),
        "acme <acme@users.noreply.play.invalid>|readme"
    );

    // The same files again: no empty commit.
    let again = app.post("/api/repos/push", &app.admin, push).await;
    assert_eq!((again.body["changed"].as_bool(), again.body["commit_sha"].as_str()), (Some(false), Some(second)));

    // A push to a new branch starts from the default branch.
    let branch = json!({"repo": "acme/shop", "branch": "feature", "message": "f", "files": files(&[("f.txt", "f")])});
    let on_branch = app.post("/api/repos/push", &app.admin, branch).await;
    assert_eq!(on_branch.status, StatusCode::OK, "{}", on_branch.text);
    assert_eq!(g.github.git("acme/shop", &["rev-list", "--count", "feature"]), "3");
    // A new branch whose files are all on the default branch already:
    // it starts at the default branch's head, with no empty commit.
    let same =
        json!({"repo": "acme/shop", "branch": "copy", "message": "c", "files": files(&[("README.md", "# shop\n")])});
    let copied = app.post("/api/repos/push", &app.admin, same).await;
    assert_eq!(copied.status, StatusCode::OK, "{}", copied.text);
    assert_eq!(g.github.head("acme/shop", "copy").as_deref(), Some(second));

    // The name is taken on GitHub: 409, and nothing is recorded.
    let taken = app.post("/api/repos", &app.admin, json!({"name": "shop"})).await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.text);
    g.github.add_repo(7, "acme/elsewhere", false);
    let made_there = app.post("/api/repos", &app.admin, json!({"name": "elsewhere"})).await;
    assert_eq!(made_there.status, StatusCode::CONFLICT, "{}", made_there.text);
    assert!(g.github.repo("acme/elsewhere").is_some(), "a repository play did not make is never deleted");
    assert_eq!(app.count("repositories").await, 1);

    // Deleting play's record leaves the repository on GitHub.
    assert_eq!(app.delete("/api/repos/acme/shop", &app.admin).await.status, StatusCode::NO_CONTENT);
    assert!(g.github.repo("acme/shop").is_some(), "play never deletes a repository on GitHub");
}

#[tokio::test]
async fn a_first_push_to_an_empty_repository_is_one_commit() {
    let g = github_only().await;
    let app = &g.app;
    let made = app.post("/api/repos", &app.admin, json!({"name": "blank", "description": "nothing yet"})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    assert!(g.github.head("acme/blank", "main").is_none(), "created empty");
    let push = json!({"repo": "acme/blank", "message": "first", "files": files(&[("a.txt", "a"), ("b/c.txt", "c")])});
    let pushed = app.post("/api/repos/push", &app.admin, push).await;
    assert_eq!(pushed.status, StatusCode::OK, "{}", pushed.text);
    assert_eq!(g.github.git("acme/blank", &["rev-list", "--count", "main"]), "1", "one commit");
    assert_eq!(g.github.git("acme/blank", &["ls-tree", "-r", "--name-only", "main"]), "a.txt\nb/c.txt");

    let readme = app.post("/api/repos", &app.admin, json!({"name": "started", "auto_init": true})).await;
    assert_eq!(readme.status, StatusCode::CREATED, "{}", readme.text);
    assert_eq!(g.github.git("acme/started", &["ls-tree", "-r", "--name-only", "main"]), "README.md");
}

#[tokio::test]
async fn a_user_installation_cannot_create_and_several_hosts_must_be_named() {
    let h = Hosted::new().await;
    let g = Github::with_app(h.app).await;
    let app = &g.app;
    let default = account(app, "default").await;
    let user = g.connect(default, 8).await;

    // play's own host and a GitHub installation: a create must say where.
    let vague = app.post("/api/repos", &app.admin, json!({"name": "x"})).await;
    assert_eq!(vague.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", vague.text);
    let said = vague.body["error"]["details"]["installation_id"][0].as_str().unwrap().to_owned();
    assert!(said.contains("builtin") && said.contains("octocat"), "{said}");
    assert_eq!(app.count("repositories").await, 0);

    let on_user = app.post("/api/repos", &app.admin, json!({"name": "x", "installation_id": user.id})).await;
    assert_eq!(on_user.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", on_user.text);
    let said = on_user.body["error"]["details"]["installation_id"][0].as_str().unwrap();
    assert!(said.contains("user account") && said.contains("attach"), "{said}");
    assert_eq!(app.count("repositories").await, 0, "a refusal records nothing");

    let builtin = app.post("/api/repos", &app.admin, json!({"name": "x", "provider": "builtin"})).await;
    assert_eq!((builtin.status, builtin.body["repo"]["provider"].as_str()), (StatusCode::CREATED, Some("builtin")));
    let bad =
        app.post("/api/repos", &app.admin, json!({"name": "y", "provider": "gitlab", "installation_id": 0})).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    let details = &bad.body["error"]["details"];
    assert!(details["provider"].is_array() && details["installation_id"].is_array(), "{}", bad.text);
    let foreign = app.post("/api/repos", &app.admin, json!({"name": "y", "installation_id": 999})).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND, "{}", foreign.text);
}

#[tokio::test]
async fn a_private_github_repository_is_attached_and_read_with_the_installation_token() {
    let g = github_only().await;
    let app = &g.app;
    g.github.add_repo(7, "acme/Api", true);
    let head = g.github.commit("acme/Api", "main", &[("compose.yaml", b"services: {}\n")]);

    let attached = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": "acme/api"})).await;
    assert_eq!(attached.status, StatusCode::CREATED, "{}", attached.text);
    let zone = attached.body["id"].as_i64().unwrap();
    assert_eq!(attached.body["scm_url"], format!("{}/acme/api.git", g.github.api_url()));
    assert_eq!(
        (attached.body["private"].as_bool(), attached.body["has_credentials"].as_bool()),
        (Some(true), Some(false))
    );
    let access = g.access(zone).await;
    let repository = play_model::scm::FullName::parse("t", "acme/api").unwrap();
    assert_eq!(access.reach, Reach::App { provider: Provider::Github, installation: "7".into(), repository });
    assert_eq!(access.token, None, "no token is stored or handed out");
    assert_eq!(g.branches(zone).await, vec![("main".to_owned(), head.clone())], "read over HTTPS with a token");

    let again = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": "acme/api"})).await;
    assert_eq!((again.status, again.body["id"].as_i64()), (StatusCode::OK, Some(zone)));
    let listed = app.get("/api/repos", &app.admin).await;
    assert_eq!(listed.body[0]["full_name"], "acme/api", "{}", listed.text);

    // Not given to the installation, or not there: 404 either way.
    g.github.install(11, "other-org", "Organization");
    g.github.add_repo(11, "other-org/secret", true);
    for name in ["other-org/secret", "acme/missing"] {
        let refused = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": name})).await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND, "{name}: {}", refused.text);
    }
    // Another account has no installation on acme: it cannot attach it.
    let other = app.new_account("mallory").await;
    let key = app.key_for(other, play_model::scopes::ScopeSet::all(), None).await;
    let theirs = app.post("/api/playzones/attach", &key, json!({"repo_full_name": "acme/api"})).await;
    assert_eq!(theirs.status, StatusCode::UNPROCESSABLE_ENTITY, "no installation: {}", theirs.text);
    g.connect(other, 11).await;
    let theirs = app.post("/api/playzones/attach", &key, json!({"repo_full_name": "acme/api"})).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{}", theirs.text);

    // A token GitHub revoked before its expiry is refused once, dropped
    // from the cache, and the next call fetches a new one.
    g.github.revoke_tokens();
    let moved = g.github.commit("acme/Api", "main", &[("x", b"x")]);
    let refused = g.gateway.list_branches(&g.access(zone).await).await;
    assert!(matches!(refused, Err(play_model::repository::RepositoryError::Unauthorized(_))), "{refused:?}");
    assert_eq!(g.branches(zone).await, vec![("main".to_owned(), moved)], "then a new token is fetched");
}

/// The attack of issue #27, item 2, on a Playzone attached through a
/// GitHub installation: it holds no token, but reads the private
/// repository with the installation's. A key with `launch:write` alone
/// names the repository's URL in a build service and binds its tree into
/// an image it chose; it is refused, and nothing is written.
#[tokio::test]
async fn a_playzone_attached_through_an_installation_is_never_linked_by_url() {
    // The loopback GitHub is plain HTTP: the policy lets its URL through,
    // as github.com's https URL would be.
    let mut config = TestApp::default_config();
    config.repository_policy.urls = crate::support::github::loopback_policy();
    let g = Github::with_app(TestApp::with_config(config).await).await;
    let default = account(&g.app, "default").await;
    g.connect(default, 7).await;
    let app = &g.app;
    g.github.add_repo(7, "acme/vault", true);
    g.github.commit("acme/vault", "main", &[("compose.yaml", b"services: {}\n")]);
    let attached = app.post("/api/playzones/attach", &app.admin, json!({"repo_full_name": "acme/vault"})).await;
    assert_eq!(attached.status, StatusCode::CREATED, "{}", attached.text);
    let url = attached.body["scm_url"].as_str().unwrap().to_owned();
    let compose = format!(
        "services:\n  web:\n    build: .\n    labels:\n      svc/repo_url: {url}\n  \
         thief:\n    image: attacker/exfiltrate:1\n    volumes:\n      - ./:/src\n"
    );
    let launcher =
        app.key_for(app.account_id, [play_model::scopes::Scope::LaunchWrite].into_iter().collect(), None).await;
    let before = (app.count("playzones").await, app.count("playspecs").await, app.count("playgrounds").await);
    for key in [&launcher, &app.admin] {
        let r = app.post("/api/launch", key, json!({"name": "grab", "compose_yaml": compose})).await;
        let details = r.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
        let message = details["compose_yaml.services.web.labels.svc/repo_url"][0].as_str().unwrap();
        assert!(message.contains("installation") && message.contains("playzone_id"), "{message}");
    }
    let after = (app.count("playzones").await, app.count("playspecs").await, app.count("playgrounds").await);
    assert_eq!(after, before, "nothing written");
}

#[tokio::test]
async fn two_pushes_at_once_to_one_github_branch_lose_no_file() {
    let g = github_only().await;
    let app = &g.app;
    let made = app.post("/api/repos", &app.admin, json!({"name": "race", "auto_init": true})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let push = |name: &'static str| {
        let body = json!({"repo": "acme/race", "message": name, "files": files(&[(name, name)])});
        app.post("/api/repos/push", &app.admin, body)
    };
    let answers = futures_join(push("one.txt"), push("two.txt"), push("three.txt")).await;
    let tree = g.github.git("acme/race", &["ls-tree", "-r", "--name-only", "main"]);
    for (name, answer) in ["one.txt", "two.txt", "three.txt"].iter().zip(&answers) {
        match answer.status {
            StatusCode::OK => assert!(tree.lines().any(|l| l == *name), "{name} was answered 200 but is lost: {tree}"),
            StatusCode::CONFLICT => {}
            other => panic!("{name}: {other} {}", answer.text),
        }
    }
}

async fn futures_join<F: std::future::Future>(a: F, b: F, c: F) -> [F::Output; 3] {
    let (a, b, c) = tokio::join!(a, b, c);
    [a, b, c]
}

#[tokio::test]
async fn an_apply_whose_later_host_write_fails_leaves_no_repository_on_github() {
    let g = Github::with_app(TestApp::new().await).await;
    let app = &g.app;
    let default = account(app, "default").await;
    let org = g.connect(default, 7).await;
    let user = g.connect(default, 8).await;
    let object = |name: &str, installation: i64| {
        let spec = json!({"installation_id": installation, "files": files(&[("a.txt", "a")])});
        json!({"apiVersion": "play/v1", "kind": "Repository", "metadata": {"name": name}, "spec": spec})
    };
    // `one` is made in the organisation; `two`, on a user account, is
    // refused by the host: `one` is deleted again and nothing is recorded.
    let set = json!({"objects": [object("one", org.id), object("two", user.id)]});
    let refused = app.post("/api/apply", &app.admin, set).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text);
    assert!(refused.body["error"]["details"]["objects[1].spec.installation_id"].is_array(), "{}", refused.text);
    assert!(g.github.repo("acme/one").is_none(), "the create of this apply is undone on GitHub");
    assert_eq!(app.count("repositories").await, 0);
    assert_eq!(app.count("applied_objects").await, 0);

    // Alone, it is made and pushed; its settings then follow the manifest
    // through GitHub's "update a repository".
    let made = app.post("/api/apply", &app.admin, json!({"objects": [object("one", org.id)]})).await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.text);
    assert_eq!(g.github.git("acme/one", &["ls-tree", "-r", "--name-only", "main"]), "a.txt");
    let mut public = object("one", org.id);
    public["spec"]["private"] = json!(false);
    public["spec"]["description"] = json!("now public");
    let changed = app.post("/api/apply", &app.admin, json!({"objects": [public.clone()]})).await;
    assert_eq!(changed.body["results"][0]["action"], "configured", "{}", changed.text);
    let on_github = g.github.repo("acme/one").unwrap();
    assert_eq!((on_github.private, on_github.description.as_str()), (false, "now public"));
    assert_eq!(g.github.git("acme/one", &["rev-list", "--count", "main"]), "1", "no commit for a settings change");
    // A repository does not move to another installation.
    public["spec"]["installation_id"] = json!(user.id);
    let moved = app.post("/api/apply", &app.admin, json!({"objects": [public]})).await;
    assert!(moved.body["error"]["details"]["objects[0].spec.installation_id"].is_array(), "{}", moved.text);
}
