//! The schedule loop (issue #30): keyed by schedule, it starts each
//! scheduled time's run and follows it to its end.
//!
//! Guarantees (the rules are `play_model::schedule`, the rows
//! `play_store::schedules`):
//! - **Level-triggered.** A pass reads the schedule, its open runs and the
//!   clock, and does what is due: it never depends on having seen an
//!   earlier pass or a wake. It asks to run again at the next fire time,
//!   or in [`ScheduleLoopConfig::poll`] while a run is open.
//! - **Each time once.** Times are written as run rows unique per
//!   (schedule, time), and the cursor moves only from the value the pass
//!   read, in the same transaction; a launch is tied to its run by the
//!   Playspec name `schedule-<id>-run-<run>`, so a pass that stopped
//!   between the launch and recording it finds that Playground again
//!   instead of launching a second.
//! - **At most one catch-up run** after play was down, within the starting
//!   deadline; the other times are recorded as missed.
//! - **Concurrency policy** (`forbid`, `allow`, `replace`) is applied when
//!   a run starts; a skipped run is recorded with the reason.
//! - **Runs left running are settled before the policy decides** (issue
//!   #51, item 3). A replica that visits a schedule for the first time
//!   (after a crash, or taking over a dead replica's leases) may find a run
//!   still `running` whose job ended while nobody watched: its result is
//!   recorded by the Playground loop's first pass, not yet made. For
//!   [`SETTLE`] from that first visit, a pending run that `forbid` or
//!   `replace` would decide against a running run waits (the running
//!   run's Playground woken), so the catch-up starts once the old run is
//!   closed, instead of being skipped for a run that was already over.
//! - **Failures are visible:** a run whose launch is refused (a required
//!   variable missing, a quota) is failed with the reason, and the
//!   schedule counts consecutive failures and keeps its last success.

use std::time::Duration;

use play_core::playground::launch::{self, TemplateLaunch};
use play_core::playground::ops;
use play_core::wake::{Kind, Wake, Waker};
use play_model::ids::{ObjectId, ScheduleId};
use play_model::model::event::Actor;
use play_model::model::schedule::{RunEnd, RunStatus, Schedule, ScheduleRun};
use play_model::playground::DesiredState;
use play_model::schedule::{Policy, Spec, plan};
use play_model::secrets::SecretBox;
use play_model::time;
use play_store::{Store, job_results, playgrounds};
use play_store::{launch_settings, schedules};

use crate::Result;
use crate::launching::{Blocking, LaunchBounds, describe};
use crate::runtime::{Action, Ctx, Reconciler};

/// How long after a replica's first visit of a schedule a pending run
/// waits for the runs left running to settle before `forbid` or `replace`
/// decides against them: the Playground loop's first passes over the
/// Playroom (a connection, one observation) take a few seconds.
pub const SETTLE: Duration = Duration::from_secs(10);

/// The loop's settings.
#[derive(Clone, Debug)]
pub struct ScheduleLoopConfig {
    /// How often an open run is looked at.
    pub poll: Duration,
    /// The bounds of the Playgrounds runs launch, as the API's.
    pub launch: LaunchBounds,
}

impl Default for ScheduleLoopConfig {
    fn default() -> Self {
        ScheduleLoopConfig { poll: Duration::from_secs(2), launch: LaunchBounds::default() }
    }
}

/// See the [module documentation](self).
pub struct ScheduleLoop {
    store: Store,
    secrets: SecretBox,
    waker: std::sync::Arc<dyn Waker>,
    config: ScheduleLoopConfig,
    /// How long the Playgrounds it launches live.
    life: play_model::playground::LifePolicy,
    /// Schedule id -> until when its runs left running are settling (see
    /// [`SETTLE`]); an entry is made at this replica's first visit.
    settling: std::sync::Mutex<std::collections::HashMap<i64, std::time::Instant>>,
}

impl std::fmt::Debug for ScheduleLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduleLoop").field("config", &self.config).finish_non_exhaustive()
    }
}

impl ScheduleLoop {
    pub fn new(store: Store, secrets: SecretBox, waker: std::sync::Arc<dyn Waker>) -> Self {
        ScheduleLoop {
            store,
            secrets,
            waker,
            config: ScheduleLoopConfig::default(),
            life: Default::default(),
            settling: Default::default(),
        }
    }

    /// Whether schedule `id`'s runs left running may still be settling:
    /// within [`SETTLE`] of this replica's first visit of it.
    fn settling(&self, id: i64) -> bool {
        let now = std::time::Instant::now();
        let mut map = self.settling.lock().unwrap_or_else(|p| p.into_inner());
        now < *map.entry(id).or_insert(now + SETTLE)
    }

