//! One pass over one Playground, top to bottom: load it, record its
//! expiry, converge a running one (observe -> plan -> apply, round after
//! round), and clean the host of a destroyed or completed one (see the
//! [parent module](super) for the whole contract).
//!
//! Owns the order of a pass and its fenced store writes. What the host
//! holds is [`observe`]'s, what to do is [`plan`]'s (pure), how a step
//! reaches the engine is [`apply`]'s and the job rules are [`job`]'s: this
//! module calls them, and must not grow engine calls or plan rules of its
//! own.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use play_model::playground::{self, CreationStep, DesiredState, Playground, PlaygroundStatus, Power};
use play_model::time;
use play_store::job_results;
use play_store::{playground_status as status_store, playground_status::Fence};
use play_store::{playrooms, playspec_files, playspecs};

use super::build::Builder;
use super::{PlaygroundReconciler, apply, job, observe, pins, plan, rollout, sleep, source, spec, wake_gate};
use crate::host::RegistryCredentials;
use crate::runtime::Action;
use crate::{Error, Result};

/// How a converging pass ended.
enum Converged {
    /// Look again as the action says.
    Wait(Action),
    /// Job mode: the job's completion is recorded; the host is to be
    /// cleaned.
    JobDone,
}

/// One pass over one Playground; `step` is where it is, for error reports.
pub(super) struct Pass<'a> {
    r: &'a PlaygroundReconciler,
    fence: Fence<'a>,
    id: i64,
    step: CreationStep,
    /// Whether the Playground's Playroom is trusted (its builds may fetch
    /// remote sources and use any registry), once the pass loaded it.
    trusted: bool,
}

impl<'a> Pass<'a> {
    pub(super) fn new(r: &'a PlaygroundReconciler, fence: Fence<'a>, id: i64) -> Self {
        Pass { r, fence, id, step: CreationStep::Queued, trusted: false }
    }

    /// Where the pass is, for an error report.
    pub(super) fn step(&self) -> CreationStep {
        self.step
    }

