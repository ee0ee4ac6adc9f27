//! The stock `git` client, as a user runs it against play's own Git host:
//! no credential helper, no prompt, a fixed identity.

use std::path::Path;
use std::process::{Command, Output};

/// `git args` in `dir`.
pub fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "credential.helper="])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("git is installed (apt-get install git)")
}

/// The trimmed stdout of a command that must have succeeded.
pub fn ok(output: &Output) -> String {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// `url` with `key` as the HTTP Basic password.
pub fn with_key(url: &str, key: &str) -> String {
    url.replacen("http://", &format!("http://play:{key}@"), 1)
}