    /// Whether pending `run` waits for the runs left running to settle:
    /// within the settling window, under a policy that decides against a
    /// running run, with one running. Wakes their Playgrounds, so their
    /// first pass here comes now.
    fn waits_to_settle(&self, id: i64, spec: &Spec, run: &ScheduleRun, open: &[ScheduleRun]) -> bool {
        if spec.policy == Policy::Allow {
            return false;
        }
        let running: Vec<i64> = open
            .iter()
            .filter(|r| r.id != run.id && r.status == RunStatus::Running)
            .filter_map(|r| r.playground_id)
            .collect();
        if running.is_empty() || !self.settling(id) {
            return false;
        }
        for playground in running {
            self.waker.wake(Wake::Playground(playground.into()));
        }
        tracing::debug!(schedule = id, run = run.id, "waiting for the runs left running to settle");
        true
    }

    pub fn with_config(mut self, config: ScheduleLoopConfig) -> Self {
        self.config = config;
        self
    }

    /// What it launches lives as `life` says (`play serve` gives the API's).
    pub fn with_life(mut self, life: play_model::playground::LifePolicy) -> Self {
        self.life = life;
        self
    }

    /// The Playspec name that ties a launch to its run.
    fn launch_name(schedule: &Schedule, run: &ScheduleRun) -> String {
        format!("schedule-{}-run-{}", schedule.id, run.id)
    }

