//! The master key of this process, checked against the one the database
//! was set up with (`play_store::master_key`): every replica must use the
//! same key, or its tokens are refused by the others and it opens none of
//! the stored secrets.

use std::path::Path;

use play_model::model::installation::KeyCheck;
use play_model::secrets::MasterKey;
use play_store::{Store, master_key};

use crate::{Error, Result};

/// The master key in `path`, checked against the database's: a replica
/// with another key file, or with none where the database already has one,
/// is refused with what to do; a missing file is created only for a
/// database that records no key.
pub async fn checked(store: &Store, path: &Path) -> Result<MasterKey> {
    let shown = path.display();
    if !path.exists() && master_key::recorded(store).await?.is_some() {
        return Err(Error::InvalidState(format!(
            "no master key at {shown}, but this database was set up with one: copy the master key file of the \
             first play process on this database to {shown} (every replica must use the same key)"
        )));
    }
    let key = load_or_create(path)?;
    let fingerprint = key.fingerprint();
    match master_key::check(store, &fingerprint).await? {
        KeyCheck::Recorded | KeyCheck::Matches => Ok(key),
        KeyCheck::Differs { recorded } => Err(Error::InvalidState(format!(
            "the master key at {shown} (fingerprint {fingerprint}) is not the one this database was set up with \
             (fingerprint {recorded}): with it, no stored secret opens and its tokens work on no other replica; \
             use the master key file of the first play process on this database"
        ))),
    }
}

fn load_or_create(path: &Path) -> Result<MasterKey> {
    let (key, created) = MasterKey::load_or_create(path)?;
    if created {
        tracing::info!(path = %path.display(), "created a new master key; back it up: secrets cannot be read without it");
    }
    Ok(key)
}
