//! A [`TestApp`] with the GitHub App against the loopback GitHub
//! (`play_github::testing`), whose repositories are real bare repositories
//! served over git's smart HTTP by `play_git::testing::GitServer`, and
//! installations connected to accounts as the install flow connects them.

use std::sync::Arc;

use play_api::testing::TestApp;
use play_git::{GitConfig, GitGateway};
use play_github::testing::{APP_SLUG, CLIENT_ID, CLIENT_SECRET, FakeGithub, KeyPair};
use play_github::{AppKey, ClientSecret, GithubApi, GithubAppConfig};
use play_model::repository::{RepositoryAccess, RepositoryGateway};
use play_model::scm::model::{Installation, Provider};
use play_store::{playzone_access, repositories};

pub use play_model::testing::loopback_policy;

pub struct Github {
    pub app: TestApp,
    pub github: FakeGithub,
    pub api: Arc<GithubApi>,
    /// The git gateway with the app's installation tokens, as `play serve`
    /// wires it.
    pub gateway: GitGateway,
    pub dir: tempfile::TempDir,
}

/// The app (id 99, slug `play-test`) on `github`, its API and web URL,
/// allowed by [`loopback_policy`].
pub fn api_for(github: &FakeGithub, keys: &KeyPair) -> GithubApi {
    let config = GithubAppConfig {
        app_id: play_testkit::github::APP_ID.into(),
        slug: APP_SLUG.into(),
        api_url: github.api_url(),
        web_url: github.api_url(),
        client_id: CLIENT_ID.into(),
        client_secret: ClientSecret(CLIENT_SECRET.into()),
    };
    let key = AppKey::from_pem(&keys.private_pem).unwrap();
    GithubApi::new(config, key, Arc::new(loopback_policy())).unwrap()
}

impl Github {
    /// `app` with the GitHub App; installation 7 on organisation `acme`
    /// and 8 on user `octocat` exist on GitHub's side, connected to no
    /// account yet ([`Github::connect`]).
    pub async fn with_app(app: TestApp) -> Github {
        let dir = tempfile::tempdir().unwrap();
        let (github, keys) = play_testkit::github::start(dir.path()).await;
        github.install(7, "acme", "Organization");
        github.install(8, "octocat", "User");
        let api = Arc::new(api_for(&github, &keys));
        let mut app = app;
        app.state = app.state.clone().with_github_app(api.clone());
        app.router = play_api::router(app.state.clone());
        let gateway = GitGateway::new(GitConfig {
            installation_tokens: Some(api.clone()),
            ..GitConfig::new(dir.path().join("cache"), loopback_policy())
        })
        .unwrap();
        Github { app, github, api, gateway, dir }
    }

    /// Connects GitHub installation `id` to `account_id`, as a finished
    /// install flow does.
    pub async fn connect(&self, account_id: i64, id: u64) -> Installation {
        let confirmed = play_testkit::github::confirmed(&self.github, id);
        repositories::claim_installation(self.app.store(), account_id, Provider::Github, &confirmed).await.unwrap()
    }

    /// How Playzone `id` is reached, as the sync and builds reach it.
    pub async fn access(&self, id: i64) -> RepositoryAccess {
        playzone_access::access(self.app.store(), &self.app.state.secrets, id).await.unwrap()
    }

    /// The branches of Playzone `id`'s repository, read over git's smart
    /// HTTP with the installation's token.
    pub async fn branches(&self, id: i64) -> Vec<(String, String)> {
        let refs = self.gateway.list_branches(&self.access(id).await).await.unwrap();
        refs.branches.into_iter().map(|b| (b.name, b.commit)).collect()
    }
}
