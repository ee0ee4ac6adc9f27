//! The Playground reconciler: makes a Playground's desired state true on its
//! Playroom's Docker engine.
//!
//! One pass:
//! 1. Load the Playground (gone: nothing to do). Past `expires_at` and not
//!    yet being destroyed: record the expiry (desired state `destroyed`,
//!    `playground.expired`) and carry on as a destroy.
//! 2. **Running**: compute the [`spec::Desired`] objects from the Playspec's
//!    Compose, files and the Playroom (`play_core::playground::desired_for`,
//!    the builder the API's views use too), then repeat *observe by label -> [`plan::plan`] -> apply the
//!    plan's groups* until the plan holds nothing but waits (a dependency
//!    not yet healthy). Each group writes its `creation_step` first. Then
//!    write `services_status`; when [`plan::converged`], the Playground is
//!    `running` at `observed_generation = generation`, and the next pass is
//!    asked for at `expires_at`; otherwise in `poll_interval`. In job mode
//!    ([`job`]) exited watched services are left alone, a running job is
//!    looked at every `job_poll_interval`, and once every watched service
//!    has exited the result is recorded (desired state `complete`) and the
//!    pass goes on to step 3.
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
//! backoff, and cleared by the next pass that gets through its plan.

pub mod edge;
pub mod files;
pub mod host;
pub mod job;
pub mod plan;
pub use play_core::desired as spec;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use play_core::playground::{self, CreationStep, DesiredState, Playground, PlaygroundStatus};
use play_core::secrets::SecretBox;
use play_core::store::job_results;
use play_core::store::playground_status::{self as status_store, Fence, Fenced};
use play_core::store::{Store, playrooms, playspec_files, playspecs};
use play_core::time;

use crate::events::WatchHandle;
use crate::host::{DockerHostGateway, RegistryCredentials};
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
}

impl Default for PlaygroundConfig {
    fn default() -> Self {
        PlaygroundConfig {
            pull_timeout: Duration::from_secs(600),
            poll_interval: Duration::from_secs(2),
            max_rounds: 8,
            job_poll_interval: Duration::from_secs(5),
            job_retention: Duration::from_secs(24 * 3600),
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
    watch: Option<WatchHandle>,
}

impl PlaygroundReconciler {
    pub fn new(store: Store, secrets: SecretBox, gateway: DockerHostGateway) -> Self {
        PlaygroundReconciler { store, secrets, gateway, config: PlaygroundConfig::default(), watch: None }
    }

    pub fn with_config(mut self, config: PlaygroundConfig) -> Self {
        self.config = config;
        self
    }

    /// Every pass asks `watch` to follow its Playroom's Docker events, so a
    /// Playroom is watched from its first Playground's first pass (see
    /// `crate::events`).
    pub fn with_watch(mut self, watch: WatchHandle) -> Self {
        self.watch = Some(watch);
        self
    }
}

/// How a converging pass ended.
enum Converged {
    /// Look again as the action says.
    Wait(Action),
    /// Job mode: the job's completion is recorded; the host is to be
    /// cleaned.
    JobDone,
}

/// One pass over one Playground; `step` is where it is, for error reports.
struct Pass<'a> {
    r: &'a PlaygroundReconciler,
    fence: Fence<'a>,
    id: i64,
    step: CreationStep,
}

impl Pass<'_> {
    async fn set_step(&mut self, p: &Playground, step: CreationStep) -> Result<()> {
        self.step = step;
        if matches!(p.status, PlaygroundStatus::InProgress | PlaygroundStatus::Failed) {
            status_store::set_step(&self.r.store, self.fence, self.id, step).await?.held()?;
        }
        Ok(())
    }

