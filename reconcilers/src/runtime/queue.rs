//! The keyed work queue: which object runs next, and when.
//!
//! Pure bookkeeping, no tasks and no clock of its own: the runtime passes
//! `now` in. Invariants:
//! - an id is in at most one of `scheduled` or `running`;
//! - a scheduled id has exactly one run-at, the earliest ever requested
//!   since it was last started;
//! - a request for a running id is remembered (the earliest one) and turned
//!   into a schedule when the run finishes, so a change that lands during a
//!   pass is always seen by a later pass.

use std::collections::{BTreeSet, HashMap};

use tokio::time::Instant;

#[derive(Debug, Default)]
pub(crate) struct Queue {
    /// Scheduled ids ordered by run-at (ties by id).
    order: BTreeSet<(Instant, i64)>,
    /// Run-at of each scheduled id.
    at: HashMap<i64, Instant>,
    /// Running ids, each with the earliest run-at requested during its run.
    running: HashMap<i64, Option<Instant>>,
}

impl Queue {
    /// Asks for `id` to run at `at`. An earlier request wins over a later
    /// one; a request for a running id marks it dirty.
    pub(crate) fn schedule(&mut self, id: i64, at: Instant) {
        if let Some(dirty) = self.running.get_mut(&id) {
            *dirty = Some(dirty.map_or(at, |d| d.min(at)));
            return;
        }
        match self.at.get(&id).copied() {
            Some(current) if current <= at => {}
            Some(current) => {
                self.order.remove(&(current, id));
                self.order.insert((at, id));
                self.at.insert(id, at);
            }
            None => {
                self.order.insert((at, id));
                self.at.insert(id, at);
            }
        }
    }

    /// Takes the earliest id due at `now` and marks it running.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<i64> {
        let &(at, id) = self.order.first()?;
        if at > now {
            return None;
        }
        self.order.remove(&(at, id));
        self.at.remove(&id);
        self.running.insert(id, None);
        Some(id)
    }

    /// Ends the run of `id`. It runs again at the earlier of `next` (what the
    /// pass asked for) and any request that arrived during the run.
    pub(crate) fn finish(&mut self, id: i64, next: Option<Instant>) {
        let dirty = self.running.remove(&id).flatten();
        let next = match (dirty, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = next {
            self.schedule(id, at);
        }
    }

    /// The earliest run-at of any scheduled id.
    pub(crate) fn next_at(&self) -> Option<Instant> {
        self.order.first().map(|&(at, _)| at)
    }

    pub(crate) fn is_running(&self, id: i64) -> bool {
        self.running.contains_key(&id)
    }

    pub(crate) fn is_scheduled(&self, id: i64) -> bool {
        self.at.contains_key(&id)
    }

    pub(crate) fn running(&self) -> usize {
        self.running.len()
    }

    /// Scheduled ids already due: waiting for a worker.
    pub(crate) fn due(&self, now: Instant) -> usize {
        self.order.iter().take_while(|&&(at, _)| at <= now).count()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn one_entry_per_id_and_the_earliest_run_at_wins() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.schedule(1, t0 + secs(10));
        q.schedule(1, t0 + secs(5));
        q.schedule(1, t0 + secs(20));
        assert_eq!(q.next_at(), Some(t0 + secs(5)));
        assert_eq!(q.pop_due(t0 + secs(4)), None);
        assert_eq!(q.pop_due(t0 + secs(5)), Some(1));
        assert_eq!(q.pop_due(t0 + secs(30)), None, "deduplicated: one entry only");
    }

    #[test]
    fn a_request_during_a_run_reruns_once_after_it() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.schedule(1, t0);
        assert_eq!(q.pop_due(t0), Some(1));
        q.schedule(1, t0 + secs(1));
        q.schedule(1, t0 + secs(2));
        assert!(!q.is_scheduled(1), "not startable while running");
        assert_eq!(q.pop_due(t0 + secs(9)), None);
        q.finish(1, Some(t0 + secs(60)));
        assert_eq!(q.next_at(), Some(t0 + secs(1)), "the dirty request beats the pass's own requeue");
        assert_eq!(q.pop_due(t0 + secs(9)), Some(1));
        q.finish(1, None);
        assert_eq!(q.next_at(), None);
    }

    #[test]
    fn due_counts_only_entries_whose_time_has_come() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.schedule(1, t0);
        q.schedule(2, t0 + secs(1));
        q.schedule(3, t0 + secs(100));
        assert_eq!(q.due(t0 + secs(1)), 2);
        assert_eq!(q.pop_due(t0 + secs(1)), Some(1));
        assert_eq!(q.pop_due(t0 + secs(1)), Some(2));
        assert_eq!(q.running(), 2);
        assert!(q.is_running(1));
    }
}
