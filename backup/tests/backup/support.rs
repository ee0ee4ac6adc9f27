//! An installation to back up (a store with rows, a master key, a Git
//! host repository with a commit) and empty targets to restore into.

use std::path::{Path, PathBuf};
use std::process::Command;

use play_backup::{Manifest, Output, Source, Target};
use play_model::secrets::MasterKey;
use play_store::{Store, testing};

pub struct Installation {
    pub store: Store,
    /// The account of the store's rows.
    pub account: i64,
    pub source: Source,
    pub key: MasterKey,
    /// The master key's file, kept apart from the backup.
    pub key_file: PathBuf,
    pub data: tempfile::TempDir,
    _db: testing::TestStore,
}

impl Installation {
    /// A store with a Playroom and a Playground, its master key recorded,
    /// and a repository `acme/app` with one commit.
    pub async fn new() -> Installation {
        let db = testing::store().await;
        let store = db.store.clone();
        let (account, room) = testing::playroom_row(&store).await;
        testing::insert_playground(&store, account, room).await;
        let data = tempfile::tempdir().unwrap();
        let key_file = data.path().join("master.key");
        let (key, _) = MasterKey::load_or_create(&key_file).unwrap();
        play_store::master_key::check(&store, &key.fingerprint()).await.unwrap();
        let git_root = data.path().join("repositories");
        commit_to_new_repository(&git_root.join("acme/app.git"), "hello");
        let source = Source { database_url: db.url.clone(), data_dir: data.path().to_owned(), git_root };
        Installation { store, account, source, key, key_file, data, _db: db }
    }

    /// A backup into a new file: (the file, the manifest written).
    pub async fn back_up(&self) -> (PathBuf, Manifest) {
        let file = self.data.path().join("out").join("backup.tar.zst");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let manifest = play_backup::backup(&self.source, &Output::File(file.clone()), &|_| {}).await.unwrap();
        (file, manifest)
    }
}

/// An empty target of the test's store kind, with a copy of `key_file`
/// in its data directory (`None`: no key file).
pub struct EmptyTarget {
    pub target: Target,
    _dir: tempfile::TempDir,
    _db_dir: Option<tempfile::TempDir>,
}

pub async fn empty_target(key_file: Option<&Path>) -> EmptyTarget {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let (database_url, db_dir) = match testing::backend() {
        play_store::Backend::Sqlite => (format!("sqlite://{}", data_dir.join("play.db").display()), None),
        play_store::Backend::Postgres => testing::fresh_database_url().await,
    };
    let master_key_file = data_dir.join("master.key");
    if let Some(key_file) = key_file {
        std::fs::create_dir_all(&data_dir).unwrap();
        std::fs::copy(key_file, &master_key_file).unwrap();
    }
    let git_root = data_dir.join("repositories");
    let quarantine = std::time::Duration::from_secs(3600);
    let target = Target { database_url, git_root, data_dir, master_key_file, quarantine };
    EmptyTarget { target, _dir: dir, _db_dir: db_dir }
}

/// Restores `archive` into `target`.
pub async fn restore(archive: &Path, target: &Target) -> play_backup::Result<play_backup::Restored> {
    play_backup::restore(std::fs::File::open(archive).unwrap(), target, &|_| {}).await
}

/// Runs git with `args` in `dir`; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A bare repository at `bare` with one commit on `main` holding
/// `README` = `text`.
pub fn commit_to_new_repository(bare: &Path, text: &str) {
    std::fs::create_dir_all(bare).unwrap();
    git(bare, &["init", "--bare", "-q"]);
    push_commit(bare, text);
}

/// Pushes one more commit to `main` of `bare`: its id.
pub fn push_commit(bare: &Path, text: &str) -> String {
    let work = tempfile::tempdir().unwrap();
    git(work.path(), &["clone", "-q", bare.to_str().unwrap(), "w"]);
    let w = work.path().join("w");
    std::fs::write(w.join("README"), text).unwrap();
    git(&w, &["add", "README"]);
    git(&w, &["commit", "-q", "-m", text]);
    git(&w, &["push", "-q", "origin", "HEAD:main"]);
    git(&w, &["rev-parse", "HEAD"])
}
