//! The repository gateway `play serve` gives the API and the loops.

use std::sync::Arc;

use play_core::playzone::RepositoryPolicy;
use play_core::repository::RepositoryGateway;

use crate::args::ServeArgs;
use crate::config::Settings;

/// The repository gateway of this process.
pub fn gateway(
    _settings: &Settings,
    _args: &ServeArgs,
    _policy: &RepositoryPolicy,
) -> anyhow::Result<Arc<dyn RepositoryGateway>> {
    Ok(Arc::new(play_core::repository::NoRepositories))
}
