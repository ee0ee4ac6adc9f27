//! play's own Git host through the real binary: `play repo create` and
//! `play repo push` against `play serve`, then the stock `git` client
//! cloning and pushing over HTTP with the admin key, as a new user would;
//! then `play repo attach` and `play repo delete`.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use crate::support::git_cli::{git, ok, with_key};

use crate::support::serve::Play;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_becomes_a_repository_that_git_clones_and_pushes() {
    let play = Play::new().await;
    let server = play.serve().await;
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("project");
    std::fs::create_dir_all(project.join("app")).unwrap();
    std::fs::write(project.join("compose.yaml"), "services:\n  web:\n    build: ./app\n").unwrap();
    std::fs::write(project.join("app/Dockerfile"), "FROM scratch\n").unwrap();

    let created = ok(&play.client(&server).args(["repo", "create", "demo"]).output().unwrap());
    assert!(created.starts_with("default/demo"), "{created}");
    let pushed = ok(&play
        .client(&server)
        .args(["repo", "push", "default/demo"])
        .arg(&project)
        .args(["-m", "First"])
        .output()
        .unwrap());
    assert!(pushed.ends_with("(2 files)"), "{pushed}");
    let again = ok(&play
        .client(&server)
        .args(["repo", "push", "default/demo"])
        .arg(&project)
        .args(["-m", "Again"])
        .output()
        .unwrap());
    assert!(again.starts_with("unchanged"), "{again}");
    let url = ok(&play.client(&server).args(["repo", "clone-url", "default/demo"]).output().unwrap());
    assert_eq!(url, format!("{}/git/default/demo.git", server.base), "PLAY_PUBLIC_URL defaults to the listen address");

    let with_key = with_key(&url, &server.token);
    let clone = work.path().join("clone");
    ok(&git(work.path(), &["clone", "--quiet", &with_key, clone.to_str().unwrap()]));
    assert_eq!(ok(&git(&clone, &["ls-files"])).lines().collect::<Vec<_>>(), ["app/Dockerfile", "compose.yaml"]);
    assert_eq!(ok(&git(&clone, &["log", "--format=%s"])), "First");

    std::fs::write(clone.join("README.md"), "# demo\n").unwrap();
    ok(&git(&clone, &["add", "README.md"]));
    ok(&git(&clone, &["commit", "--quiet", "-m", "Readme"]));
    ok(&git(&clone, &["push", "--quiet", "origin", "main"]));
    let anonymous = git(work.path(), &["clone", "--quiet", &url, work.path().join("anon").to_str().unwrap()]);
    assert!(!anonymous.status.success(), "a private repository needs a key");

    let (status, repos) = server.get("/api/repos").await;
    assert_eq!(status, 200);
    assert_eq!(repos[0]["full_name"], "default/demo");
    let on_disk = play.path("repositories/default/demo.git");
    assert!(on_disk.is_dir(), "repositories live under the data directory by default");

    let attached = ok(&play.client(&server).args(["repo", "attach", "default/demo"]).output().unwrap());
    assert!(attached.starts_with("playzone ") && attached.ends_with(" demo"), "{attached}");
    let again = ok(&play.client(&server).args(["repo", "attach", "default/demo"]).output().unwrap());
    assert_eq!(again, attached, "attaching again gives the same Playzone");
    let deleted = ok(&play.client(&server).args(["repo", "delete", "default/demo"]).output().unwrap());
    assert_eq!(deleted, "deleted default/demo");
    assert!(!on_disk.exists());
    let gone = play.client(&server).args(["repo", "clone-url", "default/demo"]).output().unwrap();
    assert!(!gone.status.success(), "a deleted repository has no clone URL");
    let typo = play.client(&server).args(["repo", "delete", "demo"]).output().unwrap();
    assert!(String::from_utf8_lossy(&typo.stderr).contains("owner/name"), "a name that is not a full name is refused");
}

