//! Reading files, archiving trees and creating branches against a real
//! git smart-HTTP server on loopback (`git http-backend`: apt-get install
//! git), with the commit cache, the bounds and token hygiene.

use std::collections::BTreeMap;
use std::io::Read as _;

use crate::common::{World, any_file_contains, noise};
use play_git::testing::{Access, Entry, executable, file, symlink};
use play_model::repository::{ArchiveOptions, ByteBudget, RepositoryError, RepositoryGateway, TreeEntry};

fn tree() -> Vec<(&'static str, Entry)> {
    vec![
        ("compose.yaml", file("services: {}\n")),
        ("bin/run.sh", executable("#!/bin/sh\necho hi\n")),
        ("app/src/main.rs", file("fn main() {}\n")),
        ("app/Dockerfile", file("FROM scratch\n")),
        ("app/link", symlink("../compose.yaml")),
        ("escape", symlink("/etc/passwd")),
    ]
}

/// path -> (kind, mode, contents or link target).
#[expect(clippy::unwrap_used, reason = "test helper: a panic is the failure report")]
fn entries(archive: &[u8]) -> BTreeMap<String, (char, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    for entry in tar::Archive::new(archive).entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let header = entry.header().clone();
        let kind = match header.entry_type() {
            tar::EntryType::Regular => 'f',
            tar::EntryType::Directory => 'd',
            tar::EntryType::Symlink => 'l',
            other => panic!("unexpected entry {other:?}"),
        };
        let mut data = Vec::new();
        if kind == 'l' {
            data = entry.link_name().unwrap().unwrap().to_string_lossy().into_owned().into_bytes();
        } else {
            entry.read_to_end(&mut data).unwrap();
        }
        out.insert(path, (kind, header.mode().unwrap(), data));
    }
    out
}

#[tokio::test]
async fn reads_files_at_a_commit_and_reuses_the_cache() {
    let world = World::new();
    let commits = world.server.create_repo("app", Access::Public, &[("main", &tree())]);
    let paths: Vec<String> =
        ["compose.yaml", "missing.txt", "app/link", "app", "bin/run.sh", "../x", "/compose.yaml", ""]
            .iter()
            .map(|p| p.to_string())
            .collect();
    let files = world.gateway.read_files(&world.public("app"), &commits[0], &paths, 1024).await.unwrap();
    let mut expected = vec![None; paths.len()];
    expected[0] = Some(b"services: {}\n".to_vec());
    expected[4] = Some(b"#!/bin/sh\necho hi\n".to_vec());
    assert_eq!(files, expected);
    let requests = world.server.request_count();
    let again = world.gateway.read_files(&world.public("app"), &commits[0], &paths[..1], 1024).await.unwrap();
    assert_eq!(again, vec![Some(b"services: {}\n".to_vec())]);
    assert_eq!(world.server.request_count(), requests, "the cached commit was fetched again");
    let error = world.gateway.read_files(&world.public("app"), &commits[0], &paths[..1], 5).await.unwrap_err();
    assert!(matches!(error, RepositoryError::TooLarge(_)), "{error:?}");
}

#[tokio::test]
async fn an_older_commit_is_fetched_by_id_and_an_unknown_one_is_not_found() {
    let world = World::new();
    let first = world.server.create_repo("app", Access::Public, &[("main", &[("v", file("1"))])]).remove(0);
    let second = world.server.commit("app", "main", &[("v", file("2"))]);
    let access = world.public("app");
    let read = |commit: String| {
        let (gateway, access) = (&world.gateway, &access);
        async move { gateway.read_files(access, &commit, &["v".to_string()], 10).await }
    };
    assert_eq!(read(second).await.unwrap(), vec![Some(b"2".to_vec())]);
    assert_eq!(read(first).await.unwrap(), vec![Some(b"1".to_vec())]);
    let error = read("0123456789abcdef0123456789abcdef01234567".into()).await.unwrap_err();
    assert!(matches!(error, RepositoryError::NotFound(_)), "{error:?}");
    let error = read("main".into()).await.unwrap_err();
    assert!(matches!(error, RepositoryError::Failed(_)), "{error:?}");
}

