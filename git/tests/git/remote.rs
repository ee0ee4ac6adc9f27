//! Listing branches against a real git smart-HTTP server on loopback:
//! the default branch, auth, the address policy, unreachable and
//! unresponsive remotes. (`git http-backend`: apt-get install git.)

use std::time::Duration;

use crate::common::{World, gateway};
use play_git::testing::{Access, file};
use play_model::repository::{RepositoryAccess, RepositoryError, RepositoryGateway};
use play_model::webhook::UrlPolicy;

#[tokio::test]
async fn lists_the_branches_and_the_default_branch_of_a_public_repository() {
    let world = World::new();
    let commits = world.server.create_repo(
        "app",
        Access::Public,
        &[("trunk", &[("README", file("trunk"))]), ("feature/x", &[("README", file("feature"))])],
    );
    let refs = world.gateway.list_branches(&world.public("app")).await.unwrap();
    assert_eq!(refs.default_branch.as_deref(), Some("trunk"));
    let listed: Vec<(&str, &str)> = refs.branches.iter().map(|b| (b.name.as_str(), b.commit.as_str())).collect();
    assert_eq!(listed, vec![("feature/x", commits[1].as_str()), ("trunk", commits[0].as_str())]);
    assert!(world.server.requests().iter().all(|r| !r.authorization), "no token, no Authorization header");
}

#[tokio::test]
async fn a_private_repository_needs_its_token() {
    let world = World::new();
    let token = "tok-private-4242";
    world.server.create_repo("secret", Access::Private { token: token.into() }, &[("main", &[("a", file("a"))])]);
    let refs = world.gateway.list_branches(&world.private("secret", token)).await.unwrap();
    assert_eq!(refs.default_branch.as_deref(), Some("main"));
    assert_eq!(refs.branches.len(), 1);
    for access in [world.private("secret", "tok-wrong-1"), world.public("secret")] {
        let error = world.gateway.list_branches(&access).await.unwrap_err();
        assert!(matches!(error, RepositoryError::Unauthorized(_)), "{error:?}");
        assert!(!error.to_string().contains("tok-"), "{error}");
    }
    let requests = world.server.requests();
    assert!(requests.iter().any(|r| r.authorization), "the token went in a header: {requests:?}");
    assert!(requests.iter().all(|r| !r.uri.contains(token) && !r.uri.contains("tok-wrong")), "{requests:?}");
}

#[tokio::test]
async fn a_too_long_branch_list_is_an_error_not_a_truncated_answer() {
    let world = World::with(|config| config.max_branches = 2);
    let files: &[(&str, _)] = &[("a", file("a"))];
    world.server.create_repo("many", Access::Public, &[("b1", files), ("b2", files), ("b3", files)]);
    let error = world.gateway.list_branches(&world.public("many")).await.unwrap_err();
    assert!(matches!(error, RepositoryError::TooLarge(_)), "{error:?}");
}

#[tokio::test]
async fn a_loopback_address_not_allowlisted_is_refused_before_any_request() {
    let world = World::new();
    world.server.create_repo("app", Access::Public, &[("main", &[("a", file("a"))])]);
    let cache = tempfile::tempdir().unwrap();
    let strict = gateway(cache.path(), |config| config.policy = UrlPolicy { allow_http: true, allowlist: vec![] });
    for url in [
        world.server.url("app"),
        format!("http://localhost:{}/app.git", world.server.port()),
        format!("http://[::ffff:127.0.0.1]:{}/app.git", world.server.port()),
        format!("http://127.0.0.2:{}/app.git", world.server.port()),
    ] {
        let error = strict.list_branches(&RepositoryAccess::remote(url.clone(), None)).await.unwrap_err();
        assert!(matches!(error, RepositoryError::Refused(_)), "{url}: {error:?}");
    }
    // http is refused unless the operator allows it.
    let https_only = gateway(cache.path(), |config| config.policy.allow_http = false);
    let error = https_only.list_branches(&world.public("app")).await.unwrap_err();
    assert!(matches!(error, RepositoryError::Refused(_)), "{error:?}");
    // Userinfo is refused outright, and not echoed.
    let with_userinfo = world.server.url("app").replace("http://", "http://x-access-token:tok-in-url@");
    let error = world.gateway.list_branches(&RepositoryAccess::remote(with_userinfo, None)).await.unwrap_err();
    assert!(matches!(error, RepositoryError::Refused(_)), "{error:?}");
    assert!(!error.to_string().contains("tok-in-url"), "{error}");
    assert_eq!(world.server.request_count(), 0, "{:?}", world.server.requests());
    assert!(std::fs::read_dir(cache.path()).unwrap().next().is_none(), "nothing cached for a refused call");
}

#[tokio::test]
async fn a_refused_port_is_unreachable() {
    // Bound but not listening: connections are refused while it lives.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(([127, 0, 0, 1], 0).into()).unwrap();
    let port = socket.local_addr().unwrap().port();
    let cache = tempfile::tempdir().unwrap();
    let gateway = gateway(cache.path(), |_| {});
    let access = RepositoryAccess::remote(format!("http://127.0.0.1:{port}/app.git"), None);
    let error = gateway.list_branches(&access).await.unwrap_err();
    assert!(matches!(error, RepositoryError::Unreachable(_)), "{error:?}");
    drop(socket);
}

#[tokio::test]
async fn a_remote_that_never_answers_times_out() {
    // Listening (the kernel accepts the connection) but never answering.
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let cache = tempfile::tempdir().unwrap();
    let gateway = gateway(cache.path(), |config| config.timeout = Duration::from_secs(1));
    let access = RepositoryAccess::remote(format!("http://127.0.0.1:{port}/app.git"), None);
    let started = std::time::Instant::now();
    let error = gateway.list_branches(&access).await.unwrap_err();
    assert!(matches!(error, RepositoryError::Timeout(_)), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    drop(listener);
}

#[tokio::test]
async fn a_missing_repository_is_not_found() {
    let world = World::new();
    // No such repository: http-backend answers 404.
    let error = world.gateway.list_branches(&world.public("nothing")).await.unwrap_err();
    assert!(matches!(error, RepositoryError::NotFound(_)), "{error:?}");
}
