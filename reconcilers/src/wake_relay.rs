//! The relay of wakes between replicas on PostgreSQL (`play_core::wake`
//! says what a remote wake does; `play_store::wake_bus` how it travels).
//!
//! Two tasks per replica: one sends this process's wakes, batched, with
//! `NOTIFY`; one listens and hands the other replicas' wakes to the
//! waker's remote subscribers (its own are skipped by replica id).
//!
//! # Guarantees
//!
//! - Best effort, like every wake: a failed send is dropped (logged), a
//!   lost listening connection is opened again after a second, and
//!   notifications sent meanwhile are lost. A lost remote wake costs a
//!   busy retry; no decision depends on one.
//! - Bounded work per wake: one line of a payload; a burst is sent in as
//!   few notifications as fit (7,900 bytes each).
//! - Nothing on SQLite (one replica).

use std::time::Duration;

use play_core::wake::{ChannelWaker, Kind, Wake};
use play_store::{Backend, Store, wake_bus};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The most wakes sent in one round of the sender.
const BATCH: usize = 4_096;

/// Starts the relay of `waker`'s wakes as `replica`, on PostgreSQL only,
/// until `shutdown`.
pub fn start(store: &Store, waker: &ChannelWaker, replica: &str, shutdown: &CancellationToken, tasks: &TaskTracker) {
    if store.backend() != Backend::Postgres {
        return;
    }
    let Some(outgoing) = waker.relay() else {
        tracing::warn!("the waker already has a relay: wakes are not sent to other replicas twice");
        return;
    };
    tasks.spawn(send(store.clone(), outgoing, replica.to_owned(), shutdown.child_token()));
    tasks.spawn(listen(store.clone(), waker.clone(), replica.to_owned(), shutdown.child_token()));
    tracing::info!(replica, "wakes are relayed to and from the other replicas");
}

async fn send(store: Store, mut wakes: mpsc::UnboundedReceiver<Wake>, replica: String, stop: CancellationToken) {
    let mut batch = Vec::new();
    loop {
        let received = tokio::select! {
            () = stop.cancelled() => return,
            n = wakes.recv_many(&mut batch, BATCH) => n,
        };
        if received == 0 {
            return;
        }
        batch.sort_unstable();
        batch.dedup();
        let lines = batch.drain(..).map(|wake| format!("{}:{}", wake.kind().as_str(), wake.id()));
        for payload in wake_bus::payloads(&replica, lines) {
            if let Err(error) = wake_bus::notify(&store, &payload).await {
                tracing::warn!(%error, "sending wakes to the other replicas failed; they find the changes later");
            }
        }
    }
}

async fn listen(store: Store, waker: ChannelWaker, replica: String, stop: CancellationToken) {
    loop {
        let mut listener = match wake_bus::Listener::connect(&store).await {
            Ok(Some(listener)) => listener,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "listening for the other replicas' wakes failed; trying again in 1 s");
                if pause(&stop).await {
                    return;
                }
                continue;
            }
        };
        loop {
            let payload = tokio::select! {
                () = stop.cancelled() => return,
                payload = listener.recv() => payload,
            };
            match payload {
                Ok(payload) => deliver(&waker, &replica, &payload),
                Err(error) => {
                    tracing::warn!(%error, "the wake listener stopped; listening again in 1 s");
                    break;
                }
            }
        }
        if pause(&stop).await {
            return;
        }
    }
}

/// Hands the wakes of `payload` to `waker`'s remote subscribers, unless
/// `me` sent them.
fn deliver(waker: &ChannelWaker, me: &str, payload: &str) {
    let Some((from, wakes)) = wake_bus::parse(payload) else {
        return;
    };
    if from == me {
        return;
    }
    for (kind, id) in wakes {
        if let Ok(kind) = kind.parse::<Kind>() {
            waker.wake_remote(Wake::of(kind, id));
        }
    }
}

/// Waits a second; whether `stop` came first.
async fn pause(stop: &CancellationToken) -> bool {
    tokio::select! {
        () = stop.cancelled() => true,
        () = tokio::time::sleep(Duration::from_secs(1)) => false,
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[tokio::test]
    async fn a_wake_on_one_replica_reaches_the_others_remote_subscribers_only() {
        let db = play_store::testing::store().await;
        if db.store.backend() != Backend::Postgres {
            eprintln!("skipped: wakes are relayed on PostgreSQL only");
            return;
        }
        let (a, b) = (ChannelWaker::new(), ChannelWaker::new());
        let mut b_remote = b.subscribe_remote(Kind::Playground);
        let mut a_remote = a.subscribe_remote(Kind::Playground);
        let mut b_local = b.subscribe(Kind::Playground);
        let (stop, tasks) = (CancellationToken::new(), TaskTracker::new());
        start(&db.store, &a, "A", &stop, &tasks);
        start(&db.store, &b, "B", &stop, &tasks);
        // Both listeners are up once a wake of each reached the other.
        for (from, to) in [(&b, &a), (&a, &b)] {
            let mut ready = to.subscribe_remote(Kind::Edge);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
            loop {
                assert!(tokio::time::Instant::now() < deadline, "no wake relayed within 20 s");
                play_core::wake::Waker::wake(from, Wake::Edge(1.into()));
                if tokio::time::timeout(Duration::from_millis(300), ready.recv()).await.is_ok() {
                    break;
                }
            }
        }
        play_core::wake::Waker::wake(&a, Wake::Playground(7.into()));
        let got = tokio::time::timeout(Duration::from_secs(10), b_remote.recv()).await.unwrap();
        assert_eq!(got, Some(7));
        assert_eq!(a_remote.try_recv(), None, "A skips its own wakes");
        assert_eq!(b_local.try_recv(), None, "a remote wake is not a local one");
        stop.cancel();
        tasks.close();
        tasks.wait().await;
    }
}
