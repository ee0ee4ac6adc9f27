//! The gateway over ssh (issue #52, item 2), against Debian's sshd with
//! `git-shell` in front of the harness's bare repositories
//! (`play_git::testing::GitSsh`): branches, files, archives and a pushed
//! branch with a deploy key; the host key pinned at the first contact and
//! a wrong one refused before the key signs anything; the address policy
//! and a refused key.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::collections::HashMap;
use std::io::Read as _;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use play_git::testing::{Access, GitSsh, file};
use play_model::repository::ssh::{SshAccess, SshHostKeys};
use play_model::repository::{Reach, RepositoryAccess, RepositoryError, RepositoryGateway};
use play_model::ssh_keys::{GeneratedKeyPair, generate_ed25519};

use crate::common::{World, gateway};

/// The store's pins, in memory: a compare-and-set per Playzone.
#[derive(Debug, Default)]
struct Pins(Mutex<HashMap<i64, String>>);

#[async_trait]
impl SshHostKeys for Pins {
    async fn pin_first(&self, playzone_id: i64, key_line: &str) -> Result<String, RepositoryError> {
        Ok(self.0.lock().unwrap().entry(playzone_id).or_insert_with(|| key_line.to_owned()).clone())
    }
}

fn access(ssh: &GitSsh, name: &str, key: &GeneratedKeyPair, pin: Option<&str>) -> RepositoryAccess {
    RepositoryAccess {
        url: ssh.url(name),
        token: None,
        reach: Reach::Ssh(SshAccess {
            playzone_id: 7,
            private_key_openssh: key.private_openssh.clone(),
            pinned_host_key: pin.map(str::to_owned),
        }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deploy_key_reads_and_pushes_and_the_host_key_is_pinned_at_first_contact() {
    let pins = Arc::new(Pins::default());
    let world = World::with(|config| config.ssh_host_keys = Some(pins.clone()));
    let commits = world.server.create_repo(
        "app",
        Access::Public,
        &[("main", &[("Dockerfile", file("FROM scratch\n")), ("src/index.html", file("over ssh"))])],
    );
    let ssh = world.server.ssh();
    let key = generate_ed25519("play-playzone-7").unwrap();
    ssh.authorize(&key.public_openssh);
    let repo = access(&ssh, "app", &key, None);

    // First contact: the branches, and the host key pinned.
    let refs = world.gateway.list_branches(&repo).await.unwrap_or_else(|e| panic!("{e}\n{}", ssh.log()));
    assert_eq!(refs.default_branch.as_deref(), Some("main"));
    assert_eq!(
        refs.branches.iter().map(|b| (b.name.as_str(), b.commit.as_str())).collect::<Vec<_>>(),
        [("main", commits[0].as_str())]
    );
    let pinned = pins.0.lock().unwrap().get(&7).cloned().expect("pinned at first contact");
    assert_eq!(pinned.split_whitespace().nth(1), ssh.host_key().split_whitespace().nth(1));

    // Later contacts present the pin: files, an archive, a pushed branch.
    let repo = access(&ssh, "app", &key, Some(&pinned));
    let files =
        world.gateway.read_files(&repo, &commits[0], &["src/index.html".into(), "absent".into()], 1024).await.unwrap();
    assert_eq!(files, [Some(b"over ssh".to_vec()), None]);
    let tar = world.gateway.archive(&repo, &commits[0], "src", 1 << 20).await.unwrap();
    let mut archive = tar::Archive::new(&tar[..]);
    let mut names = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let mut body = String::new();
        entry.read_to_string(&mut body).unwrap();
        names.push((entry.path().unwrap().display().to_string(), body));
    }
    assert_eq!(names, [("index.html".to_owned(), "over ssh".to_owned())]);
    world
        .gateway
        .create_branch(&repo, "feature/ssh", &commits[0])
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", ssh.log()));
    assert_eq!(world.server.branch_commit("app", "feature/ssh").as_deref(), Some(commits[0].as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_host_key_an_unknown_deploy_key_and_a_refused_address_send_nothing() {
    let world = World::new();
    let commits = world.server.create_repo("app", Access::Public, &[("main", &[("a", file("a"))])]);
    let ssh = world.server.ssh();
    let key = generate_ed25519("deploy").unwrap();
    ssh.authorize(&key.public_openssh);

    // A pin of another key: refused in the key exchange, naming both.
    let other = generate_ed25519("someone else").unwrap().public_openssh;
    let err = world.gateway.list_branches(&access(&ssh, "app", &key, Some(&other))).await.unwrap_err();
    assert!(matches!(&err, RepositoryError::Refused(m) if m.contains("not the pinned")), "{err}");
    assert!(!ssh.log().contains("Accepted publickey"), "the deploy key signed nothing:\n{}", ssh.log());

    // No pin and nowhere to keep one (this gateway has no pins).
    let err = world.gateway.list_branches(&access(&ssh, "app", &key, None)).await.unwrap_err();
    assert!(matches!(&err, RepositoryError::Refused(m) if m.contains("no host key is pinned")), "{err}");

    // A key the repository does not know.
    let stranger = generate_ed25519("stranger").unwrap();
    let err = world
        .gateway
        .read_files(&access(&ssh, "app", &stranger, Some(ssh.host_key())), &commits[0], &["a".into()], 10)
        .await
        .unwrap_err();
    assert!(matches!(&err, RepositoryError::Unauthorized(m) if m.contains("deploy key")), "{err}");

    // A repository that is not there: the remote's own words.
    let err = world.gateway.list_branches(&access(&ssh, "missing", &key, Some(ssh.host_key()))).await.unwrap_err();
    assert!(matches!(&err, RepositoryError::NotFound(_)), "{err}");

    // The operator's policy: loopback is refused unless allowlisted.
    let strict = tempfile::tempdir().unwrap();
    let strict = gateway(strict.path(), |config| config.policy = play_model::webhook::UrlPolicy::default());
    let err = strict.list_branches(&access(&ssh, "app", &key, Some(ssh.host_key()))).await.unwrap_err();
    assert!(matches!(&err, RepositoryError::Refused(m) if m.contains("127.0.0.1")), "{err}");
}
