//! The expiry arm: a Playground past `expires_at` is marked destroyed
//! with `playground.expired`; the next pass cleans its host.

use play_model::time::Timestamp;
use play_store::playground_status as status_store;

use super::Pass;
use crate::Result;
use crate::runtime::Action;

impl Pass<'_> {
    /// Records the expiry (nothing when a change came first: the store
    /// checks the row again) and asks for the next pass at once.
    pub(super) async fn expire(&self, now: Timestamp) -> Result<Action> {
        status_store::expire_if_due(&self.r.store, self.fence, self.id, now).await?.held()?;
        Ok(Action::requeue_now())
    }
}
