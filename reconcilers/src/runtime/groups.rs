//! The per-group bound: at most `Config::per_group` passes of one group
//! (for Playgrounds: one Playroom) run at once, so a slow or unreachable
//! host holds at most its own share of the runtime's workers and the
//! others keep theirs (issue #33).
//!
//! Pure bookkeeping, driven by the loop (`controller`), which alone touches
//! it. Invariants:
//! - an id is counted in its group's running count exactly while a pass of
//!   it that was admitted with a known group runs;
//! - a parked id waits for its group only, in at most one place, with the
//!   most urgent lane it was asked for; an urgent one goes before the others;
//! - whenever a group has parked ids, it has at least one running pass
//!   (an id is parked only when its group is full), and each pass that ends
//!   unparks as many as there is room for, so no parked id is forgotten.

use std::collections::{HashMap, VecDeque};

use super::queue::Lane;

/// Whether a due id may start now.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Start its pass (its group, when known, counts it).
    Run,
    /// Its group is not known yet: look it up first (without a pass).
    LookUp,
    /// Its group is full: it waits, parked, for one of its passes to end.
    Parked,
}

#[derive(Debug)]
pub(crate) struct Groups {
    per_group: usize,
    /// The group of each id seen; `None`: it belongs to none.
    of: HashMap<i64, Option<i64>>,
    running: HashMap<i64, usize>,
    parked: HashMap<i64, VecDeque<i64>>,
    parked_lane: HashMap<i64, Lane>,
}

impl Groups {
    /// Groups of at most `per_group` running passes (at least 1).
    pub(crate) fn new(per_group: usize) -> Self {
        Groups {
            per_group: per_group.max(1),
            of: HashMap::new(),
            running: HashMap::new(),
            parked: HashMap::new(),
            parked_lane: HashMap::new(),
        }
    }

    /// Remembers the group of `id` (groups never change: a Playground stays
    /// on its Playroom).
    pub(crate) fn learn(&mut self, id: i64, group: Option<i64>) {
        self.of.insert(id, group);
    }

    /// Decides about due `id`, asked for in `lane`; counts it when it runs.
    pub(crate) fn admit(&mut self, id: i64, lane: Lane) -> Admission {
        let Some(&known) = self.of.get(&id) else { return Admission::LookUp };
        let Some(group) = known else { return Admission::Run };
        let running = self.running.entry(group).or_default();
        if *running < self.per_group {
            *running += 1;
            return Admission::Run;
        }
        match self.parked_lane.get_mut(&id) {
            Some(parked) => *parked = (*parked).max(lane),
            None => {
                self.parked_lane.insert(id, lane);
                let waiting = self.parked.entry(group).or_default();
                if lane == Lane::Urgent { waiting.push_front(id) } else { waiting.push_back(id) }
            }
        }
        Admission::Parked
    }

    /// A pass of `id` admitted by [`Groups::admit`] ended: the ids of its
    /// group that may now start, each with its lane.
    pub(crate) fn finished(&mut self, id: i64) -> Vec<(i64, Lane)> {
        let Some(Some(group)) = self.of.get(&id).copied() else { return Vec::new() };
        let Some(running) = self.running.get_mut(&group) else { return Vec::new() };
        *running = running.saturating_sub(1);
        let room = self.per_group.saturating_sub(*running);
        if *running == 0 {
            self.running.remove(&group);
        }
        let mut freed = Vec::new();
        if let Some(waiting) = self.parked.get_mut(&group) {
            while freed.len() < room {
                let Some(next) = waiting.pop_front() else { break };
                if let Some(lane) = self.parked_lane.remove(&next) {
                    freed.push((next, lane));
                }
            }
            if waiting.is_empty() {
                self.parked.remove(&group);
            }
        }
        freed
    }

    /// Whether `id` waits for its group.
    pub(crate) fn is_parked(&self, id: i64) -> bool {
        self.parked_lane.contains_key(&id)
    }

