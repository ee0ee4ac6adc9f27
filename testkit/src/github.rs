//! The loopback GitHub (`play_github::testing::FakeGithub`) backed by real
//! bare repositories that `play_git::testing::GitServer` serves over git's
//! smart HTTP, as the API tests and the end-to-end tests of `play serve`
//! both start it.
//!
//! The adapter lives here because neither harness crate may depend on the
//! other (play-github never depends on play-git).
#![expect(clippy::expect_used, reason = "test support: a panic with the reason is the failure report")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use play_git::testing::{Access, GitServer};
use play_github::testing::{FakeGithub, GitBackend, KeyPair};
use play_model::scm::host::ConfirmedInstallation;

/// The app id of the loopback GitHub's app.
pub const APP_ID: &str = "99";

/// A GitServer as the fake GitHub's repository store: a repository the
/// fake creates is a private bare repository that only the installation
/// tokens the fake issues for it can read and push.
struct Repositories(GitServer);

impl GitBackend for Repositories {
    fn create(&self, key: &str, _default_branch: &str) -> PathBuf {
        self.0.create_repo(key, Access::Private { token: "no-such-token-0123456789".into() }, &[]);
        self.0.repo_dir(key)
    }

    fn allow(&self, key: &str, token: &str) {
        self.0.allow_token(key, token);
    }

    fn revoke_all(&self, key: &str) {
        self.0.revoke_tokens(key);
    }

    fn url(&self, key: &str) -> String {
        self.0.url(key)
    }
}

/// The loopback GitHub with app [`APP_ID`], whose key pair is written to
/// `dir` (`app.pem`, `app.pub.pem`), and its own git server.
pub async fn start(dir: &Path) -> (FakeGithub, KeyPair) {
    let keys = KeyPair::generate(dir);
    let github = FakeGithub::start_with_git(APP_ID, &keys, Arc::new(Repositories(GitServer::start()))).await;
    (github, keys)
}

/// Installation `id` of `github` as a finished install flow confirms it
/// (what `repositories::claim_installation` records).
pub fn confirmed(github: &FakeGithub, id: u64) -> ConfirmedInstallation {
    let known = github.lock().installations.get(&id).cloned().expect("an installation of the fake");
    ConfirmedInstallation {
        external_id: id.to_string(),
        account_login: known.account_login,
        organisation: known.account_type == "Organization",
        suspended: false,
    }
}