    async fn run(&mut self) -> Result<Action> {
        let store = &self.r.store;
        let Some(mut p) = status_store::load(store, self.id).await? else { return Ok(Action::await_change()) };
        let now = time::now();
        if p.desired_state != DesiredState::Destroyed && p.expires_at.is_some_and(|at| at <= now) {
            status_store::expire_if_due(store, self.fence, self.id, now).await?.held()?;
            match status_store::load(store, self.id).await? {
                Some(reloaded) if reloaded.desired_state == DesiredState::Destroyed => p = reloaded,
                Some(_) => return Err(Error::LeaseLost),
                None => return Ok(Action::await_change()),
            }
        }
        if let Some(action) = self.released_job(&p).await? {
            return Ok(action);
        }
        if p.desired_state == DesiredState::Running {
            // An error before any step of this pass (the host unreachable,
            // a corrupt row) is reported at the step the Playground is at.
            self.step = p.creation_step.unwrap_or(CreationStep::Queued);
        }
        if let Some(watch) = &self.r.watch {
            watch.ensure(p.playroom_id);
        }
        // A Playroom without a key is a setting to fix, shown on the Playground.
        let (room, target) =
            playrooms::target(store, &self.r.secrets, p.account_id, p.playroom_id).await.map_err(|e| match e {
                play_core::Error::InvalidState(message) => Error::InvalidTarget(message),
                other => other.into(),
            })?;
        let playspec = match p.playspec_id {
            Some(spec_id) => Some(playspecs::get(store, p.account_id, spec_id).await?),
            None => None,
        };
        let docker = self.r.gateway.docker(&target).await?;
        if p.desired_state == DesiredState::Running {
            let playspec = playspec.as_ref().ok_or(playground::DesiredError::NoPlayspec)?;
            let files = playspec_files::list_files(store, playspec.id).await?;
            let desired = playground::desired_for(&p, Some(playspec), &files, &room)?.desired;
            let watched = if p.job_mode { Some(job::watched(&p, &desired).map_err(Error::InvalidSpec)?) } else { None };
            match self.converge(&docker, &p, &desired, watched.as_ref(), playspec.id).await? {
                Converged::Wait(action) => return Ok(action),
                Converged::JobDone => {}
            }
            // The job is recorded (or a DELETE or the expiry came first):
            // clean the host as the stored desired state says.
            match status_store::load(store, self.id).await? {
                Some(reloaded) if reloaded.desired_state != DesiredState::Running => p = reloaded,
                Some(_) => return Err(Error::LeaseLost),
                None => return Ok(Action::await_change()),
            }
        }
        // Desired state `destroyed` or `complete`: nothing may stay on the
        // host. Named volumes are also found by name: one the engine
        // created unlabelled (a mount racing its creation) is still this
        // Playground's. A Compose that can no longer run (the Playroom's
        // policy changed) must still be destroyed: its volumes are then
        // found by label only. The files volume carries its label, so the
        // mounted files are not read for this.
        let persist = playspec.as_ref().is_some_and(|s| s.persist_volumes);
        let volumes = playground::desired_for(&p, playspec.as_ref(), &[], &room)
            .map(|c| c.desired.volumes.into_iter().map(|v| v.name).collect::<Vec<_>>())
            .unwrap_or_default();
        if !self.clean_host(&docker, &p.installation, persist, &volumes).await? {
            return Ok(Action::requeue_after(self.r.config.poll_interval));
        }
        if p.desired_state == DesiredState::Complete {
            job_results::release_host(store, self.fence, self.id).await?.held()?;
            return Ok(p.expires_at.map_or_else(Action::await_change, Action::requeue_at));
        }
        self.finish_destroy().await?;
        Ok(Action::await_change())
    }

    /// Deletes the row of a destroyed Playground whose host objects are
    /// gone. A refusal (`Held(false)`: the desired state is no longer
    /// `destroyed`) needs nothing more: destroyed is final today, and a
    /// change would wake a pass that follows it.
    async fn finish_destroy(&self) -> Result<()> {
        let _deleted: bool = status_store::finish_destroy(&self.r.store, self.fence, self.id).await?.held()?;
        Ok(())
    }

    /// A completed job whose host objects are already gone needs no host:
    /// it waits for its retention to end, or (DELETE, or that end) has its
    /// row deleted. `None` for every other Playground.
    async fn released_job(&self, p: &Playground) -> Result<Option<Action>> {
        if !p.job_mode || p.desired_state == DesiredState::Running {
            return Ok(None);
        }
        let released = job_results::get(&self.r.store, self.id).await?.is_some_and(|r| r.host_released_at.is_some());
        if !released {
            return Ok(None);
        }
        if p.desired_state == DesiredState::Destroyed {
            self.finish_destroy().await?;
            return Ok(Some(Action::await_change()));
        }
        Ok(Some(p.expires_at.map_or_else(Action::await_change, Action::requeue_at)))
    }

