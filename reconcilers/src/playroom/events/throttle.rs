//! Per-Playground rate limit of event wake-ups.
//!
//! Without it a crash-looping container would keep its Playground's pass
//! running back to back: the pass starts the container, the container dies,
//! the `die` event wakes the Playground during the pass, and the runtime
//! runs it again the moment it ends. The throttle gives event wake-ups the
//! pace of the reconciler's own polling instead.
//!
//! A health transition ([`Wake::health`]) waits less: it is what a rollout
//! waiting on a healthcheck (a dependency's `service_healthy`, the
//! Playground's own `running`) needs to go on, and it followed its
//! container's `start` event, whose wake-up began the cooldown, by only a
//! healthcheck interval. Holding it for the rest of the cooldown cost
//! every such step up to the whole cooldown (issue #33). The engine
//! reports a health status only when it changes, so a flapping
//! healthcheck is still paced, by the shorter spacing.
//!
//! Invariants:
//! - an id is yielded at most once per `cooldown`, or, for a health
//!   transition, per `health_cooldown` (so at most `1 / health_cooldown`
//!   times a second whatever arrives);
//! - no wake-up is lost: an id that arrives within its spacing from its
//!   last yield is held back and yielded when the spacing ends, once,
//!   however many times it arrived meanwhile (the earliest release of
//!   what arrived wins);
//! - other ids are not delayed by a held one.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Bound on remembered ids before the expired ones are forgotten.
const REMEMBER: usize = 4096;

/// One event's wake-up of Playground `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wake {
    pub id: i64,
    /// A `health_status` event: spaced by the shorter `health_cooldown`.
    pub health: bool,
}

impl Wake {
    pub fn of(id: i64) -> Self {
        Wake { id, health: false }
    }
}

/// How far apart wake-ups of one id are spaced.
#[derive(Clone, Copy, Debug)]
pub struct Spacing {
    pub cooldown: Duration,
    pub health_cooldown: Duration,
}

struct State {
    rx: mpsc::Receiver<Wake>,
    spacing: Spacing,
    /// When each id was last yielded (only ids within their cooldown matter).
    last: HashMap<i64, Instant>,
    /// Held-back ids by release time.
    held: BTreeSet<(Instant, i64)>,
    /// The release time of each held id.
    held_at: HashMap<i64, Instant>,
}

impl State {
    fn yielded(&mut self, id: i64, now: Instant) {
        if let Some(at) = self.held_at.remove(&id) {
            self.held.remove(&(at, id));
        }
        self.last.insert(id, now);
        if self.last.len() > REMEMBER {
            let cooldown = self.spacing.cooldown.max(self.spacing.health_cooldown);
            self.last.retain(|_, at| now.duration_since(*at) < cooldown);
        }
    }

    /// Yields the wake's id now (`true`) or holds it until its spacing
    /// from the last yield ends (an earlier hold is kept).
    fn arrive(&mut self, wake: Wake, now: Instant) -> bool {
        let Wake { id, health } = wake;
        let spacing = if health { self.spacing.health_cooldown } else { self.spacing.cooldown };
        let release = match self.last.get(&id) {
            Some(&last) if now.duration_since(last) < spacing => last + spacing,
            _ => {
                self.yielded(id, now);
                return true;
            }
        };
        match self.held_at.get(&id) {
            Some(&at) if at <= release => {}
            held => {
                if let Some(&at) = held {
                    self.held.remove(&(at, id));
                }
                self.held.insert((release, id));
                self.held_at.insert(id, release);
            }
        }
        false
    }

    fn release_due(&mut self, now: Instant) -> Option<i64> {
        let &(at, id) = self.held.first()?;
        if at > now {
            return None;
        }
        self.yielded(id, now);
        Some(id)
    }
}