    /// Parked ids.
    pub(crate) fn parked(&self) -> usize {
        self.parked_lane.len()
    }

    /// Forgets the groups of ids for which `keep` is false and that are
    /// neither parked nor counted (objects that no longer exist).
    pub(crate) fn retain(&mut self, keep: impl Fn(i64) -> bool) {
        let parked = &self.parked_lane;
        self.of.retain(|id, _| keep(*id) || parked.contains_key(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_group_parks_and_each_end_starts_the_next() {
        let mut g = Groups::new(2);
        for id in 1..=5 {
            assert_eq!(g.admit(id, Lane::Routine), Admission::LookUp, "unknown groups are looked up first");
            g.learn(id, Some(7));
        }
        assert_eq!(g.admit(1, Lane::Routine), Admission::Run);
        assert_eq!(g.admit(2, Lane::Routine), Admission::Run);
        assert_eq!(g.admit(3, Lane::Routine), Admission::Parked);
        assert_eq!(g.admit(4, Lane::Routine), Admission::Parked);
        assert_eq!(g.admit(3, Lane::Observed), Admission::Parked, "parked once, at its most urgent lane");
        assert_eq!(g.admit(5, Lane::Urgent), Admission::Parked);
        assert_eq!(g.parked(), 3);
        assert_eq!(g.finished(1), vec![(5, Lane::Urgent)], "an urgent one goes first");
        assert_eq!(g.admit(5, Lane::Urgent), Admission::Run);
        assert_eq!(g.finished(2), vec![(3, Lane::Observed)]);
        assert!(g.is_parked(4));
    }

    #[test]
    fn other_groups_and_ungrouped_ids_are_not_held_back() {
        let mut g = Groups::new(1);
        g.learn(1, Some(7));
        g.learn(2, Some(7));
        g.learn(3, Some(8));
        g.learn(4, None);
        assert_eq!(g.admit(1, Lane::Routine), Admission::Run);
        assert_eq!(g.admit(2, Lane::Routine), Admission::Parked);
        assert_eq!(g.admit(3, Lane::Routine), Admission::Run, "another Playroom has its own share");
        assert_eq!(g.admit(4, Lane::Routine), Admission::Run);
        assert_eq!(g.admit(4, Lane::Routine), Admission::Run, "no group: only the global bound");
        assert_eq!(g.finished(4), vec![]);
        assert_eq!(g.finished(3), vec![]);
        assert_eq!(g.finished(1), vec![(2, Lane::Routine)]);
    }

    #[test]
    fn a_pass_that_ends_frees_as_many_as_there_is_room_for() {
        let mut g = Groups::new(3);
        for id in 1..=6 {
            g.learn(id, Some(1));
        }
        for id in 1..=3 {
            assert_eq!(g.admit(id, Lane::Routine), Admission::Run);
        }
        for id in 4..=6 {
            assert_eq!(g.admit(id, Lane::Routine), Admission::Parked);
        }
        assert_eq!(g.finished(1).len(), 1, "one place free");
        // Freed ids count once they are admitted again: until then the
        // room is offered to the next parked ones too (any extra is parked
        // again at admission), so none waits longer than it must.
        assert_eq!(g.finished(2).len(), 2);
        assert_eq!(g.parked(), 0, "every parked id comes back");
        assert_eq!(g.finished(3), vec![]);
    }

    #[test]
    fn retain_keeps_what_still_waits() {
        let mut g = Groups::new(1);
        g.learn(1, Some(1));
        g.learn(2, Some(1));
        g.learn(3, Some(1));
        assert_eq!(g.admit(1, Lane::Routine), Admission::Run);
        assert_eq!(g.admit(2, Lane::Routine), Admission::Parked);
        g.retain(|id| id == 1);
        assert_eq!(g.admit(3, Lane::Routine), Admission::LookUp, "forgotten");
        assert!(g.is_parked(2));
        assert_eq!(g.finished(1), vec![(2, Lane::Routine)]);
    }
}
