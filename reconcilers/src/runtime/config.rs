//! The tuning of a runtime ([`Config`]) and the replica id its leases are
//! claimed as ([`replica_id`], [`lease_owner`]): what an operator or a test sets, apart
//! from the loop that reads it (`controller`).

use std::sync::OnceLock;
use std::time::Duration;

use play_store::Backend;
use rand::Rng;

use super::Backoff;

/// How a [`Runtime`](super::Runtime) schedules.
#[derive(Clone, Debug)]
pub struct Config {
    /// Passes running at once, across objects (at least 1).
    pub concurrency: usize,
    /// Passes of one group running at once (at least 1), for a grouped
    /// reconciler: a Playground's passes on one Playroom. Keeps what one
    /// host is asked at once where it was with the old global default (4;
    /// an SSH Playroom's sshd allows 10 sessions per connection by default)
    /// while `concurrency` serves many Playrooms.
    pub per_group: usize,
    /// How often every listed object is visited; the safety net for lost
    /// wakes and for changes made behind play's back. Keep it at most 60 s.
    /// With more objects than [`Config::resync_rate`] allows in this period,
    /// the period grows to fit the rate.
    pub resync_every: Duration,
    /// The most resync visits per second in steady state. Visits are spread
    /// evenly over the period (each object at its own fixed offset), so the
    /// load is flat, and a large installation's period is stretched instead
    /// of its CPU: 10,000 objects at 20/s are each visited every 500 s.
    /// Changes do not wait for resyncs (wakes and host events run first).
    pub resync_rate: u32,
    /// The most visits per second of the first resync after start-up: a
    /// restarted process revisits everything quickly (10,000 objects within
    /// 40 s at 250/s) but not all at once.
    pub startup_rate: u32,
    /// How long a claimed lease lasts; renewed every third of it while the
    /// pass runs. A crashed replica's objects are free again after this, and
    /// a replica that found one busy retries at its expiry: 8 s by default,
    /// so another replica attends them within 10 s (issue #33; 60 s
    /// before). It is also how long a replica's heartbeat may be silent
    /// before another wakes what it left unconverged (`crate::heartbeat`). Replicas' clocks must agree well within it (NTP): a replica
    /// whose clock runs ahead takes over early, which fencing makes safe
    /// but wasteful.
    pub lease_duration: Duration,
    /// When an object's lease is held by another replica, try again after
    /// about this long (jittered by +-50%).
    pub lease_busy_retry: Duration,
    pub backoff: Backoff,
    /// On shutdown, how long running passes may take to finish before they
    /// are dropped.
    pub shutdown_grace: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            concurrency: 48,
            per_group: 4,
            resync_every: Duration::from_secs(30),
            resync_rate: 20,
            startup_rate: 250,
            lease_duration: Duration::from_secs(8),
            lease_busy_retry: Duration::from_secs(5),
            backoff: Backoff::default(),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// This process's replica id: random, chosen once, the default owner of
/// every lease this process claims.
pub fn replica_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| format!("{}-{:012x}", std::process::id(), rand::thread_rng().r#gen::<u64>() >> 16))
}

/// The lease owner of a `play serve` process: the operator's `configured`
/// id when set. SQLite runs one replica, so a fixed id lets a restarted
/// process take its own leases back at once instead of waiting for them to
/// expire; PostgreSQL replicas each get a random one ([`replica_id`]).
pub fn lease_owner(configured: Option<&str>, backend: Backend) -> String {
    match (configured, backend) {
        (Some(id), _) => id.to_owned(),
        (None, Backend::Sqlite) => "local".to_owned(),
        (None, Backend::Postgres) => replica_id().to_owned(),
    }
}
