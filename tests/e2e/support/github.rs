//! The loopback GitHub of `play_testkit::github` for `play serve`: the
//! settings that point its GitHub App at it, installations connected as
//! the install flow connects them, and deliveries signed as GitHub signs
//! them.

use play_github::testing::{APP_SLUG, CLIENT_ID, CLIENT_SECRET, FakeGithub};
use play_model::scm::model::Provider;

use super::serve::Play;

/// The webhook secret `play serve` and the test share.
pub const WEBHOOK_SECRET: &str = "a webhook secret only GitHub and play know";

/// The fake GitHub (app 99) and the files `play serve` reads its settings
/// from.
pub struct Github {
    pub github: FakeGithub,
    pub dir: tempfile::TempDir,
}

impl Github {
    pub async fn start() -> Github {
        let dir = tempfile::tempdir().expect("temp dir");
        let (github, _keys) = play_testkit::github::start(dir.path()).await;
        std::fs::write(dir.path().join("client-secret"), CLIENT_SECRET).expect("write");
        std::fs::write(dir.path().join("webhook-secret"), WEBHOOK_SECRET).expect("write");
        Github { github, dir }
    }

    /// `play` with its GitHub App on the fake, the fake's loopback address
    /// allowed over plain HTTP.
    pub fn configure(&self, play: Play) -> Play {
        let url = self.github.api_url();
        play.env("PLAY_GITHUB_APP_ID", play_testkit::github::APP_ID)
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
        let store = play_store::Store::connect(play.database_url()).await.expect("the store");
        let account = play_store::accounts::find_account_by_name(&store, name).await.expect("the account").id;
        let confirmed = play_testkit::github::confirmed(&self.github, id);
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
