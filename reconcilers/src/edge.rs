//! The edge reconciler: one Caddy container per Playroom that routes every
//! running exposed service of the Playroom's Playgrounds (`docs/edge.md`).
//!
//! A reconciler keyed by Playroom id. One pass:
//! 1. Load the Playroom. Gone, or its edge off: remove the edge container,
//!    forget its routes, and wait for a change.
//! 2. Compute the routes it should serve ([`routes`]), arbitrate hosts
//!    claimed by several Playgrounds (the oldest claim wins,
//!    `play_model::edge::claims`), and build the Caddy config
//!    (`play_model::edge::config`).
//! 3. Observe the edge container ([`container`]): missing or stopped, it is
//!    made (or started) again, with the config as its bootstrap, and the
//!    repair is recorded as drift (`playroom.edge.restored`) when play had
//!    seen it running before; made from other settings (image, ports), it
//!    is replaced.
//! 4. Read the live config through the admin socket ([`admin`]); load the
//!    desired one only if they differ. An unchanged config touches
//!    nothing. A config Caddy refuses leaves Caddy on its last good config;
//!    the refusal is the Playroom's edge error, no Playground's.
//! 5. Record the outcome (routes, live flags, conflicts, the applied hash
//!    or the error; `play_store::edges`), fenced by the pass's lease,
//!    and look again after `EdgeConfig::check_interval`: that poll is how a
//!    container removed behind play's back is noticed.
//!
//! Guarantees: level-triggered (every pass recomputes everything from the
//! store and the host), idempotent, one pass per Playroom at a time (the
//! runtime's lease), and no tenant can reach the admin API: it listens on
//! a unix socket only (`docs/edge.md`, "Admin API").
//!
//! Wakes: the API on Playroom and Playground changes, the Playground
//! reconciler when a Playground's running services change, its own
//! `check_interval`, and the resync.

pub mod activity;
pub mod admin;
pub mod container;
mod pass;
pub mod routes;
mod wake_lines;

/// The gap between two store calls the activity monitor makes for one
/// Playground's wake lines (its guarantee: at most one per gap).
pub use wake_lines::COOLDOWN as WAKE_COOLDOWN;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use play_core::wake::Waker;
use play_model::ids::{ObjectId, PlayroomId};
use play_model::playground::LifePolicy;
use play_model::secrets::SecretBox;
use play_store::{Store, sweep};

use crate::host::DockerHostGateway;
use crate::runtime::{Action, Ctx, Reconciler};
use crate::{Error, Result};

/// Installation-wide settings of the edge (the operator's, never a
/// tenant's).
#[derive(Clone, Debug)]
pub struct EdgeConfig {
    /// The Caddy image (`caddy:2` by default).
    pub image: String,
    /// The host directory under which each edge container's admin socket
    /// directory is made.
    pub admin_dir: String,
    /// How often a Playroom's edge is looked at without a wake: bounds how
    /// long a removed edge container stays gone.
    pub check_interval: Duration,
    /// The ACME directory certificates come from (`None`: Let's Encrypt).
    pub acme_directory: Option<String>,
    /// A PEM file on play's machine whose roots the ACME server's TLS is
    /// trusted with (a private ACME server).
    pub acme_root: Option<PathBuf>,
    /// Bound on pulling the edge image.
    pub pull_timeout: Duration,
    /// How long a new container's admin socket may take to answer.
    pub start_timeout: Duration,
}

impl Default for EdgeConfig {
    fn default() -> Self {
        EdgeConfig {
            image: "caddy:2".to_owned(),
            admin_dir: "/run/play-edge".to_owned(),
            check_interval: Duration::from_secs(2),
            acme_directory: None,
            acme_root: None,
            pull_timeout: Duration::from_secs(600),
            start_timeout: Duration::from_secs(10),
        }
    }
}

/// See the [module documentation](self).
#[derive(Debug)]
pub struct EdgeReconciler {
    store: Store,
    secrets: SecretBox,
    gateway: DockerHostGateway,
    config: EdgeConfig,
    /// Which Playgrounds may sleep, so whose requests the edge logs: the
    /// API's policy (`play_model::playground::policy`).
    life: LifePolicy,
    /// The activity monitors of the Playrooms this replica attends.
    monitors: activity::Monitors,
    /// Wakes the Playground reconciler when a request wakes a Playground.
    playgrounds: Option<Arc<dyn Waker>>,
    /// The routes computed per Playground, reused while their inputs hold.
    routes: routes::RouteCache,
}

impl EdgeReconciler {
    pub fn new(store: Store, secrets: SecretBox, gateway: DockerHostGateway) -> Self {
        EdgeReconciler {
            store,
            secrets,
            gateway,
            config: EdgeConfig::default(),
            life: LifePolicy::default(),
            monitors: activity::Monitors::default(),
            playgrounds: None,
            routes: routes::RouteCache::default(),
        }
    }

    /// Wakes Playgrounds through `waker` when a request reaches one asleep.
    pub fn waking_playgrounds(mut self, waker: Arc<dyn Waker>) -> Self {
        self.playgrounds = Some(waker);
        self
    }

    pub fn with_config(mut self, config: EdgeConfig) -> Self {
        self.config = config;
        self
    }

    /// Playgrounds sleep under `life` (`play serve` gives the API's).
    pub fn with_life(mut self, life: LifePolicy) -> Self {
        self.life = life;
        self
    }
}

impl Reconciler for EdgeReconciler {
    const NAME: &'static str = play_store::edges::RECONCILER;
    const KIND: play_core::wake::Kind = play_core::wake::Kind::Edge;
    type Id = PlayroomId;

    async fn reconcile(&self, id: PlayroomId, ctx: &Ctx) -> Result<Action> {
        let id = id.get();
        pass::run(self, id, ctx).await
    }

    fn error_policy(&self, _id: PlayroomId, error: &Error, _attempt: u32) -> Action {
        match error {
            // The Playroom's settings must change first.
            Error::InvalidTarget(_) => Action::await_change(),
            _ => Action::backoff(),
        }
    }

    async fn list(&self) -> Result<Vec<PlayroomId>> {
        Ok(sweep::playroom_ids(&self.store).await?.into_iter().map(PlayroomId).collect())
    }
}
