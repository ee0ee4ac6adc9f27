//! The Playground reconciler: makes a Playground's desired state true on its
//! Playroom's Docker engine.
//!
//! One pass reads the Playground once and runs the one arm its lifecycle
//! calls for (`pass::lifecycle`); an arm that changes its state in the
//! store ends the pass, and the next one (at once) reads the new state:
//! 1. Load the Playground (gone: nothing to do). Past `expires_at` and not
//!    yet being destroyed: record the expiry (desired state `destroyed`,
//!    `playground.expired`); the next pass destroys it.
//! 2. **Running**: compute the [`spec::Desired`] objects from the Playspec's
//!    Compose, files and the Playroom (`play_model::playground::desired_for`,
//!    the builder the API's views use too), then repeat *observe by label
//!    -> [`plan::plan`] -> apply the plan's groups* until the plan holds
//!    nothing but waits (a dependency not yet healthy). Each group writes its `creation_step` first. Then
//!    write `services_status`; when [`plan::converged`], the Playground is
//!    `running` at `observed_generation = generation`, and the next pass is
//!    asked for at `expires_at`; otherwise in `poll_interval`. In job mode
//!    ([`job`]) exited watched services are left alone, a running job is
//!    looked at every `job_poll_interval`, and once every watched service
//!    has exited the result is recorded (desired state `complete`) and the
//!    next pass does step 3.
//! 3. **Destroyed** or **complete**: remove every container, network and
//!    (unless the Playspec persists volumes) volume labelled for the
//!    Playground (the shared edge network is not: it carries no Playground
//!    label); only when an observation shows none left, delete the row
//!    with `playground.destroyed` (destroyed) or record the host released
//!    (complete: the row and its result stay until `expires_at`). A
//!    released job never reaches its host again.
//!
//! Guarantees: level-triggered (nothing depends on what woke the pass or on
//! a stored step machine: the plan is recomputed from the host every
//! round), idempotent (re-creating what exists is not an error), never two
//! containers per service (the plan removes extras), and every store write
//! is fenced by the pass's lease (`playground_status`), so a replica that
//! lost its lease changes nothing in the store and stops with
//! [`Error::LeaseLost`].
//!
//! Errors: a spec that cannot run (Compose invalid for the Playroom's
//! policy, a service to build) or a stored row that does not parse
//! (`play_core::Error::Corrupt`: never read as an empty spec, which would
//! converge the host to nothing) is terminal: status `failed` with
//! `error_message`/`error_step`, and the runtime does not retry it until the
//! Playground changes. Anything else (host unreachable, engine errors) is
//! written as `error_message`/`error_step` with the status unchanged (and
//! the `creation_step` of a running Playground unchanged), retried with
//! backoff, and cleared by the next pass that gets through its plan. Either
//! way the next pass comes no later than the Playground's expiry
//! (`expiries`): one that keeps failing still expires on time.
//!
//! # Where the code lives: observe -> plan -> apply
//!
//! - this module: the reconciler, its [`PlaygroundConfig`], the
//!   [`Reconciler`] impl (fences the pass, records its error);
//! - `pass`: one pass as listed above (a snapshot read once, the lifecycle
//!   classified, one file per arm), and its fenced store writes;
//! - [`observe`]: what the host holds for a Playground ([`plan::Observed`]);
//! - [`plan`]: the pure plan from desired and observed state, with its
//!   table tests;
//! - [`apply`]: the plan's steps as engine calls, in dependency order;
//! - [`job`]: job mode (watched services, completion, the result), handed
//!   what the pass observed and returning what the pass records;
//! - [`files`] (mounted files) and [`source`] (`svc/source_mount` volumes,
//!   both through [`helper`] containers): host helpers of [`apply`] and
//!   [`observe`], beside the edge network they share with the edge loop
//!   (`crate::docker::edge_network`);
//! - `pins` and `env_files`: the commits read from Playzones, and the
//!   services' env files at them.
//!
//! Owns converging one Playground on its host. It must not touch objects
//! of Playgrounds without a row (the Playroom sweep's, `crate::playroom`),
//! nor the edge router's config (the edge loop's), nor read Docker's
//! event stream (`crate::playroom::events` wakes it).