    /// Converges a running Playground. In job mode (`watched` given), an
    /// exited watched container is left as it is, and once every watched
    /// service has exited the job's completion is recorded.
    async fn converge(
        &mut self,
        docker: &bollard::Docker,
        p: &Playground,
        desired: &spec::Desired,
        watched: Option<&BTreeSet<String>>,
        playspec_id: i64,
    ) -> Result<Converged> {
        let keep_exited = watched.cloned().unwrap_or_default();
        // A hard restart's forced pull is done once per pass (then recorded).
        let mut desired = desired.clone();
        let images: Vec<String> = desired
            .services
            .iter()
            .filter(|s| !s.build)
            .map(|s| s.container.image.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let volumes: Vec<String> = desired.volumes.iter().map(|v| v.name.clone()).collect();
        let mut credentials: Option<Vec<RegistryCredentials>> = None;
        let mut contents: Option<BTreeMap<i64, Vec<u8>>> = None;
        let mut rounds = 0;
        let (observed, waits) = loop {
            let edge = desired.edge_network.as_deref();
            let observed = host::observe(docker, &desired.installation, self.id, &images, &volumes, edge).await?;
            if let Some(watched) = watched
                && let Some(exits) = job::finished(&desired, &observed, watched)
            {
                self.complete(docker, p, &desired, &observed, watched, &exits).await?;
                return Ok(Converged::JobDone);
            }
            let steps = plan::plan_keeping(&desired, &observed, &keep_exited);
            let waits: Vec<plan::Step> = steps.iter().filter(|s| s.is_wait()).cloned().collect();
            let groups = host::groups(steps);
            if groups.is_empty() || rounds >= self.r.config.max_rounds {
                break (observed, waits);
            }
            // The host moved away from a state this generation had reached:
            // drift (a container removed, stopped or changed behind play's
            // back). Reported once per pass, before it is repaired.
            if rounds == 0 && p.status == PlaygroundStatus::Running && p.observed_generation == p.generation {
                let repairs: Vec<String> = groups.iter().flatten().map(plan::Step::describe).collect();
                status_store::record_drift(&self.r.store, self.fence, self.id, &repairs).await?.held()?;
            }
            rounds += 1;
            if credentials.is_none() && groups.iter().flatten().any(|s| matches!(s, plan::Step::PullImage(_))) {
                credentials = Some(self.credentials(playspec_id).await?);
            }
            if contents.is_none() && groups.iter().flatten().any(|s| matches!(s, plan::Step::RunContainer(_))) {
                contents = Some(self.file_contents(&desired, playspec_id).await?);
            }
            let no_files = BTreeMap::new();
            let apply = host::Apply {
                docker,
                desired: Some(&desired),
                installation: &desired.installation,
                playground_id: self.id,
                credentials: credentials.as_deref().unwrap_or_default(),
                files: contents.as_ref().unwrap_or(&no_files),
                pull_timeout: self.r.config.pull_timeout,
            };
            let mut pulled = false;
            for group in &groups {
                if let Some(first) = group.first() {
                    self.set_step(p, first.creation_step()).await?;
                }
                apply.group(group).await?;
                pulled |= group.iter().any(|s| matches!(s, plan::Step::PullImage(_)));
            }
            // A hard restart pulls every image once: record it, so neither
            // the next round nor a later pass pulls again.
            if pulled && desired.force_pull {
                status_store::record_pulled(&self.r.store, self.fence, self.id, desired.epoch).await?.held()?;
                desired.force_pull = false;
            }
        };
        let services = plan::services_status(&desired, &observed);
        if plan::converged_keeping(&desired, &observed, &keep_exited) {
            status_store::record_observed(&self.r.store, self.fence, self.id, &services, Some(p.generation))
                .await?
                .held()?;
            // A running job is watched for its end; anything else waits
            // for its expiry (or a change).
            return Ok(Converged::Wait(match watched {
                Some(_) => self.poll_or_expiry(p, self.r.config.job_poll_interval),
                None => p.expires_at.map_or_else(Action::await_change, Action::requeue_at),
            }));
        }
        let waiting = if waits.iter().any(|w| w.creation_step() == CreationStep::Healthcheck)
            || observed.containers.iter().any(|c| c.health == Some(plan::Health::Starting))
        {
            CreationStep::Healthcheck
        } else {
            CreationStep::Containers
        };
        self.set_step(p, waiting).await?;
        status_store::record_observed(&self.r.store, self.fence, self.id, &services, None).await?.held()?;
        Ok(Converged::Wait(self.poll_or_expiry(p, self.r.config.poll_interval)))
    }

    fn poll_or_expiry(&self, p: &Playground, poll: Duration) -> Action {
        match p.expires_at {
            Some(at) if (at - time::now()).to_std().unwrap_or_default() < poll => Action::requeue_at(at),
            _ => Action::requeue_after(poll),
        }
    }

    /// The contents of every mounted file a desired container mounts.
    async fn file_contents(&self, desired: &spec::Desired, playspec_id: i64) -> Result<BTreeMap<i64, Vec<u8>>> {
        let ids: BTreeSet<i64> =
            desired.services.iter().flat_map(|s| s.container.files.iter().map(|f| f.file_id)).collect();
        let mut out = BTreeMap::new();
        for id in ids {
            out.insert(id, playspec_files::file_content(&self.r.store, playspec_id, id).await?);
        }
        Ok(out)
    }

    async fn credentials(&self, playspec_id: i64) -> Result<Vec<RegistryCredentials>> {
        let store = &self.r.store;
        let mut out = Vec::new();
        for c in playspec_files::list_credentials(store, playspec_id).await? {
            let password = playspec_files::credential_secret(store, &self.r.secrets, playspec_id, c.id).await?;
            out.push(RegistryCredentials { username: c.username, password, server: c.registry_url });
        }
        Ok(out)
    }

    /// Removes every container, network and (unless `persist_volumes`)
    /// volume of the Playground; true once an observation shows none left.
    async fn clean_host(
        &mut self,
        docker: &bollard::Docker,
        installation: &str,
        persist_volumes: bool,
        volumes: &[String],
    ) -> Result<bool> {
        let apply = host::Apply {
            docker,
            desired: None,
            installation,
            playground_id: self.id,
            credentials: &[],
            files: &BTreeMap::new(),
            pull_timeout: self.r.config.pull_timeout,
        };
        let observed = host::observe(docker, installation, self.id, &[], volumes, None).await?;
        let steps = plan::destroy_plan(&observed, persist_volumes);
        if steps.is_empty() {
            return Ok(true);
        }
        for group in host::groups(steps) {
            apply.group(&group).await?;
        }
        let observed = host::observe(docker, installation, self.id, &[], volumes, None).await?;
        Ok(plan::destroy_plan(&observed, persist_volumes).is_empty())
    }
}

impl Reconciler for PlaygroundReconciler {
    const NAME: &'static str = "playground";
    const KIND: play_core::wake::Kind = play_core::wake::Kind::Playground;

    async fn reconcile(&self, id: i64, ctx: &Ctx) -> Result<Action> {
        let fence = Fence { reconciler: Self::NAME, owner: ctx.owner(), token: ctx.fencing_token() };
        let mut pass = Pass { r: self, fence, id, step: CreationStep::Queued };
        match pass.run().await {
            Ok(action) => Ok(action),
            // A lost lease writes nothing; a store failure would most
            // likely fail the write too. A corrupt row is different: the
            // store answers, and the Playground must show why it stopped.
            Err(e @ Error::LeaseLost) => Err(e),
            Err(e @ Error::Store(_)) if !e.is_terminal() => Err(e),
            Err(e) => {
                let step = pass.step;
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

    fn error_policy(&self, _id: i64, error: &Error, _attempt: u32) -> Action {
        if error.is_terminal() { Action::await_change() } else { Action::backoff() }
    }

    async fn list(&self) -> Result<Vec<i64>> {
        Ok(status_store::ids_to_reconcile(&self.store).await?)
    }
}
