//! A service's env files from the repository at its pin: what Docker
//! Compose reads from the project directory for `env_file:`.
//!
//! Which files: the `svc/env_file` label (one file, required), else every
//! entry of the service's `env_file:` in order, a later file's key winning
//! (Compose's order), each required unless it says `required: false`.
//! Paths are relative to the repository's root, where the Compose file
//! sits; each is bounded by `MAX_ENV_FILE_BYTES` and parsed as
//! `env_defaults` parses (dotenv, `$$secret(N)` placeholders kept as
//! written: the generated values are the Playground's, see
//! `play_store::generated_env`).

use std::collections::BTreeMap;

use play_model::build::Pin;
use play_model::compose::model::Service;
use play_model::compose::project_files;
use play_model::playzone::{self, env_file};
use play_store::playzone_access;

use super::PlaygroundReconciler;
use crate::{Error, Result};

/// The env files of `name` (`service` in the Compose file) at `pin`,
/// merged; empty when it names none.
pub(super) async fn read(
    r: &PlaygroundReconciler,
    name: &str,
    service: &Service,
    pin: &Pin,
) -> Result<BTreeMap<String, String>> {
    let wanted: Vec<(&str, bool)> = match service.labels.get("svc/env_file").filter(|v| !v.is_empty()) {
        Some(label) => vec![(label.as_str(), true)],
        None => service.env_file.iter().map(|e| (e.path.as_str(), e.required)).collect(),
    };
    let mut merged = BTreeMap::new();
    if wanted.is_empty() {
        return Ok(merged);
    }
    let access = playzone_access::access(&r.store, &r.secrets, pin.playzone_id).await?;
    let short: String = pin.commit.chars().take(12).collect();
    for (written, required) in wanted {
        let path = project_files::normalise_file_path(written)
            .map_err(|e| Error::InvalidSpec(format!("service `{name}`: env file `{written}` {e}")))?;
        let mut read = r
            .repositories
            .read_files(&access, &pin.commit, std::slice::from_ref(&path), playzone::MAX_ENV_FILE_BYTES)
            .await
            .map_err(Error::Repository)?;
        let Some(bytes) = read.pop().flatten() else {
            if !required {
                continue;
            }
            return Err(Error::InvalidSpec(format!(
                "service `{name}`: env file `{written}` is not a file in the repository (branch {}, commit \
                 {short}): commit it, or change the service's env_file",
                pin.branch
            )));
        };
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::InvalidSpec(format!("service `{name}`: env file `{written}` is not UTF-8 text")))?;
        let parsed = env_file::parse(&text)
            .map_err(|e| Error::InvalidSpec(format!("service `{name}`: env file `{written}` (commit {short}): {e}")))?;
        merged.extend(parsed.defaults);
    }
    Ok(merged)
}
