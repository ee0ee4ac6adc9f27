//! The converge arm: a running Playground's desired services on its host,
//! observe -> plan -> apply, round after round. In job mode an exited
//! watched container is left as it is, and once every watched service has
//! exited the job's completion is recorded and the next pass (at once)
//! cleans the host.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use play_model::playground::{self, CreationStep, Playground, PlaygroundStatus};
use play_store::job_results;
use play_store::{playground_status as status_store, playspec_files};

use super::super::build::Builder;
use super::super::{PlaygroundReconciler, apply, job, observe, pins, plan, rollout, sleep, source, spec, wake_gate};
use super::Pass;
use super::lifecycle;
use super::snapshot::Host;
use crate::host::RegistryCredentials;
use crate::runtime::Action;
use crate::{Error, Result};

/// How a converging pass ended.
enum Converged {
    /// Look again after this poll (waiting on the host), or only at the
    /// expiry, the sleep deadline or a change (`None`).
    Wait(Option<Duration>),
    /// Job mode: the job's completion is recorded.
    JobDone,
}

impl<'a> Pass<'a> {
    /// The arm: the Playspec's services on the Playroom, built from their
    /// pinned commits.
    pub(super) async fn converge_running(&mut self, p: &Playground, host: &Host) -> Result<Action> {
        let playspec = host.playspec.as_ref().ok_or(playground::DesiredError::NoPlayspec)?;
        // Pinning a built service's commit is part of `image_build`.
        let at = std::mem::replace(&mut self.step, CreationStep::ImageBuild);
        let sources = pins::ensure(self.r, self.fence, p, playspec, &host.files, &host.room).await?;
        self.step = at;
        self.trusted = host.room.trusted;
        let desired = playground::desired_for(p, Some(playspec), &host.files, &host.room, &sources)?.desired;
        let watched = if p.job_mode { Some(job::watched(p, &desired).map_err(Error::InvalidSpec)?) } else { None };
        match self.converge(&host.docker, &host.target, p, &desired, watched.as_ref(), playspec.id).await? {
            Converged::Wait(poll) => Ok(lifecycle::next_visit(p, sleep::deadline(self.r, p), poll)),
            Converged::JobDone => Ok(Action::requeue_now()),
        }
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
            return Ok(Converged::Wait(None));
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
            return Ok(Converged::Wait(watched.map(|_| self.r.config.job_poll_interval)));
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
        Ok(Converged::Wait(Some(self.r.config.poll_interval)))
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
}
