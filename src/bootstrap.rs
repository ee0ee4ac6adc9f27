//! First start: when the store holds no API key at all, create an admin key
//! with every scope in the default account and write its token to
//! `<data dir>/admin.token` (mode 0600). The token is never logged; the
//! file's path is.

use std::path::{Path, PathBuf};

use play_core::scopes::ScopeSet;
use play_core::secrets::write_private_file;
use play_core::store::events::Actor;
use play_core::store::quotas::QuotaLimits;
use play_core::store::{Store, accounts, keys};
use play_core::token::{self, TokenPepper};

pub const ADMIN_TOKEN_FILE: &str = "admin.token";

/// Creates the admin key if no key exists. Returns the token file's path
/// when it did.
pub async fn ensure_admin_key(store: &Store, pepper: &TokenPepper, data_dir: &Path) -> anyhow::Result<Option<PathBuf>> {
    if keys::count_all(store).await? > 0 {
        return Ok(None);
    }
    let (account, user) = accounts::ensure_account(store, accounts::DEFAULT_ACCOUNT).await?;
    let minted = token::generate();
    let path = data_dir.join(ADMIN_TOKEN_FILE);
    // A token file left from an earlier database names a key that no longer
    // exists: replace it.
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(anyhow::anyhow!("cannot replace {}: {e}", path.display())),
    }
    write_private_file(&path, format!("{}\n", minted.token).as_bytes())?;
    keys::create(
        store,
        keys::NewApiKey {
            account_id: account.id,
            user_id: user.id,
            label: "admin (created on first start)".into(),
            client_id: minted.client_id,
            token_digest: pepper.digest(&minted.token),
            scopes: ScopeSet::all(),
            expires_at: None,
        },
        &QuotaLimits::default(),
        Actor::System,
    )
    .await?;
    Ok(Some(path))
}
