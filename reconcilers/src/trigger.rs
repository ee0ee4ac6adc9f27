//! The trigger loop (issue #30): keyed by trigger, it keeps one Playground
//! per matching branch of the repository the trigger follows.
//!
//! Guarantees (the rules are `play_core::trigger`, the rows
//! `play_core::store::{triggers, trigger_targets}`):
//! - **Level-triggered.** A pass compares the Playzone's branch index
//!   (what the repository holds, as last synced) with the trigger's
//!   targets and converges: it never depends on the event that woke it.
//!   A push only wakes the Playzone's sync, whose pass wakes the triggers
//!   on it; every [`TriggerLoopConfig::interval`] a pass also asks the
//!   Playzone to sync when its last sync is older than that, so a lost
//!   push, a deleted branch or a force-push is repaired without an event.
//! - **One Playground per (trigger, branch).** A launch is announced on
//!   the target before it is made and named after the target's
//!   generation, so a pass that stopped between launching and recording
//!   finds the Playground again instead of launching a second.
//! - **Rollouts only when behind.** A live target is rolled out when its
//!   Playground's built services are behind the branch index (the
//!   definition of `needs_rollout`): only changed services rebuild and
//!   restart, the build cache as for any rollout.
//! - **Nothing comes back by itself.** A Playground destroyed outside the
//!   trigger (a person, its TTL) stops its target; the branch's next
//!   commit launches it again. A deleted branch destroys its Playground
//!   in the transaction that marks the target gone.
//! - **Visible problems.** A `repo_url` that names nothing the account can
//!   build from, a refused launch or the cap are recorded on the trigger
//!   or the target with the reason, and the pass retries at the interval.

use std::time::Duration;

use play_core::model::event::Actor;
use play_core::model::trigger::{Target, Trigger};
use play_core::playground::DesiredState;
use play_core::playground::launch::{self, BranchPin, TemplateLaunch};
use play_core::playground::model::RolloutChanges;
use play_core::playground::ops;
use play_core::playzone::link::{self, Linker};
use play_core::secrets::SecretBox;
use play_core::store::{Store, builds, playgrounds, playzone_branches, playzones, trigger_targets, triggers};
use play_core::time;
use play_core::trigger::{Head, plan_push};
use play_core::wake::{Kind, Waker};

use crate::Result;
use crate::launching::{Blocking, LaunchBounds, describe};
use crate::runtime::{Action, Ctx, Reconciler};

/// The loop's settings.
#[derive(Clone, Debug)]
pub struct TriggerLoopConfig {
    /// How often each trigger is looked at without a wake, and how old
    /// its Playzone's last sync may be before a pass asks for another
    /// (`PLAY_TRIGGER_INTERVAL`).
    pub interval: Duration,
    /// The bounds of the Playgrounds it launches, as the API's.
    pub launch: LaunchBounds,
}

impl Default for TriggerLoopConfig {
    fn default() -> Self {
        TriggerLoopConfig { interval: Duration::from_secs(60), launch: LaunchBounds::default() }
    }
}

/// See the [module documentation](self).
pub struct TriggerLoop {
    store: Store,
    secrets: SecretBox,
    waker: std::sync::Arc<dyn Waker>,
    config: TriggerLoopConfig,
}

impl std::fmt::Debug for TriggerLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TriggerLoop").field("config", &self.config).finish_non_exhaustive()
    }
}

impl TriggerLoop {
    pub fn new(store: Store, secrets: SecretBox, waker: std::sync::Arc<dyn Waker>) -> Self {
        TriggerLoop { store, secrets, waker, config: TriggerLoopConfig::default() }
    }

    pub fn with_config(mut self, config: TriggerLoopConfig) -> Self {
        self.config = config;
        self
    }

    /// Launches `head` for `target` (announced already), or records why
    /// not on the target.
    async fn launch(&self, trigger: &Trigger, playzone_id: i64, target: &Target, head: &Head) -> Result<()> {
        let name = trigger_targets::launch_name(target);
        if let Some(found) = playgrounds::by_playspec_name(&self.store, trigger.account_id, &name).await? {
            trigger_targets::launched(&self.store, trigger, target, found).await?;
            return Ok(());
        }
        let request = TemplateLaunch {
            playroom_id: trigger.playroom_id,
            version: None,
            variables: triggers::variables(&self.store, &self.secrets, trigger.id).await?,
            name: Some(name.clone()),
            job_mode: false,
            pin: Some(BranchPin { playzone_id, branch: head.branch.clone() }),
        };
        let launched = launch::launch_template(
            &self.store,
            &Blocking,
            trigger.account_id,
            trigger.template_id,
            request,
            self.config.launch.limits(),
            Actor::System,
        )
        .await;
        let refused = match launched {
            Ok(launched) => {
                self.waker.wake(Kind::Playground, launched.playground.id);
                trigger_targets::launched(&self.store, trigger, target, launched.playground.id).await?;
                tracing::info!(trigger = trigger.id, branch = %head.branch, playground = launched.playground.id, "trigger launched a Playground");
                return Ok(());
            }
            Err(play_core::Error::Validation(errors)) => describe(&errors),
            Err(play_core::Error::NotFound(what)) => format!("its {what} does not exist"),
            Err(play_core::Error::QuotaExceeded { resource, limit }) => {
                format!("the account's quota of {limit} {resource} is reached")
            }
            Err(e) => return Err(e.into()),
        };
        let reason = format!("the launch was refused: {refused}");
        tracing::warn!(trigger = trigger.id, branch = %head.branch, %reason, "trigger launch refused");
        trigger_targets::refuse(&self.store, trigger, &target.ref_kind, &target.ref_name, &head.commit, &reason)
            .await?;
        Ok(())
    }

