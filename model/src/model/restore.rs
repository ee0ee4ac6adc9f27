//! Restores from a backup and the host objects they quarantine (issue
//! #53, item 3; the store keeps them, `play_store::restores`).

use crate::time::Timestamp;

/// A restore from a backup, as the store records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restore {
    pub restored_at: Timestamp,
    /// When the restored backup's snapshot was taken.
    pub backup_created_at: Timestamp,
    /// The highest Playground id in the backup: a host object labelled
    /// with a higher id and no row belongs to a Playground made after it.
    pub last_playground_id: i64,
    /// Until then the sweep stops and keeps such objects; after it, they
    /// are orphans like any other.
    pub quarantine_until: Timestamp,
}

impl Restore {
    /// Whether the sweep quarantines the orphaned objects of Playground
    /// `playground` at `now` rather than removing them.
    pub fn quarantines(&self, playground: i64, now: Timestamp) -> bool {
        playground > self.last_playground_id && now < self.quarantine_until
    }
}

/// A host object the sweep stopped and kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuarantinedObject {
    pub playroom_id: i64,
    /// The engine's id of a container or network, a volume's name.
    pub object_id: String,
    /// `container`, `network` or `volume`.
    pub kind: String,
    pub name: String,
    /// The Playground id of the object's label.
    pub playground_id: i64,
    pub quarantined_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_playgrounds_newer_than_the_backup_are_quarantined_and_only_for_the_grace_period() {
        let at = |s: i64| chrono::DateTime::from_timestamp(s, 0).unwrap();
        let restore = Restore {
            restored_at: at(100),
            backup_created_at: at(50),
            last_playground_id: 7,
            quarantine_until: at(200),
        };
        assert!(restore.quarantines(8, at(150)));
        assert!(!restore.quarantines(7, at(150)), "in the backup: an orphan like any other");
        assert!(!restore.quarantines(8, at(200)), "the grace period is over");
    }
}
