//! What `/api/playgrounds` answers: its response bodies, built from core's
//! records.

use crate::state::AppState;
use crate::views::playground_urls::{self, RouteView, Urls};
use chrono::{DateTime, Utc};
use play_model::playground::{CreationStep, Playground, PlaygroundStatus as Status, ServiceStatus};
use play_model::time;
use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A dynamic service's branch.
#[derive(Debug, Serialize, ToSchema)]
pub struct BranchName {
    pub branch_name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlaygroundItem {
    pub id: i64,
    pub name: String,
    /// `in_progress`, `running`, `failed`, `destroying`, `complete`, or
    /// `sleeping`: an addition to the contract's statuses, a Playground
    /// whose containers are stopped until a request or `POST .../wake`
    /// wakes it (docs/sleep.md).
    #[schema(value_type = String, example = "running")]
    pub status: Status,
    pub job_mode: bool,
    pub playspec_id: Option<i64>,
    pub playspec_name: Option<String>,
    pub service_branches: BTreeMap<String, BranchName>,
    pub expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// Service name -> URL. In the list: the routes the Playroom's edge
    /// serves now. In the detail view: every route the desired state asks
    /// for, served or not yet (see `routes`).
    pub urls: Urls,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlaygroundDetail {
    #[serde(flatten)]
    pub item: PlaygroundItem,
    pub playroom_id: i64,
    /// The AI agent provider its launch named (`POST /api/launch`'s
    /// `agent`), `null` when none: recorded and shown; play runs no agent.
    pub agent: Option<String>,
    pub compose_project: String,
    pub env_overrides: BTreeMap<String, String>,
    pub service_subdomains: BTreeMap<String, String>,
    pub watched_services: Vec<String>,
    /// Seconds until expiry (0 once past).
    pub time_remaining: f64,
    /// How much of the lifetime has passed, 0-100.
    pub expiration_percentage: f64,
    pub last_applied_at: Option<DateTime<Utc>>,
    pub needs_recreation: bool,
    #[schema(value_type = Vec<Object>)]
    pub services: Vec<ServiceStatus>,
    /// Desired-state generation, and the one the reconciler last converged.
    pub generation: i64,
    pub observed_generation: i64,
    /// Every routed service, and whether the edge serves it now.
    pub routes: Vec<RouteView>,
    /// A branch a built service was pinned to has moved since (the
    /// Playzone's last sync saw a newer commit): a rollout builds it.
    pub needs_rollout: bool,
    /// The services `needs_rollout` is about.
    pub outdated_services: Vec<String>,
    /// The trigger that keeps this Playground (`/api/triggers`), or
    /// `null`.
    pub trigger: Option<OriginView>,
    /// Where creation or a rollout is, and why it failed (as the status
    /// view shows them).
    #[serde(flatten)]
    pub progress: Progress,
    /// Sleep and wake (issue #32; `docs/sleep.md`).
    #[serde(flatten)]
    pub sleep: SleepView,
}

/// When a Playground sleeps, and what its edge saw.
#[derive(Debug, Serialize, ToSchema)]
pub struct SleepView {
    /// How long without activity before it sleeps (`30m`), as its own
    /// setting, its Playspec's or the installation's default give it;
    /// `null`: never.
    pub sleep_after: Option<String>,
    /// `awake` or `asleep`: what it should be (the status says what it
    /// is: `sleeping` once its containers are stopped).
    #[schema(value_type = String)]
    pub power: play_model::playground::Power,
    /// Why it last went to sleep or woke: `idle`, `request` or `api`.
    #[schema(value_type = Option<String>)]
    pub power_reason: Option<play_model::playground::PowerReason>,
    /// When it was last converged asleep.
    pub slept_at: Option<DateTime<Utc>>,
    /// The last activity its edge saw (requests, open connections): the
    /// start of the idle clock. Recorded only while it may sleep (the
    /// edge logs those hosts' requests only); `null` for one that never
    /// may (docs/sleep.md).
    pub last_active_at: Option<DateTime<Utc>>,
    /// When it sleeps if nothing happens before (awake and running only).
    pub sleeps_at: Option<DateTime<Utc>>,
}

impl SleepView {
    /// `p`'s sleep under the installation's `life` policy.
    pub fn of(p: &Playground, life: &play_model::playground::LifePolicy) -> Self {
        let after = life.sleep_after(p);
        let awake_running = p.sleep.power == play_model::playground::Power::Awake && p.status == Status::Running;
        SleepView {
            sleep_after: play_model::playground::sleep::format_after(after),
            power: p.sleep.power,
            power_reason: p.sleep.reason,
            slept_at: p.sleep.slept_at,
            last_active_at: p.sleep.last_active_at,
            sleeps_at: if awake_running { p.sleep.sleeps_at(after) } else { None },
        }
    }
}

/// The trigger that keeps a Playground and the ref it follows.
#[derive(Debug, Serialize, ToSchema)]
pub struct OriginView {
    pub trigger_id: i64,
    /// `branch` (or `pull_request`).
    pub ref_kind: String,
    /// The branch name (or pull request number).
    pub ref_name: String,
    /// The commit the trigger last launched or rolled it out at.
    pub commit: Option<String>,
}

impl From<play_model::playground::model::Origin> for OriginView {
    fn from(o: play_model::playground::model::Origin) -> Self {
        OriginView { trigger_id: o.trigger_id, ref_kind: o.ref_kind, ref_name: o.ref_name, commit: o.commit }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlaygroundStatus {
    pub id: i64,
    #[schema(value_type = String)]
    pub status: Status,
    pub job_mode: bool,
    #[serde(flatten)]
    pub progress: Progress,
    pub needs_recreation: bool,
    #[schema(value_type = Vec<Object>)]
    pub services: Vec<ServiceStatus>,
}

/// Where a Playground's creation or rollout is, and why it failed: the
/// status view's fields, which the detail view carries too (a failed
/// Playground's detail says why, issue #51 item 6).
#[derive(Debug, Serialize, ToSchema)]
pub struct Progress {
    #[schema(value_type = Option<String>)]
    pub creation_step: Option<CreationStep>,
    pub creation_step_label: Option<String>,
    pub error_message: Option<String>,
    #[schema(value_type = Option<String>)]
    pub error_step: Option<CreationStep>,
    pub error_step_label: Option<String>,
}

impl Progress {
    fn of(p: &Playground) -> Self {
        let label = |step: Option<CreationStep>| step.map(|s| s.label().to_owned());
        Progress {
            creation_step: p.creation_step,
            creation_step_label: label(p.creation_step),
            error_message: p.error_message.clone(),
            error_step: p.error_step,
            error_step_label: label(p.error_step),
        }
    }
}

pub(crate) fn item(p: &Playground, urls: Urls) -> PlaygroundItem {
    let service_branches = p
        .service_settings
        .iter()
        .filter_map(|(name, s)| {
            let branch = s.git_config.as_ref()?.branch_name.clone()?;
            Some((name.clone(), BranchName { branch_name: branch }))
        })
        .collect();
    PlaygroundItem {
        id: p.id,
        name: p.name.clone(),
        status: p.status,
        job_mode: p.job_mode,
        playspec_id: p.playspec_id,
        playspec_name: p.playspec_name.clone(),
        service_branches,
        expires_at: p.expires_at,
        created_at: p.created_at,
        urls,
    }
}

/// Seconds until `expires_at` (never negative).
pub fn time_remaining(p: &Playground) -> f64 {
    p.expires_at.map_or(0.0, |at| ((at - time::now()).num_milliseconds() as f64 / 1000.0).max(0.0))
}

pub(crate) fn expiration_percentage(p: &Playground) -> f64 {
    let Some(at) = p.expires_at else { return 0.0 };
    let total = (at - p.created_at).num_milliseconds() as f64;
    if total <= 0.0 {
        return 100.0;
    }
    let elapsed = (time::now() - p.created_at).num_milliseconds() as f64;
    (elapsed / total * 100.0).clamp(0.0, 100.0)
}

/// The detail view of `p`, with its routes.
pub async fn detail(state: &AppState, p: Playground) -> play_core::Result<PlaygroundDetail> {
    let (urls, routes) = playground_urls::urls_and_routes(state, &p).await?;
    let origin = play_store::trigger_targets::origin_of(&state.store, p.id).await?;
    detail_known(state, p, true, origin, urls, routes).await
}

/// [`detail`] from one read ([`playground_detail::get_for_detail`]).
pub(crate) async fn detail_read(
    state: &AppState,
    read: play_model::playground::model::ForDetail,
) -> play_core::Result<PlaygroundDetail> {
    let p = read.playground;
    // A deleted Playroom: not found, as `playrooms::get` answers.
    let playroom = read.playroom.ok_or(play_core::Error::NotFound("playroom"))?;
    let (urls, routes) = playground_urls::urls_and_routes_on(state, &p, playroom).await?;
    detail_known(state, p, read.any_outdated, read.origin, urls, routes).await
}

/// The detail view of `p`, its URLs and routes known, where
/// `maybe_outdated: false` says the caller read that no built service is
/// outdated.
pub(crate) async fn detail_known(
    state: &AppState,
    p: Playground,
    maybe_outdated: bool,
    origin: Option<play_model::playground::model::Origin>,
    urls: playground_urls::Urls,
    routes: Vec<playground_urls::RouteView>,
) -> play_core::Result<PlaygroundDetail> {
    let outdated = match maybe_outdated {
        true => play_store::builds::outdated(&state.store, p.id).await?,
        false => Vec::new(),
    };
    Ok(PlaygroundDetail {
        // The Playspec's own repository moving needs a rollout too, but
        // is no service.
        needs_rollout: !outdated.is_empty(),
        outdated_services: outdated.into_iter().filter(|s| s != play_model::build::PROJECT_PIN).collect(),
        trigger: origin.map(OriginView::from),
        sleep: SleepView::of(&p, &state.config.life),
        progress: Progress::of(&p),
        item: item(&p, urls),
        time_remaining: time_remaining(&p),
        expiration_percentage: expiration_percentage(&p),
        playroom_id: p.playroom_id,
        agent: p.agent.clone(),
        compose_project: p.compose_project,
        env_overrides: p.env_overrides,
        service_subdomains: p.service_subdomains,
        watched_services: p.watched_services,
        last_applied_at: p.last_applied_at,
        needs_recreation: p.needs_recreation,
        services: p.services,
        generation: p.generation,
        observed_generation: p.observed_generation,
        routes,
    })
}

/// The status view of `p`.
pub(crate) fn status_of(p: Playground) -> PlaygroundStatus {
    PlaygroundStatus {
        id: p.id,
        progress: Progress::of(&p),
        status: p.status,
        job_mode: p.job_mode,
        needs_recreation: p.needs_recreation,
        services: p.services,
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Extended {
    pub id: i64,
    pub expires_at: Option<DateTime<Utc>>,
    pub time_remaining: f64,
}