    /// The pass, top to bottom: load, expiry, converge, clean the host.
    pub(super) async fn run(&mut self) -> Result<Action> {
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
        // Idle for its `sleep_after`: asleep from now on (issue #32).
        if p.desired_state == DesiredState::Running
            && p.status == PlaygroundStatus::Running
            && sleep::sleep_if_due(self.r, self.fence, &p).await?
        {
            match status_store::load(store, self.id).await? {
                Some(reloaded) => p = reloaded,
                None => return Ok(Action::await_change()),
            }
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
        if p.desired_state == DesiredState::Running && p.sleep.power == Power::Asleep {
            let playspec = playspec.as_ref().ok_or(playground::DesiredError::NoPlayspec)?;
            let files = playspec_files::list_files(store, playspec.id).await?;
            let desired = playground::desired_for(&p, Some(playspec), &files, &room, &Default::default())?.desired;
            return sleep::converge_asleep(self.r, self.fence, &docker, &p, &desired).await;
        }
        if p.desired_state == DesiredState::Running {
            let playspec = playspec.as_ref().ok_or(playground::DesiredError::NoPlayspec)?;
            let files = playspec_files::list_files(store, playspec.id).await?;
            // Pinning a built service's commit is part of `image_build`.
            let at = std::mem::replace(&mut self.step, CreationStep::ImageBuild);
            let sources = pins::ensure(self.r, self.fence, &p, playspec, &files, &room).await?;
            self.step = at;
            self.trusted = room.trusted;
            let desired = playground::desired_for(&p, Some(playspec), &files, &room, &sources)?.desired;
            let watched = if p.job_mode { Some(job::watched(&p, &desired).map_err(Error::InvalidSpec)?) } else { None };
            match self.converge(&docker, &target, &p, &desired, watched.as_ref(), playspec.id).await? {
                // An awake Playground that may sleep is looked at again
                // when its idle time would be up.
                Converged::Wait(action) => return Ok(action.or_at(sleep::deadline(self.r, &p))),
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
        // found by label only. The mounted files are read because relative
        // sources need them to resolve, so for the Compose to run at all.
        let persist = playspec.as_ref().is_some_and(|s| s.persist_volumes);
        let files = match &playspec {
            Some(spec) => playspec_files::list_files(store, spec.id).await?,
            None => Vec::new(),
        };
        let volumes = playground::desired_for(&p, playspec.as_ref(), &files, &room, &Default::default())
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
        self.r.wake_edge(p.playroom_id);
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
        target: &play_model::host::HostTarget,
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
            .filter(|s| !s.build || s.built.is_some())
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
            let mut observed =
                observe::observe(docker, &desired.installation, self.id, &images, &volumes, edge).await?;
            observed.complete_sources = source::complete(docker, &desired, &observed, &self.r.sources).await?;
            if let Some(watched) = watched
                && let Some(exits) = job::finished(&desired, &observed, watched)
            {
                let bound = self.r.gateway.config().call_timeout;
                let retention = self.r.config.job_retention;
                let result = job::result(docker, &desired, &observed, watched, exits, bound, retention).await?;
                job_results::record_completion(&self.r.store, self.fence, p.id, &result.completion()).await?.held()?;
                return Ok(Converged::JobDone);
            }
            let steps = plan::plan_keeping(&desired, &observed, &keep_exited);
            let waits: Vec<plan::Step> = steps.iter().filter(|s| s.is_wait()).cloned().collect();
            let switches: Vec<plan::Step> =
                steps.iter().filter(|s| matches!(s, plan::Step::SwitchOver { .. })).cloned().collect();
            let groups = apply::groups(steps);
            if (groups.is_empty() && switches.is_empty()) || rounds >= self.r.config.max_rounds {
                break (observed, waits);
            }
            // The host moved away from a state this generation had reached:
            // drift (a container removed, stopped or changed behind play's
            // back). Each round's repairs are reported before they are
            // made: a later round repairs what waited on a dependency the
            // first one started, or what was disturbed while the pass ran.
            if p.status == PlaygroundStatus::Running && p.observed_generation == p.generation {
                let repairs: Vec<String> = groups.iter().flatten().map(plan::Step::describe).collect();
                status_store::record_drift(&self.r.store, self.fence, self.id, &repairs).await?.held()?;
            }
            rounds += 1;
            let pulls = |s: &plan::Step| matches!(s, plan::Step::PullImage(_) | plan::Step::BuildImage(_));
            if credentials.is_none() && groups.iter().flatten().any(pulls) {
                credentials = Some(self.credentials(playspec_id).await?);
            }
            if contents.is_none() && groups.iter().flatten().any(|s| matches!(s, plan::Step::RunContainer(_))) {
                contents = Some(self.file_contents(&desired, playspec_id).await?);
            }
            let no_files = BTreeMap::new();
            let builder = self.builder(&desired, p.account_id, p.playroom_id);
            if rounds == 1 {
                self.note_cache_hits(&builder, &desired, &observed).await?;
            }
            let apply = apply::Apply {
                docker,
                desired: Some(&desired),
                installation: &desired.installation,
                playground_id: self.id,
                account_id: p.account_id,
                trusted: self.trusted,
                registry_policy: &self.r.config.registry_policy,
                credentials: credentials.as_deref().unwrap_or_default(),
                files: contents.as_ref().unwrap_or(&no_files),
                pull_timeout: self.r.config.pull_timeout,
                builder: Some(&builder),
            };
            let mut pulled = false;
            for group in &groups {
                if let Some(first) = group.first() {
                    self.set_step(p, first.creation_step()).await?;
                }
                apply.group(group).await?;
                pulled |= group.iter().any(|s| matches!(s, plan::Step::PullImage(_)));
            }
            // Zero-downtime switch-overs, one service at a time: each
            // waits for its health gate, the edge and the drain.
            for step in &switches {
                if let plan::Step::SwitchOver { service, new, new_name, old } = step {
                    self.set_step(p, step.creation_step()).await?;
                    let switch = rollout::SwitchOver {
                        r: self.r,
                        fence: self.fence,
                        playground_id: self.id,
                        playroom_id: p.playroom_id,
                        docker,
                        target,
                        desired: &desired,
                    };
                    switch.run(service, new, new_name, old).await?;
                }
            }
            // A hard restart pulls every image once: record it, so neither
            // the next round nor a later pass pulls again.
            if pulled && desired.force_pull {
                status_store::record_pulled(&self.r.store, self.fence, self.id, desired.epoch).await?.held()?;
                desired.force_pull = false;
            }
        };
        let services = plan::services_status(&desired, &observed);
        // A failed zero-downtime rollout: the old container serves, the
        // Playground stays failed until a rollout or hard restart.
        if plan::held_back(&desired, &observed) {
            if status_store::record_observed(&self.r.store, self.fence, self.id, &services, None).await?.held()? {
                self.r.wake_edge(p.playroom_id);
            }
            return Ok(Converged::Wait(p.expires_at.map_or_else(Action::await_change, Action::requeue_at)));
        }
        if plan::converged_keeping(&desired, &observed, &keep_exited) {
            // Woken: the route switches once the services listen.
            if p.status == PlaygroundStatus::Sleeping && watched.is_none() {
                wake_gate::await_listening(self.r, self.id, docker, target, &desired).await?;
            }
            if status_store::record_observed(&self.r.store, self.fence, self.id, &services, Some(p.generation))
                .await?
                .held()?
            {
                self.r.wake_edge(p.playroom_id);
            }
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
        if status_store::record_observed(&self.r.store, self.fence, self.id, &services, None).await?.held()? {
            self.r.wake_edge(p.playroom_id);
        }
        Ok(Converged::Wait(self.poll_or_expiry(p, self.r.config.poll_interval)))
    }

    /// Records the step the pass reached (a Playground being created
    /// shows it; a running one keeps `ready`).
    async fn set_step(&mut self, p: &Playground, step: CreationStep) -> Result<()> {
        self.step = step;
        if matches!(p.status, PlaygroundStatus::InProgress | PlaygroundStatus::Failed) {
            status_store::set_step(&self.r.store, self.fence, self.id, step).await?.held()?;
        }
        Ok(())
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

    /// The builder of this pass's `image_build` steps (borrowing the
    /// reconciler, not the pass, which moves its step meanwhile).
    fn builder<'b>(&self, desired: &'b spec::Desired, account_id: i64, playroom_id: i64) -> Builder<'b>
    where
        'a: 'b,
    {
        let r: &'a PlaygroundReconciler = self.r;
        Builder {
            store: &r.store,
            secrets: &r.secrets,
            repositories: r.repositories.as_ref(),
            fence: self.fence,
            playground_id: self.id,
            account_id,
            installation: &desired.installation,
            timeout: r.config.build_timeout,
            trusted: self.trusted,
            registry_policy: &r.config.registry_policy,
            network: r.config.build_network.as_deref(),
            slots: &r.slots,
            spool_dir: &r.config.spool_dir,
            playroom_id,
        }
    }

    /// Records a cache hit for each built service whose image the Playroom
    /// already had (once per image).
    async fn note_cache_hits(
        &self,
        builder: &Builder<'_>,
        desired: &spec::Desired,
        observed: &plan::Observed,
    ) -> Result<()> {
        let present: Vec<&spec::ServiceSpec> = desired
            .services
            .iter()
            .filter(|s| s.built.as_ref().is_some_and(|b| observed.images.contains(&b.image)))
            .collect();
        if present.is_empty() {
            return Ok(());
        }
        let recorded = play_store::builds::records(&self.r.store, self.id).await?;
        for service in present {
            builder.note_cache_hit(service, &recorded).await?;
        }
        Ok(())
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
        let apply = apply::Apply {
            docker,
            desired: None,
            installation,
            playground_id: self.id,
            // A destroy runs no container, so no image is checked for it.
            account_id: 0,
            trusted: false,
            registry_policy: &self.r.config.registry_policy,
            credentials: &[],
            files: &BTreeMap::new(),
            pull_timeout: self.r.config.pull_timeout,
            builder: None,
        };
        let observed = observe::observe(docker, installation, self.id, &[], volumes, None).await?;
        let steps = plan::destroy_plan(&observed, persist_volumes);
        if steps.is_empty() {
            return Ok(true);
        }
        for group in apply::groups(steps) {
            apply.group(&group).await?;
        }
        let observed = observe::observe(docker, installation, self.id, &[], volumes, None).await?;
        Ok(plan::destroy_plan(&observed, persist_volumes).is_empty())
    }
}