    /// Looks at live `target` whose branch is at `head`: stops it when its
    /// Playground went away, rolls it out when its build is behind.
    async fn keep(&self, trigger: &Trigger, playzone_id: i64, target: &Target, head: &Head) -> Result<()> {
        let Some(playground) = target.playground_id else {
            // Announced, not recorded: a pass stopped in between.
            return self.launch(trigger, playzone_id, target, head).await;
        };
        let alive = match playgrounds::get(&self.store, trigger.account_id, playground).await {
            Ok(p) => p.desired_state != DesiredState::Destroyed,
            Err(play_core::Error::NotFound(_)) => false,
            Err(e) => return Err(e.into()),
        };
        if !alive {
            let reason = "its Playground was destroyed outside the trigger (by a person or its TTL); the branch's \
                          next commit launches it again";
            return Ok(trigger_targets::stopped(&self.store, target, reason).await?);
        }
        if builds::outdated(&self.store, playground).await?.is_empty() {
            return Ok(());
        }
        match ops::record_rollout(&self.store, trigger.account_id, playground, RolloutChanges::default(), Actor::System)
            .await
        {
            Ok(p) => {
                self.waker.wake(Kind::Playground, p.id);
                trigger_targets::rolled_out(&self.store, trigger, target, &head.commit).await?;
                tracing::info!(trigger = trigger.id, branch = %head.branch, playground, "trigger rolled out a Playground");
            }
            // Destroyed, or not running yet (a build in progress rolls
            // out to the index's head anyway): the next pass looks again.
            Err(play_core::Error::Conflict(_) | play_core::Error::NotFound(_)) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }
}

impl Reconciler for TriggerLoop {
    const NAME: &'static str = "trigger";
    const KIND: Kind = Kind::Trigger;

    async fn reconcile(&self, id: i64, _ctx: &Ctx) -> Result<Action> {
        let Some(trigger) = triggers::find(&self.store, id).await? else { return Ok(Action::await_change()) };
        let every = Action::requeue_after(self.config.interval);
        let Some(settings) = trigger.settings.clone() else { return Ok(Action::await_change()) };
        if trigger.playroom_id.is_none() || trigger.paused {
            return Ok(Action::await_change());
        }
        if settings.event_type != "push" {
            let problem = "pull_request triggers need a GitHub installation (not built yet)";
            triggers::record_pass(&self.store, id, None, Some(problem)).await?;
            return Ok(Action::await_change());
        }
        let Some(url) = settings.repo_url.clone() else {
            let problem = "trigger_config.repo_url is missing: name the repository whose branches the trigger follows";
            triggers::record_pass(&self.store, id, None, Some(problem)).await?;
            return Ok(Action::await_change());
        };
        let linker = Linker {
            store: &self.store,
            account_id: trigger.account_id,
            policy: &self.config.launch.repository_policy,
            hosts: &self.config.launch.hosts,
            limits: &self.config.launch.quotas,
            actor: Actor::System,
            may_read_playzones: false,
        };
        let playzone_id = match link::for_url(linker, &url).await {
            Ok(id) => id,
            Err(play_core::Error::Validation(errors)) => {
                let problem = format!("repo_url {url}: {}", describe(&errors));
                triggers::record_pass(&self.store, id, None, Some(&problem)).await?;
                return Ok(every);
            }
            Err(e) => return Err(e.into()),
        };
        triggers::record_pass(&self.store, id, Some(playzone_id), None).await?;
        let Some(zone) = playzones::find(&self.store, playzone_id).await? else { return Ok(every) };
        let stale = zone.last_synced_at.is_none_or(|at| {
            time::now() - at > chrono::Duration::from_std(self.config.interval).unwrap_or(chrono::Duration::MAX)
        });
        if stale && zone.synced_generation == zone.generation {
            playzones::request_sync(&self.store, zone.account_id, zone.id).await?;
            self.waker.wake(Kind::Playzone, zone.id);
        }
        if zone.last_synced_at.is_none() {
            // Its first sync wakes this trigger.
            return Ok(every);
        }
        let heads: Vec<Head> = playzone_branches::branches(&self.store, zone.id, None, None, usize::MAX)
            .await?
            .into_iter()
            .map(|b| Head { branch: b.name, commit: b.commit })
            .collect();
        let pattern = settings.branch.clone().or(zone.default_branch.clone()).unwrap_or_else(|| "main".into());
        let targets = trigger_targets::list(&self.store, id).await?;
        let plan = plan_push(&pattern, &heads, &targets, settings.max_playgrounds, trigger.updated_at);
        for target_id in &plan.destroy {
            let Some(target) = targets.iter().find(|t| t.id == *target_id) else { continue };
            let reason = format!("branch {} was deleted", target.ref_name);
            if let Some(destroyed) = trigger_targets::destroy(&self.store, &trigger, target, &reason).await? {
                self.waker.wake(Kind::Playground, destroyed);
            }
            tracing::info!(trigger = id, branch = %target.ref_name, "trigger destroyed the Playground of a deleted branch");
        }
        for (target_id, head) in &plan.keep {
            let Some(target) = targets.iter().find(|t| t.id == *target_id) else { continue };
            self.keep(&trigger, zone.id, target, head).await?;
        }
        for head in &plan.launch {
            let target = trigger_targets::begin_launch(&self.store, id, "branch", &head.branch, &head.commit).await?;
            self.launch(&trigger, zone.id, &target, head).await?;
        }
        for (head, reason) in &plan.refuse {
            trigger_targets::refuse(&self.store, &trigger, "branch", &head.branch, &head.commit, reason).await?;
        }
        Ok(every)
    }

    async fn list(&self) -> Result<Vec<i64>> {
        Ok(triggers::ids(&self.store).await?)
    }
}
