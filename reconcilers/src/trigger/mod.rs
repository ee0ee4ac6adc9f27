//! The trigger loop (issue #30): keyed by trigger, it keeps one Playground
//! per matching branch (`push`, [`push`]) or per open pull request
//! (`pull_request`, [`pulls`]) of the repository the trigger follows.
//!
//! Guarantees (the rules are `play_model::trigger`, the rows
//! `play_store::{triggers, trigger_targets, playzone_pulls}`):
//! - **Level-triggered.** A pass compares what the repository holds (the
//!   Playzone's branch index; the provider's open pull requests, merged
//!   into the Playzone's pull request index) with the trigger's targets
//!   and converges: it never depends on the event that woke it. A push or
//!   a `pull_request` delivery only wakes the Playzone's sync, whose pass
//!   wakes the triggers on it; every [`TriggerLoopConfig::interval`] a
//!   pass also runs (and asks the Playzone to sync when its last sync is
//!   older), so a lost delivery, a deleted branch, a force-push or a
//!   retargeted pull request is repaired without an event.
//! - **One Playground per (trigger, ref).** A launch is announced on the
//!   target (its next generation) and commits only while the target is
//!   still live at that generation, recording its Playground on the
//!   target in the same transaction: a pull request closed (or a branch
//!   deleted) while its launch was being made never gets it back, and a
//!   target never loses track of a Playground it launched.
//! - **Rollouts only when behind.** A live target is rolled out when its
//!   Playground's built services are behind the index (the definition of
//!   `needs_rollout`): only changed services rebuild and restart.
//! - **Nothing comes back by itself.** A Playground destroyed outside the
//!   trigger (a person, its TTL) stops its target; the ref's next commit
//!   launches it again. A deleted branch or a closed pull request destroys
//!   its Playground in the transaction that marks the target gone.
//! - **Visible problems.** A `repo_url` that names nothing the account can
//!   build from, a refused launch, a fork or the cap are recorded on the
//!   trigger or the target with the reason, and the pass retries at the
//!   interval.

mod pulls;
mod push;
mod report;

use std::collections::BTreeMap;
use std::time::Duration;

use play_core::playground::launch::{self, TemplateLaunch, TriggerLaunch};
use play_core::playground::ops;
use play_core::wake::Kind;
use play_model::ids::{ObjectId, TriggerId};
use play_model::model::event::Actor;
use play_model::model::trigger::{Target, Trigger};
use play_model::playground::DesiredState;
use play_model::playground::model::RolloutChanges;
use play_model::playzone::model::Playzone;
use play_model::secrets::SecretBox;
use play_model::time;
use play_store::{
    Store, builds, launch_settings, playgrounds, playrooms, playspec_files, playspecs, playzones, trigger_targets,
    triggers,
};

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
    /// How soon a pass looks again while a preview it reports on is still
    /// converging (its pull request comment and deployment status follow
    /// the Playground's state).
    pub report_interval: Duration,
    /// The bounds of the Playgrounds it launches, as the API's.
    pub launch: LaunchBounds,
}

impl Default for TriggerLoopConfig {
    fn default() -> Self {
        TriggerLoopConfig {
            interval: Duration::from_secs(60),
            report_interval: Duration::from_secs(2),
            launch: LaunchBounds::default(),
        }
    }
}

/// See the [module documentation](self).
pub struct TriggerLoop {
    store: Store,
    secrets: SecretBox,
    config: TriggerLoopConfig,
    /// How long the Playgrounds it launches live.
    life: play_model::playground::LifePolicy,
    /// When each pull-request trigger last listed its repository's open
    /// pull requests (this replica): the list is the periodic repair, so
    /// it is read once per interval, not at every pass a converging
    /// preview asks for (deliveries write the index themselves).
    listed_at: std::sync::Mutex<std::collections::HashMap<i64, std::time::Instant>>,
}

impl std::fmt::Debug for TriggerLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TriggerLoop").field("config", &self.config).finish_non_exhaustive()
    }
}

/// What a launch for one ref builds and how its URLs are named.
struct LaunchRef {
    playzone_id: i64,
    /// The pin name: the branch, or `pull/<n>/head`.
    pin: String,
    commit: String,
    repo_url: String,
    subdomain_prefix: Option<String>,
}

impl TriggerLoop {
    pub fn new(store: Store, secrets: SecretBox) -> Self {
        TriggerLoop {
            store,
            secrets,
            config: TriggerLoopConfig::default(),
            life: Default::default(),
            listed_at: Default::default(),
        }
    }

