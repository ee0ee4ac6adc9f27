//! What the dashboard's overview draws (`play_store::overview` reads it).

use crate::time::Timestamp;

/// A launch: when the Playground was made, and how long it took to first
/// reach `running` (`None`: not yet).
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub playground_id: i64,
    pub created_at: Timestamp,
    pub to_running: Option<chrono::Duration>,
}
