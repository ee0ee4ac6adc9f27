//! API keys the operator makes outside the API: the admin key of a first
//! start, and a key `play keys create` adds to an account straight in the
//! store. (The API's own `POST /api/keys` checks the key against its
//! creator; these have no creator to check against.)
//!
//! A token is minted here and only its digest is stored; the token itself
//! goes to the caller once (to a file of mode 0600 on first start) and is
//! never logged.

use std::path::{Path, PathBuf};

use play_model::model::account::{Account, ApiKey, NewApiKey};
use play_model::model::event::Actor;
use play_model::model::quota::QuotaLimits;
use play_model::scopes::ScopeSet;
use play_model::secrets::write_private_file;
use play_model::time::Timestamp;
use play_model::token::{self, TokenPepper};
use play_store::{Store, accounts, keys};

use crate::{Error, Result};

/// The file in the data directory that holds the first start's admin token.
pub const ADMIN_TOKEN_FILE: &str = "admin.token";

/// The admin key made on first start.
#[derive(Debug)]
pub struct AdminKey {
    /// The file its token is in.
    pub path: PathBuf,
    pub key_id: i64,
    pub account_id: i64,
}

/// When the store holds no API key at all, creates an admin key with every
/// scope in the default account and writes its token to
/// `<data_dir>/admin.token` (mode 0600); returns it when it did.
///
/// Replicas starting at once on one empty database make one key between
/// them (`keys::create_first`); each writes the token to a file of its own
/// first and moves it to `admin.token` only when its key was the one made,
/// so a replica that lost the race leaves no token naming no key.
pub async fn ensure_admin_key(store: &Store, pepper: &TokenPepper, data_dir: &Path) -> Result<Option<AdminKey>> {
    if keys::count_all(store).await? > 0 {
        return Ok(None);
    }
    let (account, user) = accounts::ensure_account(store, accounts::DEFAULT_ACCOUNT).await?;
    let (key, token) = mint(pepper, &account, user.id, "admin (created on first start)".into(), ScopeSet::all(), None);
    let path = data_dir.join(ADMIN_TOKEN_FILE);
    let pending = data_dir.join(format!("{ADMIN_TOKEN_FILE}.{}", std::process::id()));
    remove_if_present(&pending)?;
    write_private_file(&pending, format!("{token}\n").as_bytes())?;
    let created = keys::create_first(store, key, &QuotaLimits::default(), Actor::System).await;
    match created {
        Ok(Some(key)) => {
            // Replaces a token file left from an earlier database, which
            // names a key that no longer exists.
            std::fs::rename(&pending, &path)
                .map_err(|e| Error::Internal(format!("cannot move the admin token to {}: {e}", path.display())))?;
            Ok(Some(AdminKey { path, key_id: key.id, account_id: account.id }))
        }
        Ok(None) => {
            remove_if_present(&pending)?;
            Ok(None)
        }
        Err(e) => {
            remove_if_present(&pending)?;
            Err(e)
        }
    }
}

/// Adds a key with `scopes` to `account`, held by its admin user, under
/// the default quotas; returns it with its token, which exists nowhere
/// else (only its digest is stored).
pub async fn create_key(
    store: &Store,
    pepper: &TokenPepper,
    account: &Account,
    label: String,
    scopes: ScopeSet,
    expires_at: Option<Timestamp>,
) -> Result<(ApiKey, String)> {
    let user = accounts::admin_user(store, account.id).await?;
    let (key, token) = mint(pepper, account, user.id, label, scopes, expires_at);
    let key = keys::create(store, key, &QuotaLimits::default(), Actor::System).await?;
    Ok((key, token))
}

/// A fresh token and the key that records its digest.
fn mint(
    pepper: &TokenPepper,
    account: &Account,
    user_id: i64,
    label: String,
    scopes: ScopeSet,
    expires_at: Option<Timestamp>,
) -> (NewApiKey, String) {
    let minted = token::generate();
    let key = NewApiKey {
        account_id: account.id,
        user_id,
        label,
        client_id: minted.client_id,
        token_digest: pepper.digest(&minted.token),
        scopes,
        expires_at,
    };
    (key, minted.token)
}

fn remove_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::Internal(format!("cannot remove {}: {e}", path.display()))),
    }
}

/// On first start, on a terminal: the secret of a one-time link that
/// opens the dashboard signed in with the admin key, printed once play
/// listens. It goes to standard output only, never to the log (it is a
/// credential until used, for ten minutes); without a terminal (a service
/// manager's journal) there is none: `play login --web` makes one when it
/// is wanted.
pub async fn sign_in_link(store: &Store, pepper: &TokenPepper, admin: &AdminKey) -> Result<Option<String>> {
    use std::io::IsTerminal as _;
    if !std::io::stdout().is_terminal() {
        return Ok(None);
    }
    let (secret, _) = play_store::sign_in_links::create(store, pepper, admin.key_id, admin.account_id).await?;
    Ok(Some(secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found with two replicas on PostgreSQL (issue #16): both saw no key
    /// and both made one.
    #[tokio::test]
    async fn replicas_starting_at_once_make_one_admin_key() {
        let test = play_store::testing::store().await;
        let pepper = TokenPepper::new([7; 32]);
        let dirs: Vec<tempfile::TempDir> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
        let made =
            futures::future::join_all(dirs.iter().map(|dir| ensure_admin_key(&test.store, &pepper, dir.path()))).await;
        let made: Vec<PathBuf> = made.into_iter().filter_map(|r| r.unwrap().map(|k| k.path)).collect();
        assert_eq!(made.len(), 1, "{made:?}");
        assert_eq!(keys::count_all(&test.store).await.unwrap(), 1);
        let token = std::fs::read_to_string(&made[0]).unwrap();
        let found = keys::find_by_digest(&test.store, &pepper.digest(token.trim())).await.unwrap();
        assert!(found.is_some(), "the file holds the token of the key that was made");
        for dir in &dirs {
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert!(left.len() <= 1 && left.iter().all(|n| n == ADMIN_TOKEN_FILE), "{left:?}");
        }
        assert!(ensure_admin_key(&test.store, &pepper, dirs[0].path()).await.unwrap().is_none());
    }
}