pub mod apply;
mod build;
mod context;
mod env_files;
mod expiries;
pub mod files;
pub mod helper;
pub mod job;
pub mod observe;
mod pass;
mod pins;
pub mod plan;
mod rollout;
mod sleep;
mod slots;
pub mod source;
mod wake_gate;

pub use context::remove_dead_spools;
pub use play_model::desired as spec;
pub use slots::SlotsConfig;

use std::sync::Arc;
use std::time::Duration;

use pass::Pass;
use play_core::wake::{Wake, Waker};
use play_model::ids::{ObjectId, PlaygroundId};
use play_model::playground::LifePolicy;
use play_model::repository::RepositoryGateway;
use play_model::secrets::SecretBox;
use play_store::Store;
use play_store::{playground_status as status_store, playground_status::Fenced};

use crate::host::DockerHostGateway;
use crate::playroom::events::WatchHandle;
use crate::runtime::{Action, Ctx, Reconciler};
use crate::{Error, Result};

/// Tuning of the Playground reconciler.
#[derive(Clone, Debug)]
pub struct PlaygroundConfig {
    /// Bound on one image pull.
    pub pull_timeout: Duration,
    /// How soon to look again while waiting (healthchecks, dependencies,
    /// objects still being removed).
    pub poll_interval: Duration,
    /// Observe/plan/apply rounds in one pass before it yields.
    pub max_rounds: usize,
    /// How often a running job is observed for its watched services' exit
    /// (no Docker event stream triggers a pass yet).
    pub job_poll_interval: Duration,
    /// How long a completed job's row (result and cached logs) is kept:
    /// `expires_at` becomes the completion plus this.
    pub job_retention: Duration,
    /// How long a zero-downtime rollout keeps the old container running
    /// after the edge switched to the new one (requests in flight finish).
    pub drain: Duration,
    /// How long a zero-downtime rollout waits for the edge to serve the
    /// new container before draining anyway.
    pub edge_switch_timeout: Duration,
    /// Bound on one image build (fetching the context included).
    pub build_timeout: Duration,
    /// Registries an untrusted Playroom may pull from although they are on
    /// loopback, private, link-local or metadata addresses
    /// (`PLAY_REGISTRY_ALLOWLIST`; `host::check_registry`).
    pub registry_policy: play_model::webhook::UrlPolicy,
    /// The network the `RUN` steps of builds join (`PLAY_BUILD_NETWORK`;
    /// `None`: the engine's default bridge). An operator points it at a
    /// network whose egress the host's firewall limits (docs/hosts.md).
    pub build_network: Option<String>,
    /// How many builds and source fills may hold repository files at
    /// once, per replica and per Playroom (`slots`).
    pub slots: SlotsConfig,
    /// Where build contexts are spooled on their way to the engine
    /// (`context`); `play serve` uses `<data dir>/spool`.
    pub spool_dir: std::path::PathBuf,
}

impl Default for PlaygroundConfig {
    fn default() -> Self {
        PlaygroundConfig {
            pull_timeout: Duration::from_secs(600),
            poll_interval: Duration::from_secs(2),
            max_rounds: 8,
            job_poll_interval: Duration::from_secs(5),
            job_retention: Duration::from_secs(24 * 3600),
            drain: Duration::from_secs(10),
            build_timeout: Duration::from_secs(1800),
            edge_switch_timeout: Duration::from_secs(30),
            registry_policy: play_model::webhook::UrlPolicy::default(),
            build_network: None,
            slots: SlotsConfig::default(),
            spool_dir: std::env::temp_dir(),
        }
    }
}

/// See the [module documentation](self).
#[derive(Debug)]
pub struct PlaygroundReconciler {
    store: Store,
    secrets: SecretBox,
    gateway: DockerHostGateway,
    config: PlaygroundConfig,
    /// The installation's lifetimes and default `sleep_after`, the value
    /// the API shows (`play_model::playground::policy`).
    life: LifePolicy,
    watch: Option<WatchHandle>,
    /// Wakes the edge of a Playroom whose routes may have changed.
    edge: Option<Arc<dyn Waker>>,
    /// Where services built from Playzones get their code.
    repositories: Arc<dyn RepositoryGateway>,
    /// Bounds builds and source fills (made from `config.slots`).
    slots: Arc<slots::Slots>,
    /// The source volumes found complete, not checked again.
    sources: source::Completed,
    /// Each live Playground's expiry, for the error policy.
    expiries: expiries::Expiries,
}

