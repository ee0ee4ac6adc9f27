//! The clean arms: nothing of a destroyed or completed Playground may stay
//! on its host; then a destroyed one's row goes (`playground.destroyed`)
//! and a completed job's host is recorded released (its row and result
//! stay until `expires_at`). A released job never reaches its host again.

use std::collections::BTreeMap;

use play_model::playground::{self, DesiredState, Playground};
use play_store::job_results;
use play_store::playground_status as status_store;

use super::super::{apply, observe, plan};
use super::Pass;
use super::snapshot::Host;
use crate::Result;
use crate::runtime::Action;

impl Pass<'_> {
    /// The clean arm. Named volumes are also found by name: one the engine
    /// created unlabelled (a mount racing its creation) is still this
    /// Playground's. A Compose that can no longer run (the Playroom's
    /// policy changed) must still be destroyed: its volumes are then found
    /// by label only. The mounted files were read because relative sources
    /// need them to resolve, so for the Compose to run at all.
    pub(super) async fn clean(&mut self, p: &Playground, host: &Host) -> Result<Action> {
        let persist = host.playspec.as_ref().is_some_and(|s| s.persist_volumes);
        let volumes = playground::desired_for(p, host.playspec.as_ref(), &host.files, &host.room, &Default::default())
            .map(|c| c.desired.volumes.into_iter().map(|v| v.name).collect::<Vec<_>>())
            .unwrap_or_default();
        if !self.clean_host(&host.docker, &p.installation, persist, &volumes).await? {
            return Ok(Action::requeue_after(self.r.config.poll_interval));
        }
        if p.desired_state == DesiredState::Complete {
            job_results::release_host(&self.r.store, self.fence, self.id).await?.held()?;
            return Ok(Action::await_change().or_at(p.expires_at));
        }
        self.finish_destroy().await?;
        self.r.wake_edge(p.playroom_id);
        Ok(Action::await_change())
    }

    /// A completed job whose host objects are already gone: it waits for
    /// its retention to end, or (DELETE, or that end) has its row deleted.
    pub(super) async fn released(&self, p: &Playground) -> Result<Action> {
        if p.desired_state == DesiredState::Destroyed {
            self.finish_destroy().await?;
            return Ok(Action::await_change());
        }
        Ok(Action::await_change().or_at(p.expires_at))
    }

    /// Deletes the row of a destroyed Playground whose host objects are
    /// gone. A refusal (`Held(false)`: the desired state is no longer
    /// `destroyed`) needs nothing more: destroyed is final today, and a
    /// change would wake a pass that follows it.
    async fn finish_destroy(&self) -> Result<()> {
        let _deleted: bool = status_store::finish_destroy(&self.r.store, self.fence, self.id).await?.held()?;
        self.r.expiries.forget(self.id);
        Ok(())
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
