//! Reports, on the Playroom, whether its engine can be reached: every
//! reconciler's connection goes through [`DockerHostGateway::connection`],
//! which tells the [`Reachability`] recorder how it went.
//!
//! # Guarantees
//!
//! - **Only changes are written.** The recorder remembers, per Playroom, the
//!   last outcome it wrote (reached, or the failure's message) and writes
//!   only a different one, so a healthy Playroom costs no store write per
//!   pass. After a restart the first outcome is written once; the store's
//!   conditional `UPDATE` makes that a no-op when nothing changed.
//! - **In order.** Writes are serialised, so two passes racing on a
//!   flapping host cannot leave an older outcome stored after a newer one
//!   (the later call writes last).
//! - **Best effort.** A store failure is logged and forgotten (the outcome
//!   is written on the next attempt): reporting must never fail a pass.
//!
//! [`DockerHostGateway::connection`]: super::DockerHostGateway::connection

use std::collections::HashMap;

use play_model::time;
use play_store::{Store, reachability};
use tokio::sync::Mutex;

use crate::Error;

/// What was last written for one Playroom: `None` reached, `Some(reason)`
/// unreachable.
type Outcome = Option<String>;

/// See the [module documentation](self).
#[derive(Debug)]
pub struct Reachability {
    store: Store,
    written: Mutex<HashMap<i64, Outcome>>,
}

impl Reachability {
    pub fn new(store: Store) -> Self {
        Reachability { store, written: Mutex::new(HashMap::new()) }
    }

    /// Records the outcome of connecting to Playroom `playroom`'s engine,
    /// if it differs from the last one written.
    pub async fn observe<T>(&self, playroom: i64, result: &Result<T, Error>) {
        let outcome: Outcome = result.as_ref().err().map(reason);
        let mut written = self.written.lock().await;
        if written.get(&playroom) == Some(&outcome) {
            return;
        }
        let stored = match &outcome {
            None => reachability::record_reached(&self.store, playroom).await,
            Some(reason) => reachability::record_unreachable(&self.store, playroom, reason, time::now()).await,
        };
        match stored {
            Ok(()) => {
                written.insert(playroom, outcome);
            }
            Err(error) => {
                written.remove(&playroom);
                tracing::warn!(playroom, %error, "could not record whether the Playroom is reachable");
            }
        }
    }
}

/// The failure as the Playroom shows it: `kind: message`, as
/// `test_connection` records `last_error`.
fn reason(error: &Error) -> String {
    format!("{}: {error}", error.kind().as_str())
}
