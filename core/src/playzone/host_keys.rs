//! The gateway's seam for pinning a Playzone's ssh host key on first
//! contact (`play_model::repository::ssh::SshHostKeys`), over the store's
//! compare-and-set ([`play_store::playzone_ssh::pin_first`]).

use async_trait::async_trait;
use play_model::repository::RepositoryError;
use play_model::repository::ssh::SshHostKeys;
use play_store::Store;

/// See the [module documentation](self).
#[derive(Clone, Debug)]
pub struct PinnedHostKeys {
    store: Store,
}

impl PinnedHostKeys {
    pub fn new(store: Store) -> PinnedHostKeys {
        PinnedHostKeys { store }
    }
}

#[async_trait]
impl SshHostKeys for PinnedHostKeys {
    async fn pin_first(&self, playzone_id: i64, key_line: &str) -> Result<String, RepositoryError> {
        play_store::playzone_ssh::pin_first(&self.store, playzone_id, key_line)
            .await
            .map_err(|e| RepositoryError::Failed(format!("pinning the repository's host key: {e}")))
    }
}