    pub fn with_config(mut self, config: TriggerLoopConfig) -> Self {
        self.config = config;
        self
    }

    /// What it launches lives as `life` says (`play serve` gives the API's).
    pub fn with_life(mut self, life: play_model::playground::LifePolicy) -> Self {
        self.life = life;
        self
    }

    /// Launches `at` for `target` (announced already), or records why not
    /// on the target.
    async fn launch(&self, trigger: &Trigger, target: &Target, at: &LaunchRef) -> Result<()> {
        let name = trigger_targets::launch_name(target);
        if let Some(found) = playgrounds::by_playspec_name(&self.store, trigger.account_id, &name).await? {
            let urls = self.urls(trigger.account_id, found).await?;
            trigger_targets::launched(&self.store, trigger, target, found, &urls).await?;
            return Ok(());
        }
        let request = TemplateLaunch {
            playroom_id: trigger.playroom_id,
            version: None,
            variables: launch_settings::variables::<Trigger>(&self.store, &self.secrets, trigger.id).await?,
            name: Some(name.clone()),
            job_mode: false,
            trigger: Some(TriggerLaunch {
                playzone_id: at.playzone_id,
                branch: at.pin.clone(),
                repo_url: at.repo_url.clone(),
                subdomain_prefix: at.subdomain_prefix.clone(),
                target: (target.id, target.generation),
                origin: play_model::playground::model::Origin {
                    trigger_id: trigger.id,
                    ref_kind: target.ref_kind.clone(),
                    ref_name: target.ref_name.clone(),
                    commit: Some(at.commit.clone()),
                },
            }),
        };
        let launched = launch::launch_template(
            &self.store,
            &Blocking,
            trigger.account_id,
            trigger.template_id,
            request,
            self.config.launch.limits(&self.life),
            Actor::System,
        )
        .await;
        let refused = match launched {
            Ok(launched) => {
                let urls = self.urls(trigger.account_id, launched.playground.id).await?;
                trigger_targets::launched(&self.store, trigger, target, launched.playground.id, &urls).await?;
                tracing::info!(trigger = trigger.id, r#ref = %target.ref_name, playground = launched.playground.id, "trigger launched a Playground");
                return Ok(());
            }
            // The target moved on (its ref went away) while the launch was
            // made: nothing was launched, and the next pass sees why.
            Err(play_core::Error::Conflict(_)) => return Ok(()),
            Err(play_core::Error::Validation(errors)) => describe(&errors),
            Err(play_core::Error::NotFound(what)) => format!("its {what} does not exist"),
            Err(play_core::Error::QuotaExceeded { resource, limit }) => {
                format!("the account's quota of {limit} {resource} is reached")
            }
            Err(e) => return Err(e.into()),
        };
        let reason = format!("the launch was refused: {refused}");
        tracing::warn!(trigger = trigger.id, r#ref = %target.ref_name, %reason, "trigger launch refused");
        trigger_targets::refuse(&self.store, trigger, &target.ref_kind, &target.ref_name, &at.commit, &reason).await?;
        Ok(())
    }

    /// Looks at live `target` whose ref is at `at.commit`: stops it when
    /// its Playground went away, rolls it out when its build is behind.
    async fn keep(&self, trigger: &Trigger, target: &Target, at: &LaunchRef) -> Result<()> {
        let Some(playground) = target.playground_id else {
            // Announced, not launched: a pass stopped in between.
            return self.launch(trigger, target, at).await;
        };
        let alive = match playgrounds::get(&self.store, trigger.account_id, playground).await {
            Ok(p) => p.desired_state != DesiredState::Destroyed,
            Err(play_core::Error::NotFound(_)) => false,
            Err(e) => return Err(e.into()),
        };
        if !alive {
            let reason = "its Playground was destroyed outside the trigger (by a person or its TTL); the ref's \
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
                let urls = self.urls(trigger.account_id, p.id).await?;
                trigger_targets::rolled_out(&self.store, trigger, target, &at.commit, &urls).await?;
                tracing::info!(trigger = trigger.id, r#ref = %target.ref_name, playground, "trigger rolled out a Playground");
            }
            // Destroyed, or not running yet (a build in progress rolls
            // out to the index's head anyway): the next pass looks again.
            Err(play_core::Error::Conflict(_) | play_core::Error::NotFound(_)) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// The URLs the desired state of Playground `id` routes (service ->
    /// URL), as the API shows them: for the `trigger.fired` event. Empty
    /// when it has none or they cannot be computed.
    async fn urls(&self, account_id: i64, id: i64) -> Result<BTreeMap<String, String>> {
        let playground = playgrounds::get(&self.store, account_id, id).await?;
        let (Some(spec_id), room) =
            (playground.playspec_id, playrooms::get(&self.store, account_id, playground.playroom_id).await?)
        else {
            return Ok(BTreeMap::new());
        };
        let playspec = playspecs::get(&self.store, account_id, spec_id).await?;
        let files = playspec_files::list_files(&self.store, spec_id).await?;
        let computed = tokio::task::spawn_blocking(move || {
            play_model::playground::desired_for(&playground, Some(&playspec), &files, &room, &Default::default())
                .map(|c| c.desired.routes())
        })
        .await
        .map_err(|e| play_core::Error::Internal(format!("computing a Playground's routes stopped: {e}")))?;
        Ok(computed.map(|routes| routes.into_iter().map(|(s, r)| (s, r.url)).collect()).unwrap_or_default())
    }

    /// Destroys `target`'s Playground for `reason`, in the transaction
    /// that marks the target gone (whose commit wakes it).
    async fn destroy(&self, trigger: &Trigger, target: &Target, reason: &str) -> Result<()> {
        trigger_targets::destroy(&self.store, trigger, target, reason).await?;
        tracing::info!(trigger = trigger.id, r#ref = %target.ref_name, %reason, "trigger destroyed a Playground");
        Ok(())
    }

    /// Asks for a sync of `zone` when its last one is older than the
    /// interval; whether it was ever synced.
    async fn freshen(&self, zone: &Playzone) -> Result<bool> {
        let stale = zone.last_synced_at.is_none_or(|at| {
            time::now() - at > chrono::Duration::from_std(self.config.interval).unwrap_or(chrono::Duration::MAX)
        });
        if stale && zone.synced_generation == zone.generation {
            playzones::request_sync(&self.store, zone.account_id, zone.id).await?;
        }
        Ok(zone.last_synced_at.is_some())
    }

    /// Whether trigger `id` should list its repository's pull requests now
    /// (never listed by this replica, or not for an interval); notes that
    /// it does.
    fn list_due(&self, id: i64) -> bool {
        let mut listed = self.listed_at.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        if listed.get(&id).is_some_and(|at| now.duration_since(*at) < self.config.interval) {
            return false;
        }
        listed.insert(id, now);
        true
    }

    /// Forgets that trigger `id` listed (a failed list is tried again at
    /// the next pass).
    fn list_failed(&self, id: i64) {
        self.listed_at.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    }

    /// Records `problem` on the trigger (what stands in its way, in words).
    async fn problem(&self, trigger: &Trigger, problem: &str) -> Result<()> {
        Ok(triggers::record_pass(&self.store, trigger.id, None, Some(problem)).await?)
    }
}

impl Reconciler for TriggerLoop {
    const NAME: &'static str = "trigger";
    const KIND: Kind = Kind::Trigger;
    type Id = TriggerId;

    async fn reconcile(&self, id: TriggerId, _ctx: &Ctx) -> Result<Action> {
        let id = id.get();
        let Some(trigger) = launch_settings::find::<Trigger>(&self.store, id).await? else {
            return Ok(Action::await_change());
        };
        let Some(settings) = trigger.settings.clone() else { return Ok(Action::await_change()) };
        if trigger.playroom_id.is_none() || trigger.paused {
            return Ok(Action::await_change());
        }
        let Some(url) = settings.repo_url.clone() else {
            let problem = "trigger_config.repo_url is missing: name the repository the trigger follows";
            self.problem(&trigger, problem).await?;
            return Ok(Action::await_change());
        };
        let sooner = match settings.event_type.as_str() {
            "push" => push::pass(self, &trigger, &settings, &url).await?,
            _ => pulls::pass(self, &trigger, &settings, &url).await?,
        };
        Ok(if sooner {
            Action::requeue_after(self.config.report_interval)
        } else {
            Action::requeue_after(self.config.interval)
        })
    }

    async fn list(&self) -> Result<Vec<TriggerId>> {
        Ok(launch_settings::ids::<Trigger>(&self.store).await?.into_iter().map(TriggerId).collect())
    }
}