#[tokio::test]
async fn archives_a_tree_with_modes_and_links_never_followed() {
    let world = World::new();
    let commit = world.server.create_repo("app", Access::Public, &[("main", &tree())]).remove(0);
    let access = world.public("app");
    let whole = entries(&world.gateway.archive(&access, &commit, "", 1 << 20).await.unwrap());
    assert_eq!(whole["compose.yaml"], ('f', 0o644, b"services: {}\n".to_vec()));
    assert_eq!(whole["bin/run.sh"], ('f', 0o755, b"#!/bin/sh\necho hi\n".to_vec()));
    assert_eq!(whole["app/link"], ('l', 0o777, b"../compose.yaml".to_vec()));
    assert_eq!(whole["escape"], ('l', 0o777, b"/etc/passwd".to_vec()));
    assert_eq!(whole["bin"].0, 'd');
    assert_eq!(whole["app/src"].0, 'd');
    let sub = entries(&world.gateway.archive(&access, &commit, "app/", 1 << 20).await.unwrap());
    let names: Vec<&str> = sub.keys().map(String::as_str).collect();
    assert_eq!(names, vec!["Dockerfile", "link", "src", "src/main.rs"]);
    for (subdir, refused) in
        [("../app", true), ("/app", true), ("app/../..", true), ("nope", false), ("compose.yaml", false)]
    {
        let error = world.gateway.archive(&access, &commit, subdir, 1 << 20).await.unwrap_err();
        let ok = if refused {
            matches!(error, RepositoryError::Refused(_))
        } else {
            matches!(error, RepositoryError::NotFound(_))
        };
        assert!(ok, "{subdir}: {error:?}");
    }
    let whole_len = world.gateway.archive(&access, &commit, "", 1 << 20).await.unwrap().len() as u64;
    assert!(world.gateway.archive(&access, &commit, "", whole_len).await.is_ok());
    let error = world.gateway.archive(&access, &commit, "", whole_len - 1).await.unwrap_err();
    assert!(matches!(error, RepositoryError::TooLarge(_)), "{error:?}");
}

/// Issue #27, item 6: a build context written to a file as it is made,
/// left out what `.dockerignore` excludes but the Dockerfile, the same
/// entries as the archive in memory otherwise, and the same bound.
#[tokio::test]
async fn a_context_is_written_to_a_file_without_what_dockerignore_excludes() {
    let world = World::new();
    let mut files = tree();
    files.push(("app/secrets/key", file("k")));
    files.push(("app/secrets/keep.txt", file("kept")));
    files.push(("app/README.md", file("r")));
    let commit = world.server.create_repo("app", Access::Public, &[("main", &files)]).remove(0);
    let access = world.public("app");
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("context.tar");
    std::fs::write(&to, b"").unwrap();
    let rules =
        play_model::build::dockerignore::Rules::parse("*.md\nsecrets\n!secrets/keep.txt\nDockerfile\n").unwrap();
    let options = ArchiveOptions { rules, dockerfile: "Dockerfile".into(), ..ArchiveOptions::default() };
    let bytes = world.gateway.archive_to_file(&access, &commit, "app", 1 << 20, options, to.clone()).await.unwrap();
    let written = std::fs::read(&to).unwrap();
    assert_eq!(bytes, written.len() as u64);
    let got = entries(&written);
    let names: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(names, ["Dockerfile", "link", "secrets/keep.txt", "src", "src/main.rs"], "the Dockerfile always goes");
    assert_eq!(got["link"], ('l', 0o777, b"../compose.yaml".to_vec()));

    // Without rules: the same archive as in memory; the bound holds.
    let unfiltered =
        world.gateway.archive_to_file(&access, &commit, "", 1 << 20, ArchiveOptions::default(), to.clone());
    unfiltered.await.unwrap();
    let in_memory = world.gateway.archive(&access, &commit, "", 1 << 20).await.unwrap();
    assert_eq!(std::fs::read(&to).unwrap(), in_memory);
    let small = world.gateway.archive_to_file(&access, &commit, "", 1024, ArchiveOptions::default(), to).await;
    assert!(matches!(small, Err(RepositoryError::TooLarge(_))), "{small:?}");
}

/// Takes bytes up to a bound, as an account's ledger does.
#[derive(Debug)]
struct Budget {
    left: std::sync::Mutex<u64>,
}

impl ByteBudget for Budget {
    fn take(&self, bytes: u64) -> bool {
        let mut left = self.left.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let ok = bytes <= *left;
        if ok {
            *left -= bytes;
        }
        ok
    }
}

