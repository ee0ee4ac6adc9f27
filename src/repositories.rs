//! The repository gateway `play serve` gives the API and the loops: libgit2
//! over play's policy-checked transport (`play-git`), with its commit
//! cache in the data directory.

use std::sync::Arc;

use anyhow::Context;
use play_core::playzone::RepositoryPolicy;
use play_core::repository::RepositoryGateway;
use play_git::{GitConfig, GitGateway};

use crate::args::ServeArgs;
use crate::config::Settings;

/// The repository gateway of this process. Its cache (`<data dir>/git`)
/// holds one bare repository per URL, never a token.
pub fn gateway(
    settings: &Settings,
    args: &ServeArgs,
    policy: &RepositoryPolicy,
) -> anyhow::Result<Arc<dyn RepositoryGateway>> {
    let config = GitConfig {
        timeout: args.repository_timeout.into(),
        max_fetch_bytes: args.repository_max_fetch_bytes,
        ..GitConfig::new(settings.data_dir.join("git"), policy.urls.clone())
    };
    let gateway = GitGateway::new(config).map_err(|e| anyhow::anyhow!("{e}")).context("repository access")?;
    Ok(Arc::new(gateway))
}
