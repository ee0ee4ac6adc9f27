//! Per-Playground rate limit of event wake-ups.
//!
//! Without it a crash-looping container would keep its Playground's pass
//! running back to back: the pass starts the container, the container dies,
//! the `die` event wakes the Playground during the pass, and the runtime
//! runs it again the moment it ends. The throttle gives event wake-ups the
//! pace of the reconciler's own polling instead.
//!
//! Invariants:
//! - an id is yielded at most once per `cooldown`;
//! - no wake-up is lost: an id that arrives within the cooldown of its last
//!   yield is held back and yielded when the cooldown ends, once, however
//!   many times it arrived meanwhile;
//! - other ids are not delayed by a held one.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Bound on remembered ids before the expired ones are forgotten.
const REMEMBER: usize = 4096;

struct State {
    rx: mpsc::Receiver<i64>,
    cooldown: Duration,
    /// When each id was last yielded (only ids within their cooldown matter).
    last: HashMap<i64, Instant>,
    /// Held-back ids by release time.
    held: BTreeSet<(Instant, i64)>,
    held_ids: HashSet<i64>,
}

impl State {
    fn yielded(&mut self, id: i64, now: Instant) {
        self.last.insert(id, now);
        if self.last.len() > REMEMBER {
            let cooldown = self.cooldown;
            self.last.retain(|_, at| now.duration_since(*at) < cooldown);
        }
    }

    /// Yields `id` now (`true`) or holds it until its cooldown ends.
    fn arrive(&mut self, id: i64, now: Instant) -> bool {
        if self.held_ids.contains(&id) {
            return false;
        }
        match self.last.get(&id) {
            Some(&last) if now.duration_since(last) < self.cooldown => {
                self.held.insert((last + self.cooldown, id));
                self.held_ids.insert(id);
                false
            }
            _ => {
                self.yielded(id, now);
                true
            }
        }
    }

    fn release_due(&mut self, now: Instant) -> Option<i64> {
        let &(at, id) = self.held.first()?;
        if at > now {
            return None;
        }
        self.held.remove(&(at, id));
        self.held_ids.remove(&id);
        self.yielded(id, now);
        Some(id)
    }
}

/// The ids received on `rx`, each at most once per `cooldown` (see the
/// module documentation). Ends when `rx` closes.
pub fn throttle(rx: mpsc::Receiver<i64>, cooldown: Duration) -> impl Stream<Item = i64> + Send + 'static {
    let state = State { rx, cooldown, last: HashMap::new(), held: BTreeSet::new(), held_ids: HashSet::new() };
    futures::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(id) = s.release_due(Instant::now()) {
                return Some((id, s));
            }
            let next = s.held.first().map(|&(at, _)| at);
            tokio::select! {
                received = s.rx.recv() => {
                    let id = received?;
                    if s.arrive(id, Instant::now()) {
                        return Some((id, s));
                    }
                }
                () = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

    use futures::StreamExt;

    use super::*;

    /// The next id, if one comes within `within`.
    async fn next(ids: &mut (impl Stream<Item = i64> + Unpin), within: Duration) -> Option<i64> {
        tokio::time::timeout(within, ids.next()).await.ok().flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn repeats_within_the_cooldown_come_once_when_it_ends_and_others_pass() {
        let (tx, rx) = mpsc::channel(16);
        let mut ids = Box::pin(throttle(rx, Duration::from_secs(2)));
        let ms = Duration::from_millis;

        tx.send(1).await.unwrap();
        assert_eq!(next(&mut ids, ms(1)).await, Some(1), "the first event passes at once");
        tx.send(1).await.unwrap();
        tx.send(1).await.unwrap();
        tx.send(2).await.unwrap();
        assert_eq!(next(&mut ids, ms(1)).await, Some(2), "another id is not held back");
        assert_eq!(next(&mut ids, ms(1500)).await, None, "1 is within its cooldown");
        assert_eq!(next(&mut ids, ms(600)).await, Some(1), "held back, not lost");
        assert_eq!(next(&mut ids, ms(5000)).await, None, "two repeats, one wake-up");

        tx.send(1).await.unwrap();
        assert_eq!(next(&mut ids, ms(1)).await, Some(1), "after a quiet cooldown it passes at once");
        drop(tx);
        assert_eq!(ids.next().await, None, "ends with its sender");
    }
}
