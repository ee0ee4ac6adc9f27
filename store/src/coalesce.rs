//! Coalesced reads: callers reading the same key at the same time share one
//! store query (issue #16: every query is a hand-off to SQLite's worker
//! thread or a PostgreSQL round trip, and a hot key, such as a Playground
//! polled by many clients, paid one per request).
//!
//! Invariants:
//! - **freshness**: a caller only ever receives the result of a query that
//!   started after its call did, so it sees every write committed before it
//!   asked: exactly what a query of its own would have seen. Nothing is
//!   cached; there is nothing to invalidate. A caller arriving while a query
//!   for its key is in flight waits for the next one, which one of the
//!   waiters runs for all of them;
//! - **liveness**: leadership is a value ([`Leader`]) whose drop hands the
//!   waiting group on, so a leader cancelled mid-query (its client went
//!   away) or never woken stalls nobody: its followers read for themselves
//!   and the next group gets a new leader;
//! - **bounded**: a key has at most [`MAX_WAITING`] waiters; beyond, callers
//!   read for themselves. Keys are held only while a query for them is in
//!   flight;
//! - only a result that is the same for everyone is shared: the value, or
//!   "not found". On any other error each follower reads for itself, so it
//!   gets its own error (and a transient one may pass).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::{Error, Result};

/// The most callers waiting for one key's next query.
pub const MAX_WAITING: usize = 1024;

/// What every follower of a query receives.
type Shared<V> = std::result::Result<V, &'static str>;

enum Turn<K: Eq + Hash + Clone, V> {
    /// Run the next query, for these followers.
    Lead(Leader<K, V>),
    /// The query you waited for answered this.
    Done(Shared<V>),
    /// The query failed in a way that is not everyone's: read yourself.
    ReadYourself,
}

type Follower<K, V> = oneshot::Sender<Turn<K, V>>;

/// A key is present while a query for it is in flight; its list is who
/// waits for the next query.
type Flights<K, V> = Mutex<HashMap<K, Vec<Follower<K, V>>>>;

/// See the [module documentation](self).
pub struct Coalescer<K: Eq + Hash + Clone, V> {
    flights: Arc<Flights<K, V>>,
}

impl<K: Eq + Hash + Clone, V> Default for Coalescer<K, V> {
    fn default() -> Self {
        Coalescer { flights: Arc::new(Mutex::new(HashMap::new())) }
    }
}

impl<K: Eq + Hash + Clone, V> fmt::Debug for Coalescer<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coalescer").field("keys_in_flight", &lock(&self.flights).len()).finish()
    }
}

fn lock<K: Eq + Hash + Clone, V>(flights: &Flights<K, V>) -> MutexGuard<'_, HashMap<K, Vec<Follower<K, V>>>> {
    // Nothing panics while holding the lock; if something did, the map is
    // still a valid map.
    flights.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<K: Eq + Hash + Clone, V: Clone> Coalescer<K, V> {
    /// `read()` for `key`, or the result of a query of it that started
    /// after this call (see the module's invariants).
    pub async fn read<F, Fut>(&self, key: K, read: F) -> Result<V>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<V>>,
    {
        let leader = match self.join(&key) {
            Join::Lead => Leader { flights: self.flights.clone(), key, followers: Vec::new(), armed: true },
            Join::Full => return read().await,
            Join::Wait(rx) => match rx.await {
                Ok(Turn::Lead(leader)) => leader,
                Ok(Turn::Done(Ok(value))) => return Ok(value),
                Ok(Turn::Done(Err(what))) => return Err(Error::NotFound(what)),
                Ok(Turn::ReadYourself) | Err(_) => return read().await,
            },
        };
        let result = read().await;
        leader.finish(&result);
        result
    }
}

enum Join<K: Eq + Hash + Clone, V> {
    /// No query of the key is in flight: run one.
    Lead,
    /// Too many wait already: read alone.
    Full,
    /// Wait for the next query.
    Wait(oneshot::Receiver<Turn<K, V>>),
}

impl<K: Eq + Hash + Clone, V> Coalescer<K, V> {
    fn join(&self, key: &K) -> Join<K, V> {
        let mut flights = lock(&self.flights);
        match flights.get_mut(key) {
            None => {
                flights.insert(key.clone(), Vec::new());
                Join::Lead
            }
            Some(waiting) if waiting.len() >= MAX_WAITING => Join::Full,
            Some(waiting) => {
                let (tx, rx) = oneshot::channel();
                waiting.push(tx);
                Join::Wait(rx)
            }
        }
    }
}

/// The right to run a key's query, with who waits for its answer. Dropped
/// without [`Leader::finish`] (cancelled), its followers read for
/// themselves; dropped either way, the next group gets a leader.
struct Leader<K: Eq + Hash + Clone, V> {
    flights: Arc<Flights<K, V>>,
    key: K,
    followers: Vec<Follower<K, V>>,
    /// Whether dropping hands the next group on (not when the leader is
    /// being handed on itself, under the lock).
    armed: bool,
}

impl<K: Eq + Hash + Clone, V: Clone> Leader<K, V> {
    fn finish(mut self, result: &Result<V>) {
        let shared: Option<Shared<V>> = match result {
            Ok(value) => Some(Ok(value.clone())),
            Err(Error::NotFound(what)) => Some(Err(*what)),
            Err(_) => None,
        };
        for follower in self.followers.drain(..) {
            let turn = match &shared {
                Some(shared) => Turn::Done(shared.clone()),
                None => Turn::ReadYourself,
            };
            // A follower that went away needs no answer.
            let _ = follower.send(turn);
        }
    }
}

impl<K: Eq + Hash + Clone, V> Drop for Leader<K, V> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Followers still here (a cancelled query) read for themselves
        // when their sender drops with `self.followers`.
        let mut flights = lock(&self.flights);
        loop {
            let Some(waiting) = flights.get_mut(&self.key) else { return };
            if waiting.is_empty() {
                flights.remove(&self.key);
                return;
            }
            let mut group = std::mem::take(waiting);
            let first = group.remove(0);
            let next = Leader { flights: self.flights.clone(), key: self.key.clone(), followers: group, armed: true };
            match first.send(Turn::Lead(next)) {
                Ok(()) => return,
                Err(turn) => {
                    // That waiter went away: the next one leads.
                    if let Turn::Lead(mut next) = turn {
                        next.armed = false;
                        if let Some(waiting) = flights.get_mut(&self.key) {
                            *waiting = std::mem::take(&mut next.followers);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "coalesce_tests.rs"]
mod tests;