/// The ids of the wakes received on `rx`, each spaced by `spacing` (see the
/// module documentation). Ends when `rx` closes.
pub fn throttle(rx: mpsc::Receiver<Wake>, spacing: Spacing) -> impl Stream<Item = i64> + Send + 'static {
    let state = State { rx, spacing, last: HashMap::new(), held: BTreeSet::new(), held_at: HashMap::new() };
    futures::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(id) = s.release_due(Instant::now()) {
                return Some((id, s));
            }
            let next = s.held.first().map(|&(at, _)| at);
            tokio::select! {
                received = s.rx.recv() => {
                    let wake = received?;
                    if s.arrive(wake, Instant::now()) {
                        return Some((wake.id, s));
                    }
                }
                () = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {

    use futures::StreamExt;

    use super::*;

    /// The next id, if one comes within `within`.
    async fn next(ids: &mut (impl Stream<Item = i64> + Unpin), within: Duration) -> Option<i64> {
        tokio::time::timeout(within, ids.next()).await.ok().flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn repeats_within_the_cooldown_come_once_when_it_ends_and_others_pass() {
        let (tx, rx) = mpsc::channel(16);
        let spacing = Spacing { cooldown: Duration::from_secs(2), health_cooldown: Duration::from_millis(100) };
        let mut ids = Box::pin(throttle(rx, spacing));
        let ms = Duration::from_millis;

        tx.send(Wake::of(1)).await.unwrap();
        assert_eq!(next(&mut ids, ms(1)).await, Some(1), "the first event passes at once");
        tx.send(Wake::of(1)).await.unwrap();
        tx.send(Wake::of(1)).await.unwrap();
        tx.send(Wake::of(2)).await.unwrap();
        assert_eq!(next(&mut ids, ms(1)).await, Some(2), "another id is not held back");
        assert_eq!(next(&mut ids, ms(1500)).await, None, "1 is within its cooldown");
        assert_eq!(next(&mut ids, ms(600)).await, Some(1), "held back, not lost");
        assert_eq!(next(&mut ids, ms(5000)).await, None, "two repeats, one wake-up");

        tx.send(Wake::of(1)).await.unwrap();
        assert_eq!(next(&mut ids, ms(1)).await, Some(1), "after a quiet cooldown it passes at once");
        drop(tx);
        assert_eq!(ids.next().await, None, "ends with its sender");
    }

    /// A health transition waits out only the shorter spacing, also when
    /// an ordinary wake of the same id is already held (it is released
    /// once, early); ordinary wakes after it keep the full cooldown.
    #[tokio::test(start_paused = true)]
    async fn a_health_transition_waits_only_the_short_spacing() {
        let (tx, rx) = mpsc::channel(16);
        let spacing = Spacing { cooldown: Duration::from_secs(2), health_cooldown: Duration::from_millis(100) };
        let mut ids = Box::pin(throttle(rx, spacing));
        let ms = Duration::from_millis;
        let health = Wake { id: 1, health: true };

        tx.send(Wake::of(1)).await.unwrap();
        assert_eq!(next(&mut ids, ms(1)).await, Some(1), "a container started");
        tx.send(health).await.unwrap();
        assert_eq!(next(&mut ids, ms(99)).await, None, "within the short spacing: held");
        assert_eq!(next(&mut ids, ms(2)).await, Some(1), "released after 100 ms, not 2 s");

        tx.send(Wake::of(1)).await.unwrap();
        assert_eq!(next(&mut ids, ms(500)).await, None, "an ordinary wake is held");
        tx.send(health).await.unwrap();
        assert_eq!(next(&mut ids, ms(1)).await, Some(1), "past the short spacing: the held wake goes at once");
        assert_eq!(next(&mut ids, ms(5000)).await, None, "and only once");

        // A flapping healthcheck: one wake per short spacing at most.
        let started = Instant::now();
        let mut woken = 0;
        for _ in 0..50 {
            tx.send(health).await.unwrap();
            tokio::time::sleep(ms(10)).await;
            while next(&mut ids, ms(0)).await.is_some() {
                woken += 1;
            }
        }
        let elapsed = started.elapsed().as_millis();
        assert!(woken <= elapsed / 100 + 1, "{woken} wakes in {elapsed} ms");
    }
}
