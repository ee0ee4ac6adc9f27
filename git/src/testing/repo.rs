//! Repository helpers of [`GitServer`]: the `git` CLI on the server's
//! bare repositories, with a fixed author, committer and date, so the
//! same contents always give the same commit ids.
#![expect(clippy::expect_used, reason = "test harness: a panic with the reason is the failure report")]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{Access, GitServer};

/// One path's contents in a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A regular file, mode 100644.
    File(Vec<u8>),
    /// An executable file, mode 100755.
    Executable(Vec<u8>),
    /// A symbolic link (mode 120000) to the target.
    Symlink(String),
}

pub fn file(contents: impl Into<Vec<u8>>) -> Entry {
    Entry::File(contents.into())
}

pub fn executable(contents: impl Into<Vec<u8>>) -> Entry {
    Entry::Executable(contents.into())
}

pub fn symlink(target: &str) -> Entry {
    Entry::Symlink(target.to_owned())
}

impl GitServer {
    /// Where repository `name` is on disk (a bare repository).
    pub fn repo_dir(&self, name: &str) -> std::path::PathBuf {
        self.shared.root.join(format!("{name}.git"))
    }

    /// Runs git in repository `name` (or none) with `stdin`; its stdout,
    /// trimmed; panics with its output when it fails.
    fn git(&self, dir: Option<&Path>, args: &[&str], stdin: &[u8], index: Option<&Path>) -> String {
        let mut command = Command::new("git");
        command
            .args(args)
            .env("HOME", &self.shared.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "play test")
            .env("GIT_AUTHOR_EMAIL", "test@play.invalid")
            .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
            .env("GIT_COMMITTER_NAME", "play test")
            .env("GIT_COMMITTER_EMAIL", "test@play.invalid")
            .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = dir {
            command.env("GIT_DIR", dir);
        }
        if let Some(index) = index {
            command.env("GIT_INDEX_FILE", index);
        }
        let shown = format!("git {}", args.join(" "));
        let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot run {shown}: {e} (apt-get install git)"));
        child.stdin.take().expect("stdin").write_all(stdin).expect("write git stdin");
        let output = child.wait_with_output().expect("wait for git");
        assert!(output.status.success(), "{shown} failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Creates repository `name` (URL [`GitServer::url`]) with one commit
    /// per branch holding exactly `files`; the first branch is the default
    /// (`HEAD`). Returns the commit ids, in the order of `branches`.
    /// Pushes are allowed, and so is fetching any reachable commit by id.
    pub fn create_repo(&self, name: &str, access: Access, branches: &[(&str, &[(&str, Entry)])]) -> Vec<String> {
        let dir = self.repo_dir(name);
        let default = branches.first().map(|(b, _)| *b).unwrap_or("main");
        let dir_text = dir.to_string_lossy().into_owned();
        self.git(None, &["init", "--quiet", "--bare", "-b", default, &dir_text], b"", None);
        for (key, value) in [("http.receivepack", "true"), ("uploadpack.allowReachableSHA1InWant", "true")] {
            self.git(Some(&dir), &["config", key, value], b"", None);
        }
        self.shared.repos.lock().expect("repositories").insert(name.to_owned(), access);
        branches.iter().map(|(branch, files)| self.commit(name, branch, files)).collect()
    }

    /// Adds a commit to `branch` of `name` (creating the branch): its tree
    /// is the branch's with `files` added or replaced. Returns its id.
    pub fn commit(&self, name: &str, branch: &str, files: &[(&str, Entry)]) -> String {
        let dir = self.repo_dir(name);
        let index_dir = tempfile::tempdir().expect("index dir");
        let index = index_dir.path().join("index");
        let index = Some(index.as_path());
        let parent = self.branch_commit(name, branch);
        match &parent {
            Some(parent) => self.git(Some(&dir), &["read-tree", parent], b"", index),
            None => self.git(Some(&dir), &["read-tree", "--empty"], b"", index),
        };
        for (path, entry) in files {
            let (mode, bytes) = match entry {
                Entry::File(b) => ("100644", b.as_slice()),
                Entry::Executable(b) => ("100755", b.as_slice()),
                Entry::Symlink(t) => ("120000", t.as_bytes()),
            };
            let blob = self.git(Some(&dir), &["hash-object", "-w", "--stdin"], bytes, None);
            let info = format!("{mode},{blob},{path}");
            self.git(Some(&dir), &["update-index", "--add", "--cacheinfo", &info], b"", index);
        }
        let tree = self.git(Some(&dir), &["write-tree"], b"", index);
        let message = format!("play test commit on {branch}");
        let mut args = vec!["commit-tree", tree.as_str(), "-m", message.as_str()];
        if let Some(parent) = &parent {
            args.extend(["-p", parent.as_str()]);
        }
        let commit = self.git(Some(&dir), &args, b"", None);
        self.git(Some(&dir), &["update-ref", &format!("refs/heads/{branch}"), &commit], b"", None);
        commit
    }

    /// Creates (or moves) many branches of `name` at existing commits in
    /// one `git update-ref --stdin`: repositories with thousands of
    /// branches for benchmarks.
    pub fn set_branches(&self, name: &str, branches: &[(String, String)]) {
        let dir = self.repo_dir(name);
        let script: String =
            branches.iter().map(|(branch, commit)| format!("update refs/heads/{branch} {commit}\n")).collect();
        self.git(Some(&dir), &["update-ref", "--stdin"], script.as_bytes(), None);
    }

    /// The commit `branch` of `name` points at on the server, if any.
    pub fn branch_commit(&self, name: &str, branch: &str) -> Option<String> {
        let output = Command::new("git")
            .args(["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}^{{commit}}")])
            .env("GIT_DIR", self.repo_dir(name))
            .env("HOME", &self.shared.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("run git rev-parse (apt-get install git)");
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// Installs a `pre-receive` hook that rejects every push with
    /// `message` (the remote's reason a client should show).
    pub fn reject_pushes(&self, name: &str, message: &str) {
        let hook = self.repo_dir(name).join("hooks").join("pre-receive");
        std::fs::create_dir_all(hook.parent().expect("hooks dir")).expect("hooks dir");
        std::fs::write(&hook, format!("#!/bin/sh\necho '{message}' >&2\nexit 1\n")).expect("write hook");
        let mut permissions = std::fs::metadata(&hook).expect("hook").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&hook, permissions).expect("chmod hook");
    }
}
