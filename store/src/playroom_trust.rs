//! Trust of a Playroom: which Playroom may be trusted, what a change must
//! not carry trust across, and the record of who trusted it
//! (`playrooms.trusted_at`, `trusted_by_key_id`). [`super::playrooms`]
//! decides when trust changes (create, update, a new key pair) and calls
//! these in the same transaction.
//!
//! Invariants:
//! - A local Playroom is never trusted ([`check_trust`]): it runs on play's
//!   own engine.
//! - Trust is the operator's statement about one machine, reached one way:
//!   host, port, user, connection, Docker socket, pinned host key and SSH
//!   key ([`retargeted`]). A change of any of them by a caller without
//!   `playrooms:trust` clears trust ([`clear_trust`]); the event says why.
//!   The pin a first contact writes (trust on first use) is no such change:
//!   nobody chose it, it is the machine at the address the operator
//!   trusted, and a pin is empty on a trusted Playroom only by the
//!   operator's own act (a tenant's clearing of it clears trust).
//! - `trusted_at`/`trusted_by_key_id` are written with every change of
//!   `trusted` ([`record_trust`]), in the transaction that changes it, and
//!   cleared when trust is lifted; the change's event carries the same
//!   actor.

use super::write_shapes::set_pair_by_id;
use super::{Conn, flag};
use crate::{Error, Result};
use play_model::model::event::Actor;
use play_model::model::playroom::{Connection, Playroom, PlayroomFields};
use play_model::ssh_keys::{self, HostKeyPin};
use play_model::time;

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
    let sql = "UPDATE playrooms SET trusted_at = $1, trusted_by_key_id = $2 WHERE id = $3";
    set_pair_by_id(&mut *conn, sql, (at, by), id).await?;
    tracing::info!(playroom = id, trusted, key = ?by, "Playroom trust changed");
    Ok(())
}

/// What of `current` the update `fields` changes that makes the Playroom
/// reach another Docker host or machine, by field name (empty: the same
/// machine, reached the same way). A key given again, the host key in
/// another notation (its fingerprint for the whole key) included, is no
/// change: only the machine it names matters.
pub(super) fn retargeted(current: &Playroom, fields: &PlayroomFields) -> Vec<&'static str> {
    let mut changed = Vec::new();
    let mut differs = |name, yes: bool| {
        if yes {
            changed.push(name);
        }
    };
    differs("host", fields.host.as_ref().is_some_and(|h| *h != current.host));
    differs("port", fields.port.is_some_and(|p| p != current.port));
    differs("user", fields.user.as_ref().is_some_and(|u| *u != current.user));
    differs("connection", fields.connection.is_some_and(|c| c != current.connection));
    differs("docker_socket", fields.docker_socket.as_ref().is_some_and(|s| *s != current.docker_socket));
    differs(
        "host_key",
        fields.host_key.as_ref().is_some_and(|pin| !same_pin(pin.as_deref(), current.host_key.as_deref())),
    );
    differs(
        "ssh_private_key",
        fields.ssh_key.as_ref().is_some_and(|(_, public)| !same_key(public, current.ssh_public_key.as_deref())),
    );
    changed
}

/// Whether two stored pins name the same host key. No pin is another
/// machine than any pin: the next contact pins whatever answers.
fn same_pin(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => match (HostKeyPin::parse(a), HostKeyPin::parse(b)) {
            (Ok(a), Ok(b)) => a.fingerprint() == b.fingerprint(),
            _ => a == b,
        },
        _ => false,
    }
}

/// Whether the public key `given` is the Playroom's current one (its
/// comment aside). A first key is a change: the caller chose it.
fn same_key(given: &str, current: Option<&str>) -> bool {
    current.is_some_and(|current| {
        match (ssh_keys::public_key_fingerprint(given), ssh_keys::public_key_fingerprint(current)) {
            (Ok(a), Ok(b)) => a == b,
            _ => given == current,
        }
    })
}

/// The metadata of the `playroom.updated` event of a change that cleared
/// trust because it changed `changed` ([`retargeted`]).
pub(super) fn cleared_metadata(changed: &[&str]) -> serde_json::Value {
    serde_json::json!({
        "trusted": { "from": true, "to": false },
        "trust_cleared": format!(
            "the Playroom now reaches another Docker host or machine ({} changed) and the change was made without \
             playrooms:trust: an operator must mark it trusted again",
            changed.join(", ")
        ),
    })
}

/// Clears trust of Playroom `id`, which `changed` made another machine
/// (a change that writes the row itself writes `trusted` there and calls
/// [`record_trust`]); the metadata for the change's event.
pub(super) async fn clear_trust(conn: &mut Conn, id: i64, actor: Actor, changed: &[&str]) -> Result<serde_json::Value> {
    sqlx::query("UPDATE playrooms SET trusted = $1 WHERE id = $2")
        .bind(flag(false))
        .bind(id)
        .execute(&mut *conn)
        .await?;
    record_trust(conn, id, false, actor).await?;
    Ok(cleared_metadata(changed))
}

#[cfg(test)]
mod tests {

    use super::{same_key, same_pin};
    use play_model::ssh_keys;

    #[test]
    fn a_pin_is_the_same_in_either_notation_and_none_is_never_a_pin() {
        let key = ssh_keys::generate_ed25519("host").unwrap().public_openssh;
        let line = key.rsplit_once(' ').map_or(key.as_str(), |(line, _comment)| line);
        let fingerprint = ssh_keys::public_key_fingerprint(&key).unwrap();
        let other = ssh_keys::generate_ed25519("other").unwrap().public_openssh;
        assert!(same_pin(Some(line), Some(&fingerprint)));
        assert!(same_pin(Some(&fingerprint), Some(line)));
        assert!(same_pin(None, None));
        assert!(!same_pin(Some(line), Some(&other)));
        assert!(!same_pin(Some(line), None));
        assert!(!same_pin(None, Some(line)));
    }

    #[test]
    fn an_ssh_key_is_the_same_whatever_its_comment_and_a_first_key_is_new() {
        let key = ssh_keys::generate_ed25519("client").unwrap().public_openssh;
        let renamed = key.replace(" client", " renamed");
        let other = ssh_keys::generate_ed25519("client").unwrap().public_openssh;
        assert!(same_key(&key, Some(&renamed)));
        assert!(!same_key(&other, Some(&key)));
        assert!(!same_key(&key, None));
    }
}
