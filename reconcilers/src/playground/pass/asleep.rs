//! The sleep arms (issue #32): an awake Playground idle for its
//! `sleep_after` is put to sleep in the store (the next pass stops its
//! containers), and an asleep one has every container stopped and kept.

use play_model::playground::{self, Playground};
use play_model::time::Timestamp;
use play_store::power;

use super::Pass;
use super::snapshot::Host;
use crate::Result;
use crate::runtime::Action;

impl Pass<'_> {
    /// Puts the Playground to sleep if the store still finds it idle since
    /// before `cutoff` (activity may have come since it was read); whether
    /// it did.
    pub(super) async fn fall_asleep(&self, cutoff: Timestamp) -> Result<bool> {
        Ok(power::sleep_if_idle(&self.r.store, self.fence, self.id, cutoff).await?.held()?)
    }

    /// Every container stopped (in reverse dependency order) and kept.
    pub(super) async fn keep_asleep(&self, p: &Playground, host: &Host) -> Result<Action> {
        let playspec = host.playspec.as_ref().ok_or(playground::DesiredError::NoPlayspec)?;
        let desired = playground::desired_for(p, Some(playspec), &host.files, &host.room, &Default::default())?.desired;
        super::super::sleep::converge_asleep(self.r, self.fence, &host.docker, p, &desired).await
    }
}
