//! Shared setup of play-git's integration tests: a [`GitServer`] on
//! loopback, a gateway whose policy allowlists 127.0.0.1 (and allows
//! http, as the test server speaks it), and a fresh cache directory.
#![allow(dead_code, reason = "each test binary uses a different part of the shared setup")]
#![allow(clippy::unwrap_used, reason = "test setup: a panic is the failure report")]

use std::path::Path;

use play_git::testing::GitServer;
use play_git::{GitConfig, GitGateway};
use play_model::repository::RepositoryAccess;
use tempfile::TempDir;

pub use play_model::testing::loopback_policy;

pub struct World {
    pub server: GitServer,
    pub cache: TempDir,
    pub gateway: GitGateway,
}

impl World {
    pub fn new() -> World {
        World::with(|_| {})
    }

    /// A world whose gateway config `tweak` adjusts.
    pub fn with(tweak: impl FnOnce(&mut GitConfig)) -> World {
        let server = GitServer::start();
        let cache = tempfile::Builder::new().prefix("play-git-cache-").tempdir().unwrap();
        let gateway = gateway(cache.path(), tweak);
        World { server, cache, gateway }
    }

    pub fn public(&self, name: &str) -> RepositoryAccess {
        RepositoryAccess::remote(self.server.url(name), None)
    }

    pub fn private(&self, name: &str, token: &str) -> RepositoryAccess {
        RepositoryAccess::remote(self.server.url(name), Some(token.to_owned()))
    }
}

pub fn gateway(cache: &Path, tweak: impl FnOnce(&mut GitConfig)) -> GitGateway {
    let mut config = GitConfig::new(cache, loopback_policy());
    config.timeout = std::time::Duration::from_secs(20);
    tweak(&mut config);
    GitGateway::new(config).unwrap()
}

/// Bytes that do not compress: a pack holding them is about as big.
pub fn noise(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// Whether `needle` occurs in any file under `dir`.
pub fn any_file_contains(dir: &Path, needle: &[u8]) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if let Some(found) = any_file_contains(&path, needle) {
                return Some(found);
            }
        } else if let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            return Some(path);
        }
    }
    None
}
