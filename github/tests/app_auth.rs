//! The app's authentication against the loopback GitHub server: the JWT
//! GitHub accepts, installation tokens cached until shortly before they
//! expire, one fetch for concurrent callers, and nothing secret in what
//! play prints.
#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;

use play_github::testing::IssuedScope;
use play_github::testing::{CLIENT_ID, CLIENT_SECRET, FakeGithub, KeyPair};
use play_github::tokens::{CONTENTS_READ, CONTENTS_WRITE, TokenScope};
use play_github::{AppKey, ClientSecret, GithubApi, GithubAppConfig, GithubError};
use play_outbound::UrlPolicy;

const APP_ID: &str = "4242";

fn loopback() -> Arc<UrlPolicy> {
    Arc::new(play_model::testing::loopback_policy())
}

fn config(server: &FakeGithub) -> GithubAppConfig {
    GithubAppConfig {
        app_id: APP_ID.into(),
        slug: "play-test".into(),
        api_url: server.api_url(),
        web_url: server.api_url(),
        client_id: CLIENT_ID.into(),
        client_secret: ClientSecret(CLIENT_SECRET.into()),
    }
}

/// The scope most calls here ask for: read the installation's contents.
fn fetch() -> TokenScope {
    TokenScope::installation_wide(&[CONTENTS_READ])
}

async fn setup() -> (tempfile::TempDir, KeyPair, FakeGithub, GithubApi) {
    let dir = tempfile::tempdir().unwrap();
    let keys = KeyPair::generate(dir.path());
    let server = FakeGithub::start(APP_ID, &keys).await;
    server.install(7, "acme", "Organization");
    let api = GithubApi::new(config(&server), AppKey::from_pem(&keys.private_pem).unwrap(), loopback()).unwrap();
    (dir, keys, server, api)
}

#[tokio::test]
async fn the_app_jwt_is_accepted_and_reads_the_installation() {
    let (_dir, _keys, server, api) = setup().await;
    let info = api.installation(7).await.unwrap();
    assert_eq!((info.id, info.account_login.as_str(), info.account_type.as_str()), (7, "acme", "Organization"));
    assert!(!info.suspended);
    assert!(matches!(api.installation(8).await, Err(GithubError::NotFound(_))));
    let requests = server.lock().requests.clone();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|(_, _, documented)| *documented), "{requests:?}");
}

