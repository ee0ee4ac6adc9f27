//! A [`TestApp`] with play's own Git host in a temporary folder, and the
//! stock `git` client (apt-get install git) to read back what was written.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use play_api::testing::TestApp;
use play_git::builtin::BuiltinHost;
use play_git::hosted::HostedRepositories;

/// The app and the folder its host keeps repositories in.
pub struct Hosted {
    pub app: TestApp,
    pub dir: tempfile::TempDir,
}

impl Hosted {
    pub async fn new() -> Hosted {
        Hosted::with_app(TestApp::new().await)
    }

    pub fn with_app(app: TestApp) -> Hosted {
        let dir = tempfile::tempdir().unwrap();
        let host = BuiltinHost::new(HostedRepositories::new(dir.path().join("repos")), "https://play.example.com");
        Hosted { app: app.with_source_host(Arc::new(host)), dir }
    }

    pub fn repo_path(&self, full_name: &str) -> PathBuf {
        self.dir.path().join("repos").join(format!("{full_name}.git"))
    }

    /// `git log --format=%s` and the files of the default branch, from a
    /// stock clone.
    pub fn cloned(&self, full_name: &str) -> (Vec<String>, Vec<String>) {
        let target = self.dir.path().join(format!("clone-{}", full_name.replace('/', "-")));
        let _ = std::fs::remove_dir_all(&target);
        git(
            self.dir.path(),
            &["clone", "--quiet", self.repo_path(full_name).to_str().unwrap(), target.to_str().unwrap()],
        );
        let log = git(&target, &["log", "--format=%s"]).lines().map(str::to_owned).collect();
        let files = git(&target, &["ls-files"]).lines().map(str::to_owned).collect();
        (log, files)
    }
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").current_dir(dir).args(args).output().expect("git is installed");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}
