//! Trust of a Playroom: which Playroom may be trusted, and the record of
//! who trusted it (`playrooms.trusted_at`, `trusted_by_key_id`).
//! [`super::playrooms`] decides when trust changes (create, update) and
//! calls these in the same transaction.
//!
//! Invariants:
//! - A local Playroom is never trusted ([`check_trust`]): it runs on play's
//!   own engine.
//! - `trusted_at`/`trusted_by_key_id` are written with every change of
//!   `trusted` ([`record_trust`]), in the transaction that changes it, and
//!   cleared when trust is lifted; the change's event carries the same
//!   actor.

use super::Conn;
use crate::model::event::Actor;
use crate::model::playroom::Connection;
use crate::time;
use crate::{Error, Result};

/// A local Playroom runs Playgrounds on play's own engine: trusting it
/// would hand a tenant's Compose root on play's machine.
pub(super) fn check_trust(connection: Connection, trusted: bool) -> Result<()> {
    if trusted && connection == Connection::Local {
        return Err(Error::field(
            "playroom.trusted",
            "a local Playroom runs on play's own engine and can never be trusted; use an SSH Playroom on a host of its own",
        ));
    }
    Ok(())
}

/// Records who made the Playroom trusted (or clears it when trust is
/// lifted). The change's event carries the same actor, for the audit trail.
pub(super) async fn record_trust(conn: &mut Conn, id: i64, trusted: bool, actor: Actor) -> Result<()> {
    let by = match actor {
        Actor::ApiKey(key) if trusted => Some(key),
        _ => None,
    };
    let at = trusted.then(|| time::to_db(&time::now()));
    sqlx::query("UPDATE playrooms SET trusted_at = $1, trusted_by_key_id = $2 WHERE id = $3")
        .bind(at)
        .bind(by)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    tracing::info!(playroom = id, trusted, key = ?by, "Playroom trust changed");
    Ok(())
}
