//! Wakes between replicas on PostgreSQL: `NOTIFY` on one channel, and one
//! listening connection per replica (`play_core::wake` says what a remote
//! wake does). SQLite runs one replica and has neither.
//!
//! A payload is `<replica> <kind>:<id> <kind>:<id> ...`, at most
//! [`MAX_PAYLOAD`] bytes (PostgreSQL's limit is 8,000); the sender splits
//! longer batches. Notifications are delivered to every listener on the
//! database, the sender's own included (it skips its own by the replica
//! id). They are hints: one lost (a listener reconnecting) costs latency,
//! never correctness.

use std::sync::Arc;

use sqlx::postgres::PgListener;

use crate::{Error, Result, Store};

/// The channel every replica listens on.
pub const CHANNEL: &str = "play_wake";
/// The longest payload sent in one notification.
pub const MAX_PAYLOAD: usize = 7_900;

/// PostgreSQL's URL, which holds its password: shown redacted.
#[derive(Clone)]
pub(crate) struct ListenUrl(pub(crate) Arc<str>);

impl std::fmt::Debug for ListenUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::redact_url(&self.0))
    }
}

/// Sends `payload` to every replica listening (nothing on SQLite).
///
/// # Errors
/// When PostgreSQL refuses it (a payload over 8,000 bytes) or is down.
pub async fn notify(store: &Store, payload: &str) -> Result<()> {
    if store.listen_url.is_none() {
        return Ok(());
    }
    // `pg_notify` returns `void`, which the `Any` driver cannot read: call
    // it in `FROM` and select a constant.
    sqlx::query("SELECT 1 AS sent FROM pg_notify($1, $2)").bind(CHANNEL).bind(payload).execute(store.pool()).await?;
    Ok(())
}

/// A connection listening on [`CHANNEL`].
#[derive(Debug)]
pub struct Listener(PgListener);

impl Listener {
    /// Listens on `store`'s database; `None` on SQLite.
    ///
    /// # Errors
    /// When the connection or the `LISTEN` fails.
    pub async fn connect(store: &Store) -> Result<Option<Listener>> {
        let Some(url) = &store.listen_url else {
            return Ok(None);
        };
        let mut listener = PgListener::connect(&url.0).await?;
        listener.listen(CHANNEL).await?;
        Ok(Some(Listener(listener)))
    }

    /// The next payload. After an error, connect again: notifications
    /// sent meanwhile are lost.
    ///
    /// # Errors
    /// When the connection is lost.
    pub async fn recv(&mut self) -> Result<String> {
        match self.0.try_recv().await? {
            Some(notification) => Ok(notification.payload().to_owned()),
            None => Err(Error::Internal("the wake listener's connection was lost".into())),
        }
    }
}

/// Payloads of at most [`MAX_PAYLOAD`] bytes saying that `replica` woke
/// `wakes` (`kind:id` each).
pub fn payloads(replica: &str, wakes: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = replica.to_owned();
    for wake in wakes {
        if current.len() + 1 + wake.len() > MAX_PAYLOAD && current.len() > replica.len() {
            out.push(std::mem::replace(&mut current, replica.to_owned()));
        }
        current.push(' ');
        current.push_str(&wake);
    }
    if current.len() > replica.len() {
        out.push(current);
    }
    out
}

/// The replica and the `kind:id` wakes of a payload (`None` for one that
/// is not play's).
pub fn parse(payload: &str) -> Option<(&str, Vec<(&str, i64)>)> {
    let mut words = payload.split(' ');
    let replica = words.next().filter(|r| !r.is_empty())?;
    let wakes = words
        .filter_map(|w| {
            let (kind, id) = w.split_once(':')?;
            Some((kind, id.parse().ok()?))
        })
        .collect();
    Some((replica, wakes))
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn payloads_are_split_under_the_limit_and_read_back() {
        let wakes: Vec<String> = (0..2_000).map(|i| format!("playground:{i}")).collect();
        let sent = payloads("A", wakes.clone());
        assert!(sent.len() > 1 && sent.iter().all(|p| p.len() <= MAX_PAYLOAD), "{}", sent.len());
        let mut read = Vec::new();
        for p in &sent {
            let (replica, w) = parse(p).unwrap();
            assert_eq!(replica, "A");
            read.extend(w.into_iter().map(|(k, id)| format!("{k}:{id}")));
        }
        assert_eq!(read, wakes);
        assert!(payloads("A", Vec::new()).is_empty());
        assert_eq!(parse("B edge:7 junk x:y"), Some(("B", vec![("edge", 7)])));
        assert_eq!(parse(""), None);
    }

    #[tokio::test]
    async fn a_notification_reaches_every_listener_on_postgres() {
        let db = crate::testing::store().await;
        let Some(mut listener) = Listener::connect(&db.store).await.unwrap() else {
            notify(&db.store, "A playground:1").await.unwrap();
            eprintln!("SQLite: no listener, and notify does nothing");
            return;
        };
        notify(&db.store, "A playground:1 edge:2").await.unwrap();
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), listener.recv()).await.unwrap().unwrap();
        assert_eq!(got, "A playground:1 edge:2");
    }
}
