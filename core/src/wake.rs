//! The in-process waker: how a committed change reaches the reconcilers.
//!
//! A store write that changes desired state notes the wake in its
//! transaction, and `Store::commit` calls [`Waker::wake`] with the
//! [`Kind`] of object and its id once the change committed
//! (`play_store::wakes`); the reconcile runtime (in `play-reconcilers`,
//! which the API cannot depend on) subscribes to the kind it reconciles. A wake is a hint, not a message: it carries no payload, may
//! be coalesced with others for the same object, and may be lost (a process
//! stopping between the commit and the wake). Reconcilers are level-triggered
//! and the runtime's periodic resync visits every object, so a lost wake costs
//! latency, never correctness.
//!
//! # Other replicas
//!
//! On PostgreSQL several replicas share the desired state. The replica
//! that accepted a change runs its pass (its own runtime was woken); if
//! another replica is in the middle of a pass of the same object, the
//! first one's claim finds the lease busy and waits for it, while the pass
//! holding it may have read the state before the change. So a
//! [`ChannelWaker`] can relay every wake ([`ChannelWaker::relay`]; `play
//! serve` sends them with `NOTIFY`) and take the other replicas' wakes
//! ([`ChannelWaker::wake_remote`]); a runtime acts on a remote wake only
//! for an object it is running, by running it again right after. Remote
//! wakes are hints like the others: lost ones cost a busy retry.
//!
//! [`Kind`], the one list of what can be woken, and the [`Waker`] seam
//! live in `play_model::wake`, so the store can deliver to them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use tokio::sync::mpsc;

pub use play_model::wake::{Kind, NoopWaker, Wake, Waker};

/// An in-process waker: every wake of `kind` is delivered to every live
/// [`WakeReceiver`] subscribed to `kind`.
///
/// Delivery is through unbounded channels so `wake` never blocks a request
/// handler; a subscriber drains its channel into a deduplicating queue at
/// once, so the channel stays short. Wakes for a kind nobody subscribes to
/// are dropped. Clones share subscribers.
#[derive(Clone, Debug, Default)]
pub struct ChannelWaker {
    subscribers: Arc<Mutex<Subscribers>>,
    /// Subscribers to the other replicas' wakes ([`ChannelWaker::wake_remote`]).
    remote: Arc<Mutex<Subscribers>>,
    /// Where every wake of this process is also sent, once set.
    relay: Arc<OnceLock<mpsc::UnboundedSender<Wake>>>,
}

type Subscribers = HashMap<Kind, Vec<mpsc::UnboundedSender<i64>>>;

impl ChannelWaker {
    pub fn new() -> Self {
        Self::default()
    }

    /// A receiver of every later wake of `kind`.
    pub fn subscribe(&self, kind: Kind) -> WakeReceiver {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().entry(kind).or_default().push(tx);
        WakeReceiver { kind, rx }
    }

    /// A receiver of every later wake of `kind` from another replica.
    pub fn subscribe_remote(&self, kind: Kind) -> WakeReceiver {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.remote).entry(kind).or_default().push(tx);
        WakeReceiver { kind, rx }
    }

    /// From now on every wake of this process is also sent to the
    /// receiver returned (the relay to the other replicas); `None` when a
    /// relay was set before.
    pub fn relay(&self) -> Option<mpsc::UnboundedReceiver<Wake>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.relay.set(tx).ok().map(|()| rx)
    }

    /// Delivers a wake another replica sent to the remote subscribers of
    /// `kind` (never relayed again).
    pub fn wake_remote(&self, wake: Wake) {
        deliver(&self.remote, wake.kind(), wake.id());
    }

    fn lock(&self) -> MutexGuard<'_, Subscribers> {
        lock(&self.subscribers)
    }
}

fn lock(subscribers: &Mutex<Subscribers>) -> MutexGuard<'_, Subscribers> {
    // The map stays consistent even if a holder panicked: every
    // operation on it is a single insert or retain.
    subscribers.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn deliver(subscribers: &Mutex<Subscribers>, kind: Kind, id: i64) {
    if let Some(senders) = lock(subscribers).get_mut(&kind) {
        // A failed send means the receiver is gone: forget it.
        senders.retain(|tx| tx.send(id).is_ok());
    }
}

impl Waker for ChannelWaker {
    fn wake(&self, wake: Wake) {
        deliver(&self.subscribers, wake.kind(), wake.id());
        if let Some(relay) = self.relay.get() {
            // The relay task stopping (shutdown) drops its receiver.
            let _ = relay.send(wake);
        }
    }
}

/// The receiving end of a [`ChannelWaker`] subscription.
#[derive(Debug)]
pub struct WakeReceiver {
    kind: Kind,
    rx: mpsc::UnboundedReceiver<i64>,
}

impl WakeReceiver {
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The next woken id; `None` once every clone of the waker is dropped.
    pub async fn recv(&mut self) -> Option<i64> {
        self.rx.recv().await
    }

    /// Polls for the next woken id (for adapting the receiver to a stream).
    pub fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<i64>> {
        self.rx.poll_recv(cx)
    }

    /// The next woken id if one is waiting.
    pub fn try_recv(&mut self) -> Option<i64> {
        self.rx.try_recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_reach_every_subscriber_of_their_kind_only() {
        let waker = ChannelWaker::new();
        let mut a = waker.subscribe(Kind::Playground);
        let mut b = waker.subscribe(Kind::Playground);
        let mut other = waker.subscribe(Kind::Playroom);
        let shared: Arc<dyn Waker> = Arc::new(waker.clone());
        shared.wake(Wake::Playground(7.into()));
        assert_eq!(a.recv().await, Some(7));
        assert_eq!(b.recv().await, Some(7));
        assert_eq!(other.try_recv(), None);
        assert_eq!(a.kind(), Kind::Playground);
    }

    #[tokio::test]
    async fn wakes_are_relayed_and_remote_wakes_reach_remote_subscribers_only() {
        let waker = ChannelWaker::new();
        let mut local = waker.subscribe(Kind::Playground);
        let mut remote = waker.subscribe_remote(Kind::Playground);
        let mut relayed = waker.relay().unwrap();
        assert!(waker.relay().is_none(), "one relay");
        waker.wake(Wake::Playground(3.into()));
        assert_eq!(relayed.recv().await, Some(Wake::Playground(3.into())));
        assert_eq!((local.recv().await, remote.try_recv()), (Some(3), None));
        waker.wake_remote(Wake::Playground(4.into()));
        assert_eq!((remote.recv().await, local.try_recv(), relayed.try_recv().ok()), (Some(4), None, None));
        assert_eq!("edge".parse::<Kind>(), Ok(Kind::Edge));
        assert!(Kind::ALL.iter().all(|k| k.as_str().parse::<Kind>() == Ok(*k)));
        assert_eq!("nope".parse::<Kind>(), Err(()));
    }

    #[tokio::test]
    async fn dropped_subscribers_are_forgotten_and_noop_wakes_nobody() {
        let waker = ChannelWaker::new();
        drop(waker.subscribe(Kind::Playground));
        waker.wake(Wake::Playground(1.into()));
        assert!(waker.lock().get(&Kind::Playground).is_some_and(Vec::is_empty));
        NoopWaker.wake(Wake::Playground(1.into()));
        let mut rx = waker.subscribe(Kind::Playground);
        drop(waker);
        assert_eq!(rx.recv().await, None);
    }
}
