//! The loopback GitHub (`play_github::testing::FakeGithub`) for `play
//! serve`: its repositories are bare repositories that
//! `play_git::testing::GitServer` serves over git's smart HTTP, and the
//! settings of `play serve` that point its GitHub App at it.

use std::path::PathBuf;
use std::sync::Arc;

use play_git::testing::{Access, GitServer};
use play_github::testing::{APP_SLUG, CLIENT_ID, CLIENT_SECRET, FakeGithub, GitBackend, KeyPair};
use play_model::scm::host::ConfirmedInstallation;
use play_model::scm::model::Provider;

use super::serve::Play;

/// The webhook secret `play serve` and the test share.
pub const WEBHOOK_SECRET: &str = "a webhook secret only GitHub and play know";

/// The GitServer as the fake GitHub's repository store (the GitHub crate
/// may not depend on play's Git crate: `tests/e2e/dependency_directions.rs`;
/// `api/tests/api/support/github.rs` has the same adapter).
struct Backend(GitServer);

impl GitBackend for Backend {
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

/// The fake GitHub (app 99) and the files `play serve` reads its settings
/// from.
pub struct Github {
    pub github: FakeGithub,
    pub dir: tempfile::TempDir,
}

impl Github {
    pub async fn start() -> Github {
        let dir = tempfile::tempdir().expect("temp dir");
        let keys = KeyPair::generate(dir.path());
        let github = FakeGithub::start_with_git("99", &keys, Arc::new(Backend(GitServer::start()))).await;
        std::fs::write(dir.path().join("client-secret"), CLIENT_SECRET).expect("write");
        std::fs::write(dir.path().join("webhook-secret"), WEBHOOK_SECRET).expect("write");
        Github { github, dir }
    }

    /// `play` with its GitHub App on the fake, the fake's loopback address
    /// allowed over plain HTTP.
    pub fn configure(&self, play: Play) -> Play {
        let url = self.github.api_url();
        play.env("PLAY_GITHUB_APP_ID", "99")
            .env("PLAY_GITHUB_APP_SLUG", APP_SLUG)
            .env("PLAY_GITHUB_APP_KEY_FILE", self.dir.path().join("app.pem"))
            .env("PLAY_GITHUB_CLIENT_ID", CLIENT_ID)
            .env("PLAY_GITHUB_CLIENT_SECRET_FILE", self.dir.path().join("client-secret"))
            .env("PLAY_GITHUB_WEBHOOK_SECRET_FILE", self.dir.path().join("webhook-secret"))
            .env("PLAY_GITHUB_API_URL", &url)
            .env("PLAY_GITHUB_WEB_URL", &url)
            .env("PLAY_REPOSITORY_ALLOW_HTTP", "true")
            .env("PLAY_REPOSITORY_ALLOWLIST", "127.0.0.1")
    }

    /// Connects GitHub installation `id` to account `name` of `play`'s
    /// store, as a finished install flow does.
    pub async fn connect(&self, play: &Play, name: &str, id: u64) {
        let known = self.github.lock().installations.get(&id).cloned().expect("an installation of the fake");
        let store = play_store::Store::connect(play.database_url()).await.expect("the store");
        let account = play_store::accounts::find_account_by_name(&store, name).await.expect("the account").id;
        let confirmed = ConfirmedInstallation {
            external_id: id.to_string(),
            account_login: known.account_login,
            organisation: known.account_type == "Organization",
            suspended: false,
        };
        play_store::repositories::claim_installation(&store, account, Provider::Github, &confirmed)
            .await
            .expect("claim the installation");
    }

    /// Sends `body` as GitHub delivers event `event`, signed with
    /// `secret`: the status play answers.
    pub async fn deliver(base: &str, event: &str, delivery: &str, body: &serde_json::Value, secret: &str) -> u16 {
        let bytes = serde_json::to_vec(body).expect("json");
        let signature = play_model::webhook::delivery::spec_signature(secret, &bytes);
        reqwest::Client::new()
            .post(format!("{base}/api/scm_installations/github/webhook"))
            .header("content-type", "application/json")
            .header("x-github-event", event)
            .header("x-github-delivery", delivery)
            .header("x-hub-signature-256", signature)
            .body(bytes)
            .send()
            .await
            .expect("the webhook answers")
            .status()
            .as_u16()
    }
}
