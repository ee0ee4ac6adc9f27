//! What this process has written to the store, as counters the API's
//! recent bodies (`play_api::recent`) compare: a body rendered before a
//! write of this process is never served after it (issue #33, item 1).
//!
//! Two kinds of writes are counted:
//! - writes whose objects are not known here (an API write request, a
//!   delete that cascades): [`LocalWrites::mark_all`], one counter every
//!   stamp includes;
//! - writes of one object (a reconciler's fenced status write, a wake, the
//!   edge's record of a Playground's routes): [`LocalWrites::mark`], a
//!   counter of the object's slot.
//!
//! Invariants:
//! - a mark is made after the write committed, so a read that starts after
//!   the mark sees the write; a read that started before it holds an older
//!   [`Stamp`], which then no longer equals the current one;
//! - objects share [`SLOTS`] slots (by id): a mark of one object also
//!   retires the bodies of the others in its slot. That costs a read, never
//!   a stale answer, and keeps the memory fixed whatever the number of
//!   objects;
//! - ids of different kinds (a Playroom's, a Playground's) may share a
//!   slot too, for the same price.
//!
//! Other replicas' writes are not seen here; the staleness bound covers
//! them.

use std::sync::atomic::{AtomicU64, Ordering};

/// How many slots object marks are spread over.
pub const SLOTS: usize = 4096;

/// The counters of this process's writes. See the [module
/// documentation](self).
#[derive(Debug)]
pub struct LocalWrites {
    all: AtomicU64,
    slots: Box<[AtomicU64]>,
}

impl Default for LocalWrites {
    fn default() -> Self {
        LocalWrites { all: AtomicU64::new(0), slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect() }
    }
}

/// The counters an object's bodies depend on, taken before a read starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    all: u64,
    object: u64,
}

impl LocalWrites {
    fn slot(&self, object_id: i64) -> &AtomicU64 {
        // `rem_euclid` of a positive modulus is in `0..SLOTS`.
        let index = usize::try_from(object_id.rem_euclid(SLOTS as i64)).unwrap_or_default();
        &self.slots[index]
    }

    /// A write of objects not known here committed.
    pub fn mark_all(&self) {
        self.all.fetch_add(1, Ordering::SeqCst);
    }

    /// A write of object `object_id` committed.
    pub fn mark(&self, object_id: i64) {
        self.slot(object_id).fetch_add(1, Ordering::SeqCst);
    }

    /// The counters of `object_id` now.
    pub fn stamp(&self, object_id: i64) -> Stamp {
        Stamp { all: self.all.load(Ordering::SeqCst), object: self.slot(object_id).load(Ordering::SeqCst) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_changes_the_stamp_of_its_object_and_of_no_other_slot() {
        let writes = LocalWrites::default();
        let (seven, eight) = (writes.stamp(7), writes.stamp(8));
        writes.mark(7);
        assert_ne!(writes.stamp(7), seven);
        assert_eq!(writes.stamp(8), eight);
        // Ids a multiple of SLOTS apart share a slot: a spurious change.
        assert_ne!(writes.stamp(7 + SLOTS as i64), seven);
    }

    #[test]
    fn a_mark_of_all_changes_every_stamp() {
        let writes = LocalWrites::default();
        let (seven, negative) = (writes.stamp(7), writes.stamp(-3));
        writes.mark_all();
        assert_ne!(writes.stamp(7), seven);
        assert_ne!(writes.stamp(-3), negative);
    }
}
