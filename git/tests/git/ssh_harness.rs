//! The SSH front of the test harness ([`GitServer::ssh`]) against the real
//! `git` and `ssh` CLIs: an authorized key lists, clones and pushes; a key
//! that was not authorized is refused; an authorized key runs git commands
//! only. (Debian packages `openssh-server`, `openssh-client`, `git`.)
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use play_git::testing::{Access, GitServer, GitSsh, file};
use play_model::ssh_keys::{self, GeneratedKeyPair};
use tempfile::TempDir;

/// A client of [`GitSsh`]: its own `HOME`, key file and `known_hosts`.
struct Client {
    dir: TempDir,
    key: PathBuf,
    known_hosts: PathBuf,
}

impl Client {
    fn new(ssh: &GitSsh, key: &GeneratedKeyPair) -> Client {
        let dir = tempfile::Builder::new().prefix("play-git-ssh-client-").tempdir().unwrap();
        let path = dir.path().join("id_ed25519");
        fs::write(&path, &key.private_openssh).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let known_hosts = dir.path().join("known_hosts");
        fs::write(&known_hosts, format!("[127.0.0.1]:{} {}\n", ssh.port(), ssh.host_key())).unwrap();
        fs::create_dir(dir.path().join("home")).unwrap();
        Client { dir, key: path, known_hosts }
    }

    /// The ssh options: this key only, this known_hosts only, no prompt,
    /// and no user configuration (`-F /dev/null`: ssh finds `~/.ssh` from
    /// the password database, not `HOME`).
    fn ssh_options(&self) -> Vec<String> {
        let mut options = vec!["-F".to_owned(), "/dev/null".to_owned(), "-i".to_owned()];
        options.push(self.key.display().to_string());
        for option in [
            "IdentitiesOnly=yes".to_owned(),
            format!("UserKnownHostsFile={}", self.known_hosts.display()),
            "StrictHostKeyChecking=yes".to_owned(),
            "BatchMode=yes".to_owned(),
        ] {
            options.extend(["-o".to_owned(), option]);
        }
        options
    }

    /// `git <args>` in `cwd` over this client's ssh.
    fn git(&self, cwd: &Path, args: &[&str]) -> Output {
        Command::new("git")
            .args(args)
            .current_dir(cwd)
            .env("HOME", self.dir.path().join("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_SSH_COMMAND", format!("ssh {}", self.ssh_options().join(" ")))
            .env("GIT_AUTHOR_NAME", "play test")
            .env("GIT_AUTHOR_EMAIL", "test@play.invalid")
            .env("GIT_COMMITTER_NAME", "play test")
            .env("GIT_COMMITTER_EMAIL", "test@play.invalid")
            .output()
            .expect("run git (apt-get install git)")
    }

    /// Runs `git <args>` in `cwd`; its stdout; panics with its output and
    /// sshd's log when it fails.
    fn git_ok(&self, ssh: &GitSsh, cwd: &Path, args: &[&str]) -> String {
        let output = self.git(cwd, args);
        assert!(
            output.status.success(),
            "git {args:?} failed ({}):\nstderr: {}\nsshd log:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr),
            ssh.log()
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

#[test]
fn the_ssh_front_serves_the_servers_repositories_to_authorized_keys_only() {
    let server = GitServer::start();
    let commits = server.create_repo("app", Access::Public, &[("main", &[("README", file("hello over ssh"))])]);
    let ssh = server.ssh();
    let key = ssh_keys::generate_ed25519("play-git-ssh-test").unwrap();
    ssh.authorize(&key.public_openssh);
    let client = Client::new(&ssh, &key);
    let url = ssh.url("app");
    let work = client.dir.path();

    // ls-remote: the branch, at the server's commit.
    let listed = client.git_ok(&ssh, work, &["ls-remote", &url]);
    let main = server.branch_commit("app", "main").unwrap();
    assert_eq!(main, commits[0]);
    assert!(listed.lines().any(|l| l == format!("{main}\trefs/heads/main")), "ls-remote listed:\n{listed}");

    // clone, commit, push a new branch: the server's repository has it.
    client.git_ok(&ssh, work, &["clone", "--quiet", &url, "clone"]);
    let clone = work.join("clone");
    assert_eq!(fs::read_to_string(clone.join("README")).unwrap(), "hello over ssh");
    fs::write(clone.join("NEW"), "pushed over ssh").unwrap();
    client.git_ok(&ssh, &clone, &["add", "NEW"]);
    client.git_ok(&ssh, &clone, &["commit", "--quiet", "-m", "over ssh"]);
    let pushed = client.git_ok(&ssh, &clone, &["rev-parse", "HEAD"]).trim().to_owned();
    client.git_ok(&ssh, &clone, &["push", "--quiet", "origin", "HEAD:refs/heads/feature"]);
    assert_eq!(server.branch_commit("app", "feature").as_deref(), Some(pushed.as_str()));
    assert_eq!(server.branch_commit("app", "main").as_deref(), Some(main.as_str()), "main is untouched");

    // A key that was never authorized is refused.
    let stranger = Client::new(&ssh, &ssh_keys::generate_ed25519("stranger").unwrap());
    let refused = stranger.git(stranger.dir.path(), &["ls-remote", &url]);
    assert!(!refused.status.success(), "an unknown key listed: {}", String::from_utf8_lossy(&refused.stdout));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("Permission denied"), "refused with: {stderr}");

    // An authorized key runs git commands only: git-shell refuses a shell.
    let shell = Command::new("ssh")
        .args(client.ssh_options())
        .args(["-p", &ssh.port().to_string(), &format!("{}@127.0.0.1", ssh.user()), "echo", "hi"])
        .env("HOME", client.dir.path().join("home"))
        .output()
        .expect("run ssh (apt-get install openssh-client)");
    let stdout = String::from_utf8_lossy(&shell.stdout);
    assert!(!shell.status.success() && !stdout.contains("hi"), "a shell command ran: {stdout}");
    let stderr = String::from_utf8_lossy(&shell.stderr);
    assert!(stderr.contains("unrecognized command"), "git-shell's refusal: {stderr}\nsshd log:\n{}", ssh.log());
}
