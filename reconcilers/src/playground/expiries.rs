//! The expiry of each live Playground as its last pass read it, for the
//! error policy: a pass that fails (the host unreachable, a spec that
//! cannot run) is retried with backoff or waits for a change, and without
//! this a Playground that kept failing expired only once the backoff (up
//! to minutes) or a change came. With it, the retry comes no later than
//! the expiry, and that pass records it.

use std::collections::HashMap;
use std::sync::Mutex;

use play_model::playground::{DesiredState, Playground};
use play_model::time::{self, Timestamp};

/// See the [module documentation](self). One entry per Playground this
/// replica passed that is not destroyed; forgotten when its row goes.
#[derive(Debug, Default)]
pub(super) struct Expiries(Mutex<HashMap<i64, Timestamp>>);

impl Expiries {
    /// Records `p`'s expiry as the pass read it (none once destroyed).
    pub fn note(&self, p: &Playground) {
        let live = p.desired_state != DesiredState::Destroyed;
        match p.expires_at.filter(|_| live) {
            Some(at) => self.with(|map| map.insert(p.id, at)),
            None => self.with(|map| map.remove(&p.id)),
        };
    }

    pub fn forget(&self, id: i64) {
        self.with(|map| map.remove(&id));
    }

    /// Playground `id`'s expiry when it is still ahead: a retry no later
    /// than then expires it. A past one is left out, so a pass that fails
    /// before it can record the expiry backs off instead of spinning.
    pub fn ahead(&self, id: i64) -> Option<Timestamp> {
        let now = time::now();
        self.with(|map| map.get(&id).copied()).filter(|at| *at > now)
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<i64, Timestamp>) -> T) -> T {
        // A panic while the lock was held left a map that is still whole.
        let mut map = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut map)
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use play_model::testing::playground as a_playground;

    #[test]
    fn only_a_live_playgrounds_expiry_ahead_is_given() {
        let expiries = Expiries::default();
        let mut p = a_playground();
        p.expires_at = Some(time::now() + chrono::Duration::minutes(5));
        expiries.note(&p);
        assert_eq!(expiries.ahead(p.id), p.expires_at);
        p.expires_at = Some(time::now() - chrono::Duration::minutes(5));
        expiries.note(&p);
        assert_eq!(expiries.ahead(p.id), None, "past: a failing pass backs off");
        p.expires_at = Some(time::now() + chrono::Duration::minutes(5));
        p.desired_state = DesiredState::Destroyed;
        expiries.note(&p);
        assert_eq!(expiries.ahead(p.id), None, "destroyed: nothing to expire");
        p.desired_state = DesiredState::Running;
        expiries.note(&p);
        expiries.forget(p.id);
        assert_eq!(expiries.ahead(p.id), None);
    }
}
