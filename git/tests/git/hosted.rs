//! play's own Git host, its storage side: repositories created and pushed
//! to with libgit2, read back with the stock `git` client (apt-get install
//! git), pushes that race on one branch, and what a push refuses.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use play_git::hosted::HostedRepositories;
use play_model::scm::{Author, FullName, PushFile, PushFiles, ScmError};

fn author() -> Author {
    Author { name: "play test".into(), email: "test@play.invalid".into() }
}

fn full(text: &str) -> FullName {
    FullName::parse("repo", text).unwrap()
}

fn files(list: &[(&str, &str)], message: &str) -> PushFiles {
    let files = list.iter().map(|(p, c)| PushFile { path: (*p).into(), content: c.as_bytes().to_vec() }).collect();
    PushFiles::check(files, message).unwrap()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").current_dir(dir).args(args).output().expect("git is installed (apt-get install git)");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A stock `git clone` of `full` into a new folder under `into`.
fn clone(host: &HostedRepositories, full: &FullName, into: &Path) -> std::path::PathBuf {
    let target = into.join(format!("clone-{}", rand_suffix()));
    let source = host.path_of(full);
    git(into, &["clone", "--quiet", source.to_str().unwrap(), target.to_str().unwrap()]);
    target
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[test]
fn a_push_is_one_commit_that_git_clones_back() {
    let root = tempfile::tempdir().unwrap();
    let host = HostedRepositories::new(root.path().join("repos"));
    let name = full("team/app");
    let created = host.create(&name, "An app", true, &author()).unwrap();
    assert_eq!(created.default_branch, "main");
    let readme = created.initial.unwrap();

    let push = files(&[("compose.yaml", "services: {}\n"), ("app/Dockerfile", "FROM scratch\n")], "Add the app");
    let outcome = host.push(&name, None, &push, &author()).unwrap();
    assert!(outcome.changed);
    assert_eq!(outcome.files_pushed, 2);
    assert_eq!(outcome.previous.as_deref(), Some(readme.commit_sha.as_str()));

    let work = clone(&host, &name, root.path());
    let log = git(&work, &["log", "--format=%H %T %s"]);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "README, then one commit for both files: {log}");
    assert_eq!(lines[0], format!("{} {} Add the app", outcome.commit_sha, outcome.tree_sha));
    assert_eq!(std::fs::read_to_string(work.join("app/Dockerfile")).unwrap(), "FROM scratch\n");
    assert_eq!(std::fs::read_to_string(work.join("README.md")).unwrap(), "# app\n\nAn app\n");
    let modes = git(&work, &["ls-tree", "-r", "HEAD"]);
    assert!(modes.lines().all(|l| l.starts_with("100644 blob")), "regular files only: {modes}");

    let again = host.push(&name, None, &push, &author()).unwrap();
    assert!(!again.changed, "the same files again make no commit");
    assert_eq!(again.commit_sha, outcome.commit_sha);
}

#[test]
fn a_new_branch_starts_from_the_default_branch() {
    let root = tempfile::tempdir().unwrap();
    let host = HostedRepositories::new(root.path());
    let name = full("team/app");
    host.create(&name, "", false, &author()).unwrap();
    let first = host.push(&name, None, &files(&[("a.txt", "a")], "a"), &author()).unwrap();
    assert_eq!(first.previous, None, "the first push of an empty repository creates main");
    let feature = host.push(&name, Some("feature/x"), &files(&[("b.txt", "b")], "b"), &author()).unwrap();
    assert_eq!(feature.previous, None);
    let work = clone(&host, &name, root.path());
    git(&work, &["checkout", "--quiet", "feature/x"]);
    assert!(work.join("a.txt").exists() && work.join("b.txt").exists());
    assert_eq!(git(&work, &["rev-parse", "HEAD~1"]).trim(), first.commit_sha);
}

#[test]
fn refusals_write_nothing() {
    let root = tempfile::tempdir().unwrap();
    let host = HostedRepositories::new(root.path());
    let name = full("team/app");
    let head = host.create(&name, "", true, &author()).unwrap().initial.unwrap().commit_sha;

    let folder_over_file = host.push(&name, None, &files(&[("README.md/x", "1")], "m"), &author());
    assert!(matches!(folder_over_file, Err(ScmError::Invalid(_))), "{folder_over_file:?}");
    host.push(&name, None, &files(&[("docs/a.md", "1")], "m"), &author()).unwrap();
    let file_over_folder = host.push(&name, None, &files(&[("docs", "1")], "m"), &author());
    assert!(matches!(file_over_folder, Err(ScmError::Invalid(_))), "{file_over_folder:?}");
    let bad_branch = host.push(&name, Some("../main"), &files(&[("x", "1")], "m"), &author());
    assert!(matches!(bad_branch, Err(ScmError::Invalid(_))), "{bad_branch:?}");

    let work = clone(&host, &name, root.path());
    assert_eq!(git(&work, &["rev-list", "--count", "HEAD"]).trim(), "2", "README and docs/a.md only");
    assert_ne!(git(&work, &["rev-parse", "HEAD"]).trim(), head);

    assert!(matches!(host.create(&name, "", false, &author()), Err(ScmError::Exists(_))));
    let missing = host.push(&full("team/other"), None, &files(&[("x", "1")], "m"), &author());
    assert!(matches!(missing, Err(ScmError::NotFound)), "{missing:?}");
    assert!(!root.path().join("team/other.git").exists(), "a push never creates a repository");
}

#[test]
fn concurrent_pushes_to_one_branch_lose_no_file() {
    const PUSHERS: usize = 8;
    let root = tempfile::tempdir().unwrap();
    let host = Arc::new(HostedRepositories::new(root.path()));
    let name = full("team/app");
    host.create(&name, "", true, &author()).unwrap();
    let barrier = Arc::new(std::sync::Barrier::new(PUSHERS));
    let pushers: Vec<_> = (0..PUSHERS)
        .map(|i| {
            let (host, name, barrier) = (host.clone(), name.clone(), barrier.clone());
            std::thread::spawn(move || {
                let push = files(&[(&format!("file-{i}.txt"), "x")], &format!("push {i}"));
                barrier.wait();
                host.push(&name, None, &push, &author())
            })
        })
        .collect();
    let mut won = 0;
    for pusher in pushers {
        match pusher.join().unwrap() {
            Ok(outcome) => {
                assert!(outcome.changed);
                won += 1;
            }
            Err(ScmError::Conflict(_)) => {}
            Err(other) => panic!("a push failed: {other}"),
        }
    }
    let work = clone(&host, &name, root.path());
    let count: usize = git(&work, &["rev-list", "--count", "HEAD"]).trim().parse().unwrap();
    assert_eq!(count, 1 + won, "one commit per push that succeeded, each on top of the other");
    let present = (0..PUSHERS).filter(|i| work.join(format!("file-{i}.txt")).exists()).count();
    assert_eq!(present, won, "every push that succeeded kept its file; none overwrote another");
    assert!(won >= 1);
}

/// The gateway reads play's own repositories where the host keeps them,
/// without the network and whatever the address policy says; a lost
/// access or a host switched off fails with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_reads_a_hosted_repository_in_place() {
    use play_git::{GitConfig, GitGateway};
    use play_model::repository::{Reach, RepositoryAccess, RepositoryGateway};

    let dir = tempfile::tempdir().unwrap();
    let host = HostedRepositories::new(dir.path().join("repos"));
    let app = full("alice/app");
    host.create(&app, "", false, &author()).unwrap();
    let pushed = host.push(&app, None, &files(&[("compose.yaml", "services: {}\n")], "m"), &author()).unwrap();
    host.push(&app, Some("feature"), &files(&[("x", "y")], "m"), &author()).unwrap();

    // The policy allows no address at all: a dial would be refused.
    let strict = play_model::webhook::UrlPolicy::default();
    let config =
        GitConfig { hosted_root: Some(dir.path().join("repos")), ..GitConfig::new(dir.path().join("cache"), strict) };
    let gateway = GitGateway::new(config.clone()).unwrap();
    let hosted = RepositoryAccess {
        url: "https://play.example.com/git/alice/app.git".into(),
        token: None,
        reach: Reach::Builtin(app.clone()),
    };
    let refs = gateway.list_branches(&hosted).await.unwrap();
    assert_eq!(refs.default_branch.as_deref(), Some("main"));
    let names: Vec<_> = refs.branches.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["feature", "main"]);
    assert_eq!(refs.branches[1].commit, pushed.commit_sha);
    let read = gateway.read_files(&hosted, &pushed.commit_sha, &["compose.yaml".into(), "nope".into()], 1024).await;
    assert_eq!(read.unwrap(), [Some(b"services: {}\n".to_vec()), None]);
    assert!(!dir.path().join("cache").exists(), "nothing is copied into the commit cache");

    let gone = RepositoryAccess { reach: Reach::Builtin(full("alice/gone")), ..hosted.clone() };
    assert!(gateway.list_branches(&gone).await.unwrap_err().to_string().contains("not on play's Git host"));
    let lost = RepositoryAccess { reach: Reach::Lost("access was lost: because".into()), ..hosted.clone() };
    assert_eq!(gateway.list_branches(&lost).await.unwrap_err().to_string(), "access was lost: because");
    let off = GitGateway::new(GitConfig { hosted_root: None, ..config }).unwrap();
    assert!(off.list_branches(&hosted).await.unwrap_err().to_string().contains("turned off"));
}
