//! A [`TestApp`] with the GitHub App against the loopback GitHub
//! (`play_github::testing`), whose repositories are real bare repositories
//! served over git's smart HTTP by `play_git::testing::GitServer`, and
//! installations connected to accounts as the install flow connects them.

use std::path::PathBuf;
use std::sync::Arc;

use play_api::testing::TestApp;
use play_git::testing::{Access, GitServer};
use play_git::{GitConfig, GitGateway};
use play_github::testing::{CLIENT_ID, CLIENT_SECRET, FakeGithub, GitBackend, KeyPair};
use play_github::{AppKey, ClientSecret, GithubApi, GithubAppConfig};
use play_model::repository::{RepositoryAccess, RepositoryGateway};
use play_model::scm::host::ConfirmedInstallation;
use play_model::scm::model::{Installation, Provider};
use play_model::webhook::UrlPolicy;
use play_model::webhook::url::AllowEntry;
use play_store::{playzone_access, repositories};

/// The GitServer as the fake GitHub's repository store.
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
        app_id: "99".into(),
        slug: "play-test".into(),
        api_url: github.api_url(),
        web_url: github.api_url(),
        client_id: CLIENT_ID.into(),
        client_secret: ClientSecret(CLIENT_SECRET.into()),
    };
    let key = AppKey::from_pem(&keys.private_pem).unwrap();
    GithubApi::new(config, key, Arc::new(loopback_policy())).unwrap()
}

/// Loopback addresses allowed, over plain HTTP.
pub fn loopback_policy() -> UrlPolicy {
    UrlPolicy { allow_http: true, ..UrlPolicy::default() }.allow(AllowEntry::parse("127.0.0.1").unwrap())
}

impl Github {
    /// `app` with the GitHub App; installation 7 on organisation `acme`
    /// and 8 on user `octocat` exist on GitHub's side, connected to no
    /// account yet ([`Github::connect`]).
    pub async fn with_app(app: TestApp) -> Github {
        let dir = tempfile::tempdir().unwrap();
        let keys = KeyPair::generate(dir.path());
        let github = FakeGithub::start_with_git("99", &keys, Arc::new(Backend(GitServer::start()))).await;
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
        let known = self.github.lock().installations.get(&id).cloned().unwrap();
        let confirmed = ConfirmedInstallation {
            external_id: id.to_string(),
            account_login: known.account_login,
            organisation: known.account_type == "Organization",
            suspended: false,
        };
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
