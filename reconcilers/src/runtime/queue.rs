//! The keyed work queue: which object runs next, and when.
//!
//! Pure bookkeeping, no tasks and no clock of its own: the runtime passes
//! `now` in. Invariants:
//! - an id is in at most one of `scheduled` or `running`;
//! - a scheduled id has exactly one run-at, the earliest ever requested
//!   since it was last started, and one [`Lane`], the most urgent ever
//!   requested since then;
//! - a request for a running id is remembered (the earliest one, the most
//!   urgent lane) and turned into a schedule when the run finishes, so a
//!   change that lands during a pass is always seen by a later pass;
//! - of the ids due, an [`Lane::Urgent`] one always starts before an
//!   [`Lane::Observed`] one, and that before a [`Lane::Routine`] one, so a
//!   change someone asked for is never stuck behind thousands of host
//!   events or resync visits (issue #16: with 10,000 Playgrounds one
//!   rollout waited 13-21 s behind them).

use std::collections::{BTreeSet, HashMap};

use tokio::time::Instant;

/// Why an object is asked to run, which decides its turn among the due.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Lane {
    /// Periodic visits and the passes' own timers (resync, requeue, backoff,
    /// a busy lease's retry).
    Routine,
    /// The host reported a change (a Playroom's Docker events), which
    /// play's own passes cause too: thousands at once when many Playgrounds
    /// start or a Playroom's event stream reconnects.
    Observed,
    /// Someone asked for a change: a wake from the API.
    Urgent,
}

/// Most urgent first.
const LANES: [Lane; 3] = [Lane::Urgent, Lane::Observed, Lane::Routine];

#[derive(Debug, Default)]
pub(crate) struct Queue {
    /// Scheduled ids of each lane ordered by run-at (ties by id).
    routine: BTreeSet<(Instant, i64)>,
    observed: BTreeSet<(Instant, i64)>,
    urgent: BTreeSet<(Instant, i64)>,
    /// Run-at and lane of each scheduled id.
    at: HashMap<i64, (Instant, Lane)>,
    /// Running ids, each with the earliest run-at (and most urgent lane)
    /// requested during its run.
    running: HashMap<i64, Option<(Instant, Lane)>>,
    /// Requests that made a new entry (an id scheduled, or a running id
    /// marked dirty) since [`Queue::take_added`]; merged ones are not
    /// counted, as controller-runtime's `workqueue_adds_total` does not
    /// count an add of an item already queued.
    added: u64,
}

impl Queue {
    fn lane_mut(&mut self, lane: Lane) -> &mut BTreeSet<(Instant, i64)> {
        match lane {
            Lane::Routine => &mut self.routine,
            Lane::Observed => &mut self.observed,
            Lane::Urgent => &mut self.urgent,
        }
    }

    /// Asks for `id` to run at `at` in `lane`. An earlier request wins over
    /// a later one and an urgent lane over a routine one; a request for a
    /// running id marks it dirty.
    pub(crate) fn schedule(&mut self, id: i64, at: Instant, lane: Lane) {
        if let Some(dirty) = self.running.get_mut(&id) {
            if dirty.is_none() {
                self.added += 1;
            }
            *dirty = Some(dirty.map_or((at, lane), |(a, l)| (a.min(at), l.max(lane))));
            return;
        }
        let wanted = match self.at.get(&id).copied() {
            Some((current, current_lane)) => {
                let wanted = (current.min(at), current_lane.max(lane));
                if wanted == (current, current_lane) {
                    return;
                }
                self.lane_mut(current_lane).remove(&(current, id));
                wanted
            }
            None => {
                self.added += 1;
                (at, lane)
            }
        };
        self.lane_mut(wanted.1).insert((wanted.0, id));
        self.at.insert(id, wanted);
    }

    /// Marks `id` dirty (to run again at `at` in `lane` after its run)
    /// only if it is running; otherwise nothing. For a change another
    /// replica accepted: that replica runs the pass itself unless this
    /// one is in the middle of it (`play_core::wake`).
    pub(crate) fn schedule_if_running(&mut self, id: i64, at: Instant, lane: Lane) {
        if self.running.contains_key(&id) {
            self.schedule(id, at, lane);
        }
    }