#[tokio::test]
async fn a_jwt_signed_with_another_key_is_refused() {
    let (dir, _keys, server, _api) = setup().await;
    let other = tempfile::tempdir_in(dir.path()).unwrap();
    let wrong = KeyPair::generate(other.path());
    let api = GithubApi::new(config(&server), AppKey::from_pem(&wrong.private_pem).unwrap(), loopback()).unwrap();
    match api.installation_token(7, &fetch()).await {
        Err(GithubError::Unauthorized(message)) => assert!(message.contains("401"), "{message}"),
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    assert!(server.lock().tokens.is_empty());
}

#[tokio::test]
async fn an_installation_token_is_fetched_once_and_reused_while_fresh() {
    let (_dir, _keys, server, api) = setup().await;
    let api = Arc::new(api);
    let calls: Vec<_> = (0..5)
        .map(|_| {
            tokio::spawn({
                let api = api.clone();
                async move { api.installation_token(7, &fetch()).await.unwrap() }
            })
        })
        .collect();
    let mut tokens = Vec::new();
    for call in calls {
        tokens.push(call.await.unwrap());
    }
    assert!(tokens.windows(2).all(|w| w[0] == w[1]), "one token for every concurrent caller");
    assert_eq!(api.installation_token(7, &fetch()).await.unwrap(), tokens[0]);
    assert_eq!(server.lock().token_requests.get(&7), Some(&1));
    assert_eq!(server.lock().tokens.get(tokens[0].secret()), Some(&7), "the token GitHub issued");

    api.forget_token(7);
    assert_ne!(api.installation_token(7, &fetch()).await.unwrap(), tokens[0], "forgotten: a new one is fetched");
    assert_eq!(server.lock().token_requests.get(&7), Some(&2));
}

#[tokio::test]
async fn a_token_close_to_expiry_is_replaced_before_use() {
    let (_dir, _keys, server, api) = setup().await;
    // Four minutes left is inside the five-minute margin: never used again.
    server.lock().token_lifetime_secs = 240;
    let first = api.installation_token(7, &fetch()).await.unwrap();
    let second = api.installation_token(7, &fetch()).await.unwrap();
    assert_ne!(first, second);
    assert_eq!(server.lock().token_requests.get(&7), Some(&2));
}

#[tokio::test]
async fn a_suspended_installation_gets_no_token() {
    let (_dir, _keys, server, api) = setup().await;
    server.lock().installations.get_mut(&7).unwrap().suspended = true;
    assert!(api.installation(7).await.unwrap().suspended);
    assert!(matches!(api.installation_token(7, &fetch()).await, Err(GithubError::NotFound(_))));
}

#[tokio::test]
async fn secrets_never_show_in_debug_output() {
    let (_dir, keys, _server, api) = setup().await;
    let token = api.installation_token(7, &fetch()).await.unwrap();
    let printed = format!("{token:?} {api:?}");
    assert!(!printed.contains(token.secret()), "{printed}");
    let pem = String::from_utf8(keys.private_pem.clone()).unwrap();
    let body_line = pem.lines().nth(1).unwrap();
    assert!(!printed.contains(body_line), "the key's PEM leaked: {printed}");
    assert!(printed.contains("[redacted]"));
}

#[tokio::test]
async fn the_api_url_is_judged_by_the_outbound_policy() {
    let (_dir, keys, server, _api) = setup().await;
    let refused = GithubApi::new(config(&server), AppKey::from_pem(&keys.private_pem).unwrap(), Arc::default());
    match refused {
        Err(GithubError::Failed(message)) => assert!(message.contains("API URL"), "{message}"),
        other => panic!("a loopback API URL under the default policy: {other:?}"),
    }
}

#[test]
fn a_key_that_is_not_rsa_pem_is_refused_without_quoting_it() {
    let garbage = b"-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END RSA PRIVATE KEY-----\n";
    match AppKey::from_pem(garbage) {
        Err(GithubError::Key(message)) => assert!(!message.contains("c2VjcmV0"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_install_flow_accepts_only_an_installation_the_person_can_see() {
    let (_dir, _keys, server, api) = setup().await;
    server.install(9, "someone-else", "Organization");
    server.grant("octocat", 7);
    let confirmed = api.confirm_installation(&server.code_for("octocat"), 7).await.unwrap();
    assert_eq!((confirmed.external_id.as_str(), confirmed.account_login.as_str()), ("7", "acme"));

    // Another organisation's id typed into the setup URL: not among the
    // person's installations.
    let spoofed = api.confirm_installation(&server.code_for("octocat"), 9).await;
    assert!(matches!(spoofed, Err(GithubError::NotFound(_))), "{spoofed:?}");

    // A code works once, and a made-up one not at all.
    let code = server.code_for("octocat");
    api.confirm_installation(&code, 7).await.unwrap();
    assert!(matches!(api.confirm_installation(&code, 7).await, Err(GithubError::Unauthorized(_))));
    assert!(matches!(api.confirm_installation("guessed", 7).await, Err(GithubError::Unauthorized(_))));
}

#[tokio::test]
async fn the_person_s_installations_are_read_past_the_first_page() {
    let (_dir, _keys, server, api) = setup().await;
    for id in 1000..1150 {
        server.install(id, &format!("org{id}"), "Organization");
        server.grant("busy", id);
    }
    let confirmed = api.confirm_installation(&server.code_for("busy"), 1149).await.unwrap();
    assert_eq!(confirmed.account_login, "org1149");
}

/// Issue #49, item 1: each token is asked for with its repository and
/// permissions in the request body, and tokens of different scopes are
/// different tokens, each cached on its own.
#[tokio::test]
async fn a_token_is_asked_for_its_scope_and_cached_per_scope() {
    let (_dir, _keys, server, api) = setup().await;
    server.lock().repos.insert(
        "acme/app".into(),
        play_github::testing::FakeRepo {
            full_name: "acme/app".into(),
            installation: 7,
            private: true,
            description: String::new(),
            default_branch: "main".into(),
            key: "acme--app".into(),
            dir: std::path::PathBuf::new(),
        },
    );
    let read = api.installation_token(7, &TokenScope::on("app", &[CONTENTS_READ])).await.unwrap();
    let write = api.installation_token(7, &TokenScope::on("app", &[CONTENTS_WRITE])).await.unwrap();
    assert_ne!(read, write, "one token per scope");
    assert_eq!(api.installation_token(7, &TokenScope::on("app", &[CONTENTS_READ])).await.unwrap(), read);
    let asked = server.lock().scope_requests.clone();
    let scope = |level: &str| IssuedScope {
        repositories: Some(vec!["app".into()]),
        permissions: [("contents".to_owned(), level.to_owned())].into(),
    };
    assert_eq!(asked, [(7, scope("read")), (7, scope("write"))]);
    assert_eq!(server.lock().scopes.get(read.secret()), Some(&scope("read")), "the token GitHub issued is limited");
    // A repository the installation was not given: GitHub's 422.
    let other = api.installation_token(7, &TokenScope::on("elsewhere", &[CONTENTS_READ])).await;
    assert!(matches!(other, Err(GithubError::Unprocessable(_))), "{other:?}");
}