/// Issue #27, item 6, for source fills: a folder spooled under a prefix
/// with a last file after everything else, and every byte written taken
/// from the budget first; a budget too small is `Busy`, not `TooLarge`.
#[tokio::test]
async fn an_archive_goes_under_its_prefix_ends_with_its_last_file_and_is_charged() {
    let world = World::new();
    let commit = world.server.create_repo("app", Access::Public, &[("main", &tree())]).remove(0);
    let access = world.public("app");
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("fill.tar");
    std::fs::write(&to, b"").unwrap();
    let budget = std::sync::Arc::new(Budget { left: std::sync::Mutex::new(1 << 20) });
    let options = ArchiveOptions {
        prefix: "content".into(),
        last: Some((".marker".into(), b"abc".to_vec())),
        budget: Some(budget.clone()),
        ..ArchiveOptions::default()
    };
    let bytes =
        world.gateway.archive_to_file(&access, &commit, "app", 1 << 20, options.clone(), to.clone()).await.unwrap();
    let written = std::fs::read(&to).unwrap();
    let mut order = Vec::new();
    for entry in tar::Archive::new(written.as_slice()).entries().unwrap() {
        order.push(entry.unwrap().path().unwrap().to_string_lossy().into_owned());
    }
    assert_eq!(order.first().map(String::as_str), Some("content"), "{order:?}");
    assert_eq!(order.last().map(String::as_str), Some(".marker"), "{order:?}");
    assert!(order[1..order.len() - 1].iter().all(|p| p.starts_with("content/")), "{order:?}");
    assert_eq!(entries(&written)[".marker"], ('f', 0o444, b"abc".to_vec()));
    // Everything but the closing blocks was charged.
    let charged = (1 << 20) - *budget.left.lock().unwrap();
    assert_eq!(charged, bytes - 1024);

    let starved =
        ArchiveOptions { budget: Some(std::sync::Arc::new(Budget { left: std::sync::Mutex::new(600) })), ..options };
    let error = world.gateway.archive_to_file(&access, &commit, "app", 1 << 20, starved, to).await.unwrap_err();
    assert!(matches!(error, RepositoryError::Busy(_)), "{error:?}");
}

#[tokio::test]
async fn an_entry_is_a_file_a_folder_a_link_or_missing_and_links_on_the_way_are_reported() {
    let world = World::new();
    let commit = world.server.create_repo("app", Access::Public, &[("main", &tree())]).remove(0);
    let access = world.public("app");
    let entry = |path: &'static str, max: u64| {
        let (gateway, access, commit) = (&world.gateway, &access, &commit);
        async move { gateway.entry(access, commit, path, max).await }
    };
    assert_eq!(
        entry("bin/run.sh", 1024).await.unwrap(),
        TreeEntry::File { contents: b"#!/bin/sh\necho hi\n".to_vec(), executable: true }
    );
    assert_eq!(
        entry("compose.yaml", 1024).await.unwrap(),
        TreeEntry::File { contents: b"services: {}\n".to_vec(), executable: false }
    );
    let TreeEntry::Directory(archive) = entry("app", 1 << 20).await.unwrap() else { panic!("app is a folder") };
    let names: Vec<String> = entries(&archive).into_keys().collect();
    assert_eq!(names, ["Dockerfile", "link", "src", "src/main.rs"]);
    assert!(matches!(entry("", 1 << 20).await.unwrap(), TreeEntry::Directory(_)), "the root is a folder");
    assert_eq!(entry("escape", 1024).await.unwrap(), TreeEntry::Link("escape".into()));
    assert_eq!(entry("app/link", 1024).await.unwrap(), TreeEntry::Link("app/link".into()));
    // A link on the way is reported, not followed (`escape` -> /etc).
    assert_eq!(entry("escape/shadow", 1024).await.unwrap(), TreeEntry::Link("escape".into()));
    assert_eq!(entry("missing/file", 1024).await.unwrap(), TreeEntry::Missing);
    assert_eq!(entry("compose.yaml/inside", 1024).await.unwrap(), TreeEntry::Missing, "a file is no folder");
    let error = entry("bin/run.sh", 4).await.unwrap_err();
    assert!(matches!(error, RepositoryError::TooLarge(_)), "{error:?}");
    let error = entry("../etc/passwd", 1024).await.unwrap_err();
    assert!(matches!(error, RepositoryError::Refused(_)), "{error:?}");
}

