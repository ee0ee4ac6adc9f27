//! What can be woken, and the seam through which a committed change wakes
//! the reconcilers (`play_core::wake` has the in-process waker and its
//! relay to other replicas; `play_store::wakes` derives the wakes from
//! the change's transaction).
//!
//! [`Kind`] is the one list of what can be woken, shared by the store, the
//! API, the reconcilers and the binary's wiring, so a wake cannot be sent
//! under a name nobody subscribes to. (A reconciler's `NAME`, which its
//! metrics and leases carry, is a separate label.)

use std::fmt::Debug;

use crate::ids::{EventId, ObjectId, PlaygroundId, PlayroomId, PlayzoneId, ScheduleId, TriggerId};

/// The kind of object a wake is about; each is reconciled by one loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A Playground's desired state changed (the Playground reconciler).
    Playground,
    /// A Playroom should be looked at (the Playroom sweep).
    Playroom,
    /// A Playroom's routes or edge settings may have changed (the edge
    /// reconciler; the id is the Playroom's).
    Edge,
    /// A Playzone should be synced with its repository (the sync loop).
    Playzone,
    /// The outbox has an event to fan out now (the webhook dispatcher; the
    /// id is the event's).
    Webhooks,
    /// A schedule's settings changed (the schedule loop).
    Schedule,
    /// A trigger's settings or the branch index it follows changed (the
    /// trigger loop).
    Trigger,
}

impl std::str::FromStr for Kind {
    type Err = ();

    /// The kind [`Kind::as_str`] names.
    fn from_str(s: &str) -> Result<Kind, ()> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == s).ok_or(())
    }
}

impl Kind {
    pub const ALL: &'static [Kind] =
        &[Kind::Playground, Kind::Playroom, Kind::Edge, Kind::Playzone, Kind::Webhooks, Kind::Schedule, Kind::Trigger];

    /// A label for logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Playground => "playground",
            Kind::Playroom => "playroom",
            Kind::Edge => "edge",
            Kind::Playzone => "playzone",
            Kind::Webhooks => "webhooks",
            Kind::Schedule => "schedule",
            Kind::Trigger => "trigger",
        }
    }
}

/// One wake: the loop to wake, with the typed id of the object it is
/// about (`crate::ids`), so a Playroom's id cannot wake a Playground's
/// loop. Ordered by kind, then id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Wake {
    Playground(PlaygroundId),
    Playroom(PlayroomId),
    /// A Playroom's edge.
    Edge(PlayroomId),
    Playzone(PlayzoneId),
    /// The webhook dispatcher, for an event of the outbox.
    Webhooks(EventId),
    Schedule(ScheduleId),
    Trigger(TriggerId),
}

impl Wake {
    /// The wake of `kind` for row `id` (a wake that travelled as text:
    /// between replicas, through the store's notes).
    pub fn of(kind: Kind, id: i64) -> Wake {
        match kind {
            Kind::Playground => Wake::Playground(id.into()),
            Kind::Playroom => Wake::Playroom(id.into()),
            Kind::Edge => Wake::Edge(id.into()),
            Kind::Playzone => Wake::Playzone(id.into()),
            Kind::Webhooks => Wake::Webhooks(id.into()),
            Kind::Schedule => Wake::Schedule(id.into()),
            Kind::Trigger => Wake::Trigger(id.into()),
        }
    }

    /// The loop it wakes.
    pub fn kind(self) -> Kind {
        match self {
            Wake::Playground(_) => Kind::Playground,
            Wake::Playroom(_) => Kind::Playroom,
            Wake::Edge(_) => Kind::Edge,
            Wake::Playzone(_) => Kind::Playzone,
            Wake::Webhooks(_) => Kind::Webhooks,
            Wake::Schedule(_) => Kind::Schedule,
            Wake::Trigger(_) => Kind::Trigger,
        }
    }

    /// The object's row id.
    pub fn id(self) -> i64 {
        match self {
            Wake::Playground(id) => id.get(),
            Wake::Playroom(id) | Wake::Edge(id) => id.get(),
            Wake::Playzone(id) => id.get(),
            Wake::Webhooks(id) => id.get(),
            Wake::Schedule(id) => id.get(),
            Wake::Trigger(id) => id.get(),
        }
    }
}

/// Something that can tell the reconcilers an object changed.
///
/// Call it after the transaction that recorded the change has committed, so
/// the reconciler woken by it reads the new state. It never blocks and never
/// fails.
pub trait Waker: Send + Sync + Debug {
    fn wake(&self, wake: Wake);
}

/// A waker that wakes nobody: for commands and tests that run no
/// reconcilers. The periodic resync of a runtime elsewhere still finds the
/// change.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopWaker;

impl Waker for NoopWaker {
    fn wake(&self, _wake: Wake) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_is_its_kind_and_id_and_back() {
        for kind in Kind::ALL {
            let wake = Wake::of(*kind, 7);
            assert_eq!((wake.kind(), wake.id()), (*kind, 7));
        }
        assert_eq!(Wake::of(Kind::Edge, 3), Wake::Edge(PlayroomId(3)));
        assert_ne!(Wake::of(Kind::Edge, 3), Wake::Playroom(PlayroomId(3)));
    }
}