/// `play apply` of a folder: the manifest names the code next to it
/// (`filesFrom`), which becomes one commit the stock `git` clones; the same
/// folder again changes nothing; an edited file is one more commit; a
/// Playzone in the same set is attached to the repository.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn play_apply_of_a_folder_makes_the_repository_and_pushes_its_files_once() {
    let play = Play::new().await;
    let server = play.serve().await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("deploy");
    std::fs::create_dir_all(dir.join("app/src")).unwrap();
    std::fs::write(dir.join("app/compose.yaml"), "services:\n  web:\n    build: ./src\n").unwrap();
    std::fs::write(dir.join("app/src/Dockerfile"), "FROM scratch\n").unwrap();
    let manifest = "apiVersion: play/v1\nkind: Repository\nmetadata:\n  name: shop\nspec:\n  filesFrom: ./app\n  \
                    message: Deploy\n---\napiVersion: play/v1\nkind: Playzone\nmetadata:\n  name: shop\nspec:\n  \
                    repositoryRef: shop\n";
    std::fs::write(dir.join("play.yaml"), manifest).unwrap();
    let apply = || play.client(&server).args(["apply", "-f"]).arg(&dir).output().unwrap();

    let first = ok(&apply());
    assert!(first.contains("repository/shop created") && first.contains("playzone/shop created"), "{first}");
    let url = format!("{}/git/default/shop.git", server.base);
    let clone = work.path().join("clone");
    ok(&git(work.path(), &["clone", "--quiet", &with_key(&url, &server.token), clone.to_str().unwrap()]));
    assert_eq!(ok(&git(&clone, &["ls-files"])).lines().collect::<Vec<_>>(), ["compose.yaml", "src/Dockerfile"]);
    assert_eq!(ok(&git(&clone, &["log", "--format=%s"])), "Deploy", "one commit");

    let again = ok(&apply());
    assert!(again.contains("repository/shop unchanged") && again.contains("playzone/shop unchanged"), "{again}");
    std::fs::write(dir.join("app/src/Dockerfile"), "FROM scratch\nLABEL v=2\n").unwrap();
    let third = ok(&apply());
    assert!(third.contains("repository/shop configured"), "{third}");
    ok(&git(&clone, &["pull", "--quiet"]));
    assert_eq!(ok(&git(&clone, &["log", "--format=%s"])).lines().count(), 2);
    assert_eq!(std::fs::read_to_string(clone.join("src/Dockerfile")).unwrap(), "FROM scratch\nLABEL v=2\n");

    let (_, zones) = server.get("/api/playzones").await;
    assert_eq!((zones[0]["name"].as_str(), zones[0]["scm_url"].as_str()), (Some("shop"), Some(url.as_str())));
    let kept = ok(&play.client(&server).args(["delete", "-f"]).arg(&dir).output().unwrap());
    assert!(kept.contains("repository shop kept"), "{kept}");
}

/// The Git host's bounds are the operator's settings (issue #49, item 6):
/// `PLAY_GIT_MAX_REFS_PER_PUSH` through the real binary, over it `git`
/// prints the reason on each ref; a bound of 0 stops `play serve` at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_git_host_s_bounds_are_operator_settings_and_git_prints_why_a_push_is_refused() {
    let refused = Play::new().await.env("PLAY_GIT_MAX_PROCESSES", "0").serve_refused();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("git-max-processes"), "names the setting");

    let play = Play::new().await.env("PLAY_GIT_MAX_REFS_PER_PUSH", "2");
    let server = play.serve().await;
    let made = server.post("/api/repos", serde_json::json!({"name": "demo", "auto_init": true})).await;
    assert_eq!(made.0, 201, "{}", made.1);
    let work = tempfile::tempdir().unwrap();
    let url = with_key(&format!("{}/git/default/demo.git", server.base), &server.token);
    let clone = work.path().join("clone");
    ok(&git(work.path(), &["clone", "--quiet", &url, clone.to_str().unwrap()]));
    for branch in ["a", "b", "c"] {
        ok(&git(&clone, &["branch", branch]));
    }
    let three = git(&clone, &["push", "origin", "a", "b", "c"]);
    let stderr = String::from_utf8_lossy(&three.stderr);
    assert!(!three.status.success(), "{stderr}");
    assert!(stderr.contains("[remote rejected] a -> a (a push may update at most 2 refs)"), "{stderr}");
    ok(&git(&clone, &["push", "--quiet", "origin", "a", "b"]));
    let store = play_store::Store::connect(play.database_url()).await.unwrap();
    let account = play_store::accounts::find_account_by_name(&store, "default").await.unwrap();
    let events = play_store::events::list_for_account(&store, account.id).await.unwrap();
    let pushes: Vec<_> = events.iter().filter(|e| e.event_type == "repo.push").collect();
    assert_eq!(pushes.len(), 2, "the README commit, then one event for both branches: {pushes:?}");
}