impl PlaygroundReconciler {
    pub fn new(store: Store, secrets: SecretBox, gateway: DockerHostGateway) -> Self {
        PlaygroundReconciler {
            store,
            secrets,
            gateway,
            config: PlaygroundConfig::default(),
            life: LifePolicy::default(),
            watch: None,
            edge: None,
            repositories: Arc::new(play_model::repository::NoRepositories),
            slots: Arc::new(slots::Slots::new(SlotsConfig::default())),
            sources: source::Completed::default(),
            expiries: expiries::Expiries::default(),
        }
    }

    /// Services built from Playzones read their repositories through
    /// `repositories` (without it, such a service cannot be built).
    pub fn with_repositories(mut self, repositories: Arc<dyn RepositoryGateway>) -> Self {
        self.repositories = repositories;
        self
    }

    /// A pass that changed what the edge routes (services started or
    /// stopped, a generation converged, the Playground gone) wakes the
    /// edge of its Playroom through `waker` (`Kind::Edge`), so a URL
    /// answers as soon as its service runs.
    pub fn waking_edge(mut self, waker: Arc<dyn Waker>) -> Self {
        self.edge = Some(waker);
        self
    }

    fn wake_edge(&self, playroom_id: i64) {
        if let Some(edge) = &self.edge {
            edge.wake(Wake::Edge(playroom_id.into()));
        }
    }

    pub fn with_config(mut self, config: PlaygroundConfig) -> Self {
        self.slots = Arc::new(slots::Slots::new(config.slots));
        self.config = config;
        self
    }

    /// Playgrounds sleep under `life` (`play serve` gives the API's).
    pub fn with_life(mut self, life: LifePolicy) -> Self {
        self.life = life;
        self
    }

    /// Every pass asks `watch` to follow its Playroom's Docker events, so a
    /// Playroom is watched from its first Playground's first pass (see
    /// `crate::playroom::events`).
    pub fn with_watch(mut self, watch: WatchHandle) -> Self {
        self.watch = Some(watch);
        self
    }
}

impl Reconciler for PlaygroundReconciler {
    const NAME: &'static str = "playground";
    const KIND: play_core::wake::Kind = play_core::wake::Kind::Playground;
    type Id = PlaygroundId;

    async fn reconcile(&self, id: PlaygroundId, ctx: &Ctx) -> Result<Action> {
        let id = id.get();
        let fence = ctx.fence();
        let mut pass = Pass::new(self, fence, id);
        match pass.run().await {
            Ok(action) => Ok(action),
            // A lost lease writes nothing; a store failure would most
            // likely fail the write too. A corrupt row is different: the
            // store answers, and the Playground must show why it stopped.
            Err(e @ Error::LeaseLost) => Err(e),
            Err(e @ Error::Store(_)) if !e.is_terminal() => Err(e),
            Err(e) => {
                let step = pass.step();
                // Best effort: the error is returned either way, and a lost
                // lease writes nothing.
                match status_store::record_error(&self.store, fence, id, step, &e.to_string(), e.is_terminal()).await {
                    Ok(Fenced::Held(())) => {}
                    Ok(Fenced::Lost) => {
                        tracing::debug!(playground = id, "lease lost: the reconcile error is not recorded")
                    }
                    Err(write) => {
                        tracing::warn!(playground = id, error = %write, "could not record the reconcile error")
                    }
                }
                Err(e)
            }
        }
    }

    /// A terminal error waits for a change, anything else backs off; either
    /// way no later than the Playground's expiry, so one that keeps failing
    /// still expires on time (`expiries`).
    fn error_policy(&self, id: PlaygroundId, error: &Error, _attempt: u32) -> Action {
        let base = if error.is_terminal() { Action::await_change() } else { Action::backoff() };
        base.or_at(self.expiries.ahead(id.get()))
    }

    async fn list(&self) -> Result<Vec<PlaygroundId>> {
        Ok(status_store::ids_to_reconcile(&self.store).await?.into_iter().map(PlaygroundId).collect())
    }

    /// Passes are bounded per Playroom (`Config::per_group`).
    const GROUPED: bool = true;

    async fn group(&self, id: PlaygroundId) -> Result<Option<i64>> {
        let id = id.get();
        Ok(status_store::playroom_of(&self.store, id).await?)
    }
}