    /// Takes the earliest due id of the most urgent lane that has one and
    /// marks it running; the id, its lane, and the instant it became due.
    pub(crate) fn pop_due_since(&mut self, now: Instant) -> Option<(i64, Lane, Instant)> {
        let lane = LANES.into_iter().find(|&lane| self.lane(lane).first().is_some_and(|&(at, _)| at <= now))?;
        let (due, id) = self.lane_mut(lane).pop_first()?;
        self.at.remove(&id);
        self.running.insert(id, None);
        Some((id, lane, due))
    }

    /// [`Queue::pop_due_since`] without the instant.
    #[cfg(test)]
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(i64, Lane)> {
        self.pop_due_since(now).map(|(id, lane, _)| (id, lane))
    }

    /// How many requests made a new entry since the last call.
    pub(crate) fn take_added(&mut self) -> u64 {
        std::mem::take(&mut self.added)
    }

    fn lane(&self, lane: Lane) -> &BTreeSet<(Instant, i64)> {
        match lane {
            Lane::Routine => &self.routine,
            Lane::Observed => &self.observed,
            Lane::Urgent => &self.urgent,
        }
    }

    /// Ends the run of `id`. It runs again at the earlier of `next` (what the
    /// pass asked for, routine) and any request that arrived during the run
    /// (in the lane that request asked for).
    pub(crate) fn finish(&mut self, id: i64, next: Option<Instant>) {
        let dirty = self.running.remove(&id).flatten();
        if let Some(at) = next {
            self.schedule(id, at, Lane::Routine);
        }
        if let Some((at, lane)) = dirty {
            // Counted as an add when it marked the running id dirty.
            let added = self.added;
            self.schedule(id, at, lane);
            self.added = added;
        }
    }

    /// The earliest run-at of any scheduled id.
    pub(crate) fn next_at(&self) -> Option<Instant> {
        LANES.into_iter().filter_map(|lane| self.lane(lane).first().map(|&(at, _)| at)).min()
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
        LANES.into_iter().map(|lane| self.lane(lane).iter().take_while(|&&(at, _)| at <= now).count()).sum()
    }