#[tokio::test]
async fn a_fetch_bigger_than_its_bound_is_too_large() {
    let world = World::with(|config| config.max_fetch_bytes = 64 * 1024);
    let big = noise(512 * 1024);
    let commit = world.server.create_repo("big", Access::Public, &[("main", &[("blob", file(big))])]).remove(0);
    let access = world.public("big");
    assert!(world.gateway.list_branches(&access).await.is_ok(), "the advertisement fits the bound");
    let error = world.gateway.read_files(&access, &commit, &["blob".to_string()], usize::MAX).await.unwrap_err();
    assert!(matches!(error, RepositoryError::TooLarge(_)), "{error:?}");
}

#[tokio::test]
async fn creates_a_branch_idempotently_and_refuses_one_elsewhere() {
    let world = World::new();
    let token = "tok-push-777";
    let commits = world.server.create_repo(
        "app",
        Access::Private { token: token.into() },
        &[("main", &[("a", file("1"))]), ("other", &[("a", file("2"))])],
    );
    let older = commits[0].clone();
    let main = world.server.commit("app", "main", &[("a", file("3"))]);
    let access = world.private("app", token);
    world.gateway.create_branch(&access, "play/pr-1", &older).await.unwrap();
    assert_eq!(world.server.branch_commit("app", "play/pr-1").as_deref(), Some(older.as_str()));
    world.gateway.create_branch(&access, "play/pr-1", &older).await.unwrap();
    world.gateway.create_branch(&access, "play/pr-2", &main).await.unwrap();
    assert_eq!(world.server.branch_commit("app", "play/pr-2").as_deref(), Some(main.as_str()));
    let error = world.gateway.create_branch(&access, "other", &main).await.unwrap_err();
    assert!(matches!(&error, RepositoryError::Failed(m) if m.contains("already exists")), "{error:?}");
    assert_eq!(world.server.branch_commit("app", "other").as_deref(), Some(commits[1].as_str()));
    let before = world.server.request_count();
    for bad in ["../x", "a..b", "-x", "HEAD", "a b", "x.lock"] {
        let error = world.gateway.create_branch(&access, bad, &main).await.unwrap_err();
        assert!(matches!(error, RepositoryError::Failed(_)), "{bad}: {error:?}");
    }
    assert_eq!(world.server.request_count(), before, "an invalid name is refused before any request");
    let error = world.gateway.create_branch(&world.private("app", "tok-bad"), "x", &main).await.unwrap_err();
    assert!(matches!(error, RepositoryError::Unauthorized(_)), "{error:?}");
    world.server.reject_pushes("app", "branch creation is frozen");
    let error = world.gateway.create_branch(&access, "play/pr-3", &main).await.unwrap_err();
    assert!(matches!(&error, RepositoryError::Failed(m) if m.contains("rejected")), "{error:?}");
    assert_eq!(world.server.branch_commit("app", "play/pr-3"), None);
}

#[tokio::test]
async fn the_token_never_reaches_a_url_an_error_or_the_cache() {
    let world = World::with(|config| config.max_fetch_bytes = 1 << 20);
    let token = "tok-never-seen-31337";
    let commit =
        world.server.create_repo("app", Access::Private { token: token.into() }, &[("main", &tree())]).remove(0);
    let access = world.private("app", token);
    world.gateway.list_branches(&access).await.unwrap();
    world.gateway.read_files(&access, &commit, &["compose.yaml".to_string()], 1024).await.unwrap();
    world.gateway.archive(&access, &commit, "", 1 << 20).await.unwrap();
    world.gateway.create_branch(&access, "play/t", &commit).await.unwrap();
    let mut errors = Vec::new();
    errors.push(world.gateway.read_files(&access, &commit, &["compose.yaml".to_string()], 1).await.unwrap_err());
    errors.push(world.gateway.archive(&access, &commit, "", 10).await.unwrap_err());
    errors.push(world.gateway.create_branch(&access, "main", &"0".repeat(40)).await.unwrap_err());
    let unknown = "0123456789abcdef0123456789abcdef01234567";
    errors.push(world.gateway.read_files(&access, unknown, &[], 1).await.unwrap_err());
    for error in &errors {
        assert!(!format!("{error} {error:?}").contains(token), "{error:?}");
    }
    let requests = world.server.requests();
    assert!(requests.iter().all(|r| r.authorization && !r.uri.contains(token)), "{requests:?}");
    assert_eq!(any_file_contains(world.cache.path(), token.as_bytes()), None, "the token is in the cache");
    assert!(!format!("{:?}", world.gateway).contains(token));
}
