//! Playzones on ssh URLs (issue #52, item 2): the deploy key made by
//! `generate_ssh_key`, and the host key pinned at the first contact.
//!
//! Invariants:
//! - the private half is sealed in `credentials` under the same context as
//!   an https Playzone's token ([`super::playzones`]); only
//!   [`super::playzone_access::access`] opens it;
//! - a host key is pinned once ([`pin_first`]: a compare-and-set on a NULL
//!   column, so two first contacts at once pin one key, and the other
//!   sees it); a new URL on another host forgets it
//!   ([`super::playzones::update`]).

use sqlx::Row;

use super::write_shapes::write_locked;
use super::{Store, events, playzones, wakes};
use crate::{Error, Result};
use play_model::model::event::{Acting, Actor, NewEvent};
use play_model::playzone::Status;
use play_model::playzone::model::Playzone;
use play_model::repository::ssh::is_ssh_url;
use play_model::secrets::SecretBox;
use play_model::time;
use play_model::wake::Wake;

/// Stores a new deploy key pair for Playzone `id` (an ssh one), replacing
/// the one it had, and asks for a sync (the new key may read what the old
/// one could not). Records `playzone.updated`.
pub async fn set_key(
    store: &Store,
    secrets: &SecretBox,
    by: Acting,
    id: i64,
    (private, public): (&str, &str),
) -> Result<Playzone> {
    let Acting { account_id, actor } = by;
    write_locked(store, "playzones", id, async |tx| {
        let current = playzones::get(&mut *tx, account_id, id).await?;
        if !is_ssh_url(&current.scm_url) {
            return Err(Error::InvalidState(
                "the Playzone's scm_url is not an ssh URL: a deploy key is only for ssh://... or git@host:path \
                     URLs (an https repository takes an access token in credentials)"
                    .into(),
            ));
        }
        playzones::write_key(tx, secrets, id, Some(private), Some(public)).await?;
        sqlx::query("UPDATE playzones SET generation = generation + 1, status = $1, updated_at = $2 WHERE id = $3")
            .bind(Status::Pending.as_str())
            .bind(time::to_db(&time::now()))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let metadata = serde_json::json!({"changed": ["credentials"]});
        events::record(tx, NewEvent::new(account_id, "playzone", id, "updated").actor(actor).metadata(metadata))
            .await?;
        wakes::note(tx, Wake::Playzone(id.into())).await?;
        playzones::get(&mut *tx, account_id, id).await
    })
    .await
}

/// Pins `key_line` as Playzone `id`'s host key unless one is pinned, and
/// answers the pinned key (this one, or the one a concurrent first
/// contact pinned). A new pin records `playzone.updated` by the system.
pub async fn pin_first(store: &Store, id: i64, key_line: &str) -> Result<String> {
    store
        .in_write(async |tx| {
            let now = time::to_db(&time::now());
            let pinned = sqlx::query(
                "UPDATE playzones SET ssh_host_key = $1, ssh_host_key_pinned_at = $2 \
                 WHERE id = $3 AND ssh_host_key IS NULL",
            )
            .bind(key_line)
            .bind(&now)
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            let row = sqlx::query("SELECT account_id, ssh_host_key FROM playzones WHERE id = $1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(Error::NotFound("playzone"))?;
            if pinned {
                let account_id: i64 = row.try_get("account_id")?;
                let metadata = serde_json::json!({"changed": ["ssh_host_key"]});
                let event =
                    NewEvent::new(account_id, "playzone", id, "updated").actor(Actor::System).metadata(metadata);
                events::record(tx, event).await?;
            }
            row.try_get::<Option<String>, _>("ssh_host_key")?
                .ok_or_else(|| Error::Internal("a pinned host key read back empty".into()))
        })
        .await
}