    /// Scheduled ids, due or not: one entry per object at most, so the
    /// queue's memory is bounded by the number of objects.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.at.len()
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
        q.schedule(1, t0 + secs(10), Lane::Routine);
        q.schedule(1, t0 + secs(5), Lane::Routine);
        q.schedule(1, t0 + secs(20), Lane::Routine);
        assert_eq!(q.next_at(), Some(t0 + secs(5)));
        assert_eq!(q.pop_due(t0 + secs(4)).map(|(id, _)| id), None);
        assert_eq!(q.pop_due(t0 + secs(5)).map(|(id, _)| id), Some(1));
        assert_eq!(q.pop_due(t0 + secs(30)).map(|(id, _)| id), None, "deduplicated: one entry only");
    }

    #[test]
    fn a_request_during_a_run_reruns_once_after_it() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.schedule(1, t0, Lane::Routine);
        assert_eq!(q.pop_due(t0).map(|(id, _)| id), Some(1));
        q.schedule(1, t0 + secs(1), Lane::Routine);
        q.schedule(1, t0 + secs(2), Lane::Routine);
        assert!(!q.is_scheduled(1), "not startable while running");
        assert_eq!(q.pop_due(t0 + secs(9)).map(|(id, _)| id), None);
        q.finish(1, Some(t0 + secs(60)));
        assert_eq!(q.next_at(), Some(t0 + secs(1)), "the dirty request beats the pass's own requeue");
        assert_eq!(q.pop_due(t0 + secs(9)).map(|(id, _)| id), Some(1));
        q.finish(1, None);
        assert_eq!(q.next_at(), None);
    }

    #[test]
    fn a_remote_wake_reruns_a_running_id_and_leaves_the_others_alone() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.schedule_if_running(1, t0, Lane::Urgent);
        assert!(!q.is_scheduled(1) && q.next_at().is_none(), "not running here: the other replica runs it");
        q.schedule(2, t0, Lane::Routine);
        assert_eq!(q.pop_due(t0), Some((2, Lane::Routine)));
        q.schedule_if_running(2, t0, Lane::Urgent);
        q.finish(2, None);
        assert_eq!(q.pop_due(t0), Some((2, Lane::Urgent)), "run again right after its run");
    }

    #[test]
    fn due_counts_only_entries_whose_time_has_come() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.schedule(1, t0, Lane::Routine);
        q.schedule(2, t0 + secs(1), Lane::Routine);
        q.schedule(3, t0 + secs(100), Lane::Routine);
        assert_eq!(q.due(t0 + secs(1)), 2);
        assert_eq!(q.pop_due(t0 + secs(1)).map(|(id, _)| id), Some(1));
        assert_eq!(q.pop_due(t0 + secs(1)).map(|(id, _)| id), Some(2));
        assert_eq!(q.running(), 2);
        assert!(q.is_running(1));
    }

    #[test]
    fn a_change_starts_before_a_backlog_of_routine_visits() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        for id in 1..=10_000 {
            q.schedule(id, t0, Lane::Routine);
        }
        q.schedule(20_000, t0 + secs(1), Lane::Urgent);
        assert_eq!(q.pop_due(t0).map(|(id, _)| id), Some(1), "not due yet: the backlog runs meanwhile");
        assert_eq!(q.pop_due(t0 + secs(1)).map(|(id, _)| id), Some(20_000), "due: ahead of 9,999 routine visits");
        assert_eq!(q.pop_due(t0 + secs(1)).map(|(id, _)| id), Some(2));
        assert_eq!(q.due(t0 + secs(1)), 9_998);
    }

    #[test]
    fn only_requests_that_make_a_new_entry_count_as_adds() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.schedule(1, t0 + secs(5), Lane::Routine);
        q.schedule(1, t0, Lane::Urgent);
        q.schedule(2, t0 + secs(1), Lane::Routine);
        assert_eq!(q.take_added(), 2, "the second request for 1 merged");
        assert_eq!(q.pop_due_since(t0), Some((1, Lane::Urgent, t0)));
        q.schedule(1, t0, Lane::Routine);
        q.schedule(1, t0, Lane::Routine);
        assert_eq!(q.take_added(), 1, "a running id marked dirty once");
        q.finish(1, None);
        assert_eq!(q.take_added(), 0, "the dirty mark was already counted");
        assert_eq!(q.take_added(), 0);
    }

    #[test]
    fn a_wake_makes_a_scheduled_visit_urgent_and_never_later() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.schedule(1, t0, Lane::Routine);
        q.schedule(2, t0 + secs(30), Lane::Routine);
        q.schedule(2, t0 + secs(5), Lane::Urgent);
        q.schedule(2, t0 + secs(60), Lane::Routine);
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop_due(t0 + secs(5)).map(|(id, _)| id), Some(2), "urgent, at the earlier time");
        assert_eq!(q.pop_due(t0 + secs(5)).map(|(id, _)| id), Some(1));
    }

    #[test]
    fn a_wake_during_a_run_stays_urgent_after_it() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.schedule(1, t0, Lane::Routine);
        q.schedule(2, t0, Lane::Routine);
        assert_eq!(q.pop_due(t0).map(|(id, _)| id), Some(1));
        q.schedule(1, t0, Lane::Urgent);
        q.finish(1, Some(t0 + secs(60)));
        assert_eq!(q.pop_due(t0).map(|(id, _)| id), Some(1), "the wake during the run beats the waiting routine visit");
        assert_eq!(q.pop_due(t0).map(|(id, _)| id), Some(2));
    }

    #[test]
    fn api_wakes_before_host_events_before_routine_visits() {
        let t0 = Instant::now();
        let mut q = Queue::default();
        q.schedule(1, t0, Lane::Routine);
        q.schedule(2, t0, Lane::Observed);
        q.schedule(3, t0 + secs(1), Lane::Urgent);
        q.schedule(4, t0 + secs(1), Lane::Observed);
        assert_eq!(q.pop_due(t0).map(|(id, _)| id), Some(2));
        assert_eq!(q.pop_due(t0 + secs(1)).map(|(id, _)| id), Some(3));
        assert_eq!(q.pop_due(t0 + secs(1)).map(|(id, _)| id), Some(4));
        assert_eq!(q.pop_due(t0 + secs(1)).map(|(id, _)| id), Some(1));
    }
}