    /// Closes `run` if its Playground finished (or is gone); whether it is
    /// still open.
    async fn follow(&self, schedule: &Schedule, run: &ScheduleRun) -> Result<bool> {
        let Some(playground) = run.playground_id else { return Ok(true) };
        if let Some(result) = job_results::get(&self.store, playground).await? {
            let status = if result.exit_code == 0 { RunStatus::Succeeded } else { RunStatus::Failed };
            let end =
                RunEnd { status, reason: None, exit_code: Some(result.exit_code), log_tail: Some(result.tail_logs) };
            schedules::finish_run(&self.store, schedule, run.id, end).await?;
            return Ok(false);
        }
        let gone = match playgrounds::get(&self.store, schedule.account_id, playground).await {
            Ok(p) => p.desired_state == DesiredState::Destroyed,
            Err(play_core::Error::NotFound(_)) => true,
            Err(e) => return Err(e.into()),
        };
        if gone {
            let reason = "its Playground was destroyed before the job ended".to_owned();
            let end = RunEnd { status: RunStatus::Failed, reason: Some(reason), exit_code: None, log_tail: None };
            schedules::finish_run(&self.store, schedule, run.id, end).await?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Starts pending `run` under the policy, given the runs still open.
    async fn start(&self, schedule: &Schedule, spec: &Spec, run: &ScheduleRun, open: &[ScheduleRun]) -> Result<()> {
        let others: Vec<&ScheduleRun> =
            open.iter().filter(|r| r.id != run.id && r.status == RunStatus::Running).collect();
        if !others.is_empty() {
            match spec.policy {
                Policy::Forbid => {
                    let reason = format!(
                        "the run of {} is still going (concurrency_policy: forbid)",
                        time::to_db(&others[0].scheduled_at)
                    );
                    let end =
                        RunEnd { status: RunStatus::Skipped, reason: Some(reason), exit_code: None, log_tail: None };
                    return Ok(schedules::finish_run(&self.store, schedule, run.id, end).await?);
                }
                Policy::Replace => {
                    for other in others {
                        if let Some(playground) = other.playground_id {
                            match ops::request_destroy(&self.store, schedule.account_id, playground, Actor::System)
                                .await
                            {
                                Ok(_) | Err(play_core::Error::NotFound(_)) => {}
                                Err(e) => return Err(e.into()),
                            }
                        }
                        let reason = format!("replaced by the run of {}", time::to_db(&run.scheduled_at));
                        let end = RunEnd {
                            status: RunStatus::Replaced,
                            reason: Some(reason),
                            exit_code: None,
                            log_tail: None,
                        };
                        schedules::finish_run(&self.store, schedule, other.id, end).await?;
                    }
                }
                Policy::Allow => {}
            }
        }
        let name = Self::launch_name(schedule, run);
        let variables = launch_settings::variables::<Schedule>(&self.store, &self.secrets, schedule.id).await?;
        let request = TemplateLaunch {
            playroom_id: schedule.playroom_id,
            version: None,
            variables,
            name: Some(name.clone()),
            job_mode: true,
            trigger: None,
        };
        let limits = self.config.launch.limits(&self.life);
        let launched = launch::launch_template(
            &self.store,
            &Blocking,
            schedule.account_id,
            schedule.template_id,
            request,
            limits,
            Actor::System,
        )
        .await;
        match launched {
            Ok(launched) => {
                schedules::run_started(&self.store, schedule, run.id, launched.playground.id).await?;
                tracing::info!(
                    schedule = schedule.id,
                    run = run.id,
                    playground = launched.playground.id,
                    "schedule run started"
                );
            }
            Err(play_core::Error::Validation(errors)) => {
                // Launched already by a pass that stopped before recording it?
                if let Some(playground) = playgrounds::by_playspec_name(&self.store, schedule.account_id, &name).await?
                {
                    schedules::run_started(&self.store, schedule, run.id, playground).await?;
                    return Ok(());
                }
                let reason = format!("the launch was refused: {}", describe(&errors));
                tracing::warn!(schedule = schedule.id, run = run.id, %reason, "schedule run not started");
                let end = RunEnd { status: RunStatus::Failed, reason: Some(reason), exit_code: None, log_tail: None };
                schedules::finish_run(&self.store, schedule, run.id, end).await?;
            }
            Err(play_core::Error::NotFound(what)) => {
                let reason = format!("the launch was refused: its {what} does not exist");
                let end = RunEnd { status: RunStatus::Failed, reason: Some(reason), exit_code: None, log_tail: None };
                schedules::finish_run(&self.store, schedule, run.id, end).await?;
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }
}

impl Reconciler for ScheduleLoop {
    const NAME: &'static str = "schedule";
    const KIND: Kind = Kind::Schedule;
    type Id = ScheduleId;

    async fn reconcile(&self, id: ScheduleId, _ctx: &Ctx) -> Result<Action> {
        let id = id.get();
        let Some(schedule) = launch_settings::find::<Schedule>(&self.store, id).await? else {
            return Ok(Action::await_change());
        };
        // The first visit opens the settling window (see SETTLE).
        self.settling(id);
        let mut open = Vec::new();
        for run in schedules::open_runs(&self.store, id).await? {
            if self.follow(&schedule, &run).await? {
                open.push(run);
            }
        }
        let poll = || Action::requeue_after(self.config.poll);
        let spec = schedule.settings.as_ref().map(|s| {
            let policy = s.concurrency_policy.parse().unwrap_or_default();
            let deadline = chrono::Duration::seconds(i64::try_from(s.starting_deadline_seconds).unwrap_or(i64::MAX));
            Spec::new(&s.cron, Some(&s.time_zone), policy, Some(deadline), time::now())
        });
        let spec = match spec {
            Some(Ok(spec)) if schedule.condition().is_none() => spec,
            Some(Err((field, message))) => {
                tracing::warn!(schedule = id, field, %message, "schedule settings do not parse");
                return Ok(if open.is_empty() { Action::await_change() } else { poll() });
            }
            _ => return Ok(if open.is_empty() { Action::await_change() } else { poll() }),
        };
        let now = time::now();
        let Some(cursor) = schedule.next_at else {
            if let Some(first) = spec.next_after(now) {
                schedules::start_cursor(&self.store, id, first).await?;
                return Ok(Action::requeue_at(first));
            }
            return Ok(Action::await_change());
        };
        let decided = plan(&spec, cursor, now);
        if decided.start.is_some() || !decided.missed.is_empty() {
            schedules::record_plan(&self.store, &schedule, cursor, &decided).await?;
            if decided.more_missed {
                tracing::warn!(schedule = id, "more than 100 scheduled times were missed; the first 100 are recorded");
            }
        }
        // Pending runs: the one just recorded, or one a stopped pass left.
        let mut open = Vec::new();
        for run in schedules::open_runs(&self.store, id).await? {
            if run.status == RunStatus::Pending {
                if now - run.scheduled_at > spec.starting_deadline {
                    let reason = "not started within the starting deadline".to_owned();
                    let end =
                        RunEnd { status: RunStatus::Missed, reason: Some(reason), exit_code: None, log_tail: None };
                    schedules::finish_run(&self.store, &schedule, run.id, end).await?;
                    continue;
                }
                let current = schedules::open_runs(&self.store, id).await?;
                if !self.waits_to_settle(id, &spec, &run, &current) {
                    self.start(&schedule, &spec, &run, &current).await?;
                }
            }
            open.push(run);
        }
        let next = decided.next.map(Action::requeue_at).unwrap_or_else(Action::await_change);
        Ok(if open.is_empty() { next } else { sooner(next, poll(), decided.next, self.config.poll) })
    }

    async fn list(&self) -> Result<Vec<ScheduleId>> {
        Ok(launch_settings::ids::<Schedule>(&self.store).await?.into_iter().map(ScheduleId).collect())
    }
}

/// The earlier of the next fire time and a poll of the open runs.
fn sooner(next: Action, poll: Action, next_at: Option<play_model::time::Timestamp>, every: Duration) -> Action {
    match next_at {
        Some(at) if at - time::now() < chrono::Duration::from_std(every).unwrap_or(chrono::Duration::MAX) => next,
        _ => poll,
    }
}
