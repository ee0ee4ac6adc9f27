//! Shared state of every handler.

use std::num::NonZeroU32;
use std::sync::Arc;

use axum::extract::FromRef;
use governor::clock::DefaultClock;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use play_core::metrics::Metrics;
use play_core::playground::Limits;
use play_core::scm::hosts::SourceHosts;
use play_model::host::HostGateway;
use play_model::model::quota::QuotaLimits;
use play_model::playground::LifePolicy;
use play_model::playzone::RepositoryPolicy;
use play_model::repository::RepositoryGateway;
use play_model::scm::host::{InstallableApp, SourceHost};
use play_model::secrets::SecretBox;
use play_model::token::TokenPepper;
use play_model::webhook::UrlPolicy;
use play_store::Store;
use tokio_util::sync::CancellationToken;

use crate::cpu::CpuPool;

/// Limits and defaults of the API, set from `play serve`'s flags.
#[derive(Clone, Debug)]
pub struct ApiConfig {
    /// Largest accepted request body in bytes (413 beyond).
    pub body_limit: usize,
    /// Sustained requests per second allowed per API key.
    pub rate_limit_per_second: u32,
    /// Requests a key may make in a burst above the sustained rate.
    pub rate_limit_burst: u32,
    pub quotas: QuotaLimits,
    /// Whether Playrooms may use the Docker engine play itself runs on
    /// (`connection: local`). Off by default: such a Playroom runs tenant
    /// containers next to play.
    pub allow_local_playrooms: bool,
    /// How long new Playgrounds live and when those that inherit their
    /// `sleep_after` sleep: the same value the loops are given
    /// (`play_model::playground::policy`).
    pub life: LifePolicy,
    /// Which webhook URLs endpoints may name: `https` to public hosts by
    /// default; `http` and allowlisted private hosts or networks only where
    /// the operator says so (`PLAY_WEBHOOK_ALLOW_HTTP`,
    /// `PLAY_WEBHOOK_ALLOWLIST`).
    pub webhook_urls: UrlPolicy,
    /// How long `POST /api/webhook_endpoints/:id/test` waits for the
    /// dispatcher's first attempt before answering 202 (still pending).
    pub webhook_test_wait: std::time::Duration,
    /// Which repository URLs Playzones may name (`PLAY_REPOSITORY_ALLOW_HTTP`,
    /// `PLAY_REPOSITORY_ALLOWLIST`); the gateway checks resolved addresses
    /// against the same policy.
    pub repository_policy: RepositoryPolicy,
    /// How long a rendered Playground detail or status may be served again
    /// (`crate::recent`); zero: every read goes to the store.
    pub read_staleness: std::time::Duration,
    /// The GitHub App's webhook secret; `None`: no GitHub App is
    /// configured, and its webhook route answers 404.
    pub github_webhook_secret: Option<play_model::scm::github_hook::WebhookSecret>,
    /// Whether play is served over HTTPS (`PLAY_PUBLIC_URL` is `https:`):
    /// browser cookies are then `Secure`.
    pub secure_cookies: bool,
    /// The shortest time a template's schedule may leave between two runs
    /// (`PLAY_SCHEDULE_MIN_INTERVAL`); a `cron` that fires more often is
    /// refused at validation.
    pub schedule_min_interval: std::time::Duration,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            body_limit: 1024 * 1024,
            rate_limit_per_second: 50,
            rate_limit_burst: 100,
            quotas: QuotaLimits::default(),
            allow_local_playrooms: false,
            life: LifePolicy::default(),
            webhook_urls: UrlPolicy::default(),
            webhook_test_wait: std::time::Duration::from_secs(15),
            repository_policy: RepositoryPolicy::default(),
            read_staleness: std::time::Duration::from_millis(250),
            github_webhook_secret: None,
            secure_cookies: false,
            schedule_min_interval: std::time::Duration::from_secs(60),
        }
    }
}

pub type KeyRateLimiter = RateLimiter<i64, DefaultKeyedStateStore<i64>, DefaultClock>;
/// Sign-in attempts, per client: an IPv4 address or an IPv6 /64
/// (`crate::web::sign_in::client_of`).
pub type AddressRateLimiter = RateLimiter<std::net::IpAddr, DefaultKeyedStateStore<std::net::IpAddr>, DefaultClock>;

/// Sign-in attempts allowed per client address: a burst of this many, then
/// one every [`SIGN_IN_PERIOD`].
pub const SIGN_IN_BURST: u32 = 10;
pub const SIGN_IN_PERIOD: std::time::Duration = std::time::Duration::from_secs(6);

/// What every handler shares, behind one `Arc`: axum clones the state for
/// every layer and handler of every request, and a struct of a dozen `Arc`s
/// cost a dozen atomic increments and decrements each time (about a tenth
/// of `/status`'s CPU in a profile, issue #16).
#[derive(Clone, Debug)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// See [`AppState`].
#[derive(Clone, Debug)]
pub struct Shared {
    pub store: Store,
    pub config: Arc<ApiConfig>,
    pub pepper: TokenPepper,
    pub secrets: SecretBox,
    pub metrics: Arc<Metrics>,
    pub limiter: Arc<KeyRateLimiter>,
    /// Sign-in attempts per client (an IPv4 address or an IPv6 /64).
    pub sign_in_limiter: Arc<AddressRateLimiter>,
    /// Verified API keys (see `crate::key_cache`).
    pub keys: Arc<crate::key_cache::KeyCache>,
    /// Live, read-only access to Playroom hosts.
    pub gateway: Arc<dyn HostGateway>,
    /// Live access to Playzones' repositories (`env_defaults`).
    pub repositories: Arc<dyn RepositoryGateway>,
    /// Where the repositories facility creates and pushes: play's own Git
    /// host, and the GitHub App accounts install (`PLAY_GITHUB_*`; without
    /// it, its install routes answer 404). None at all: every `/api/repos`
    /// route answers `SCM_APP_REQUIRED`.
    pub hosts: SourceHosts,
    /// Where Compose parsing and validation run (not on the async threads).
    pub cpu: CpuPool,
    /// Desired routes of running Playgrounds (see `crate::route_cache`).
    pub routes: Arc<crate::route_cache::RouteCache>,
    /// Hot responses rendered once per group of waiting callers (see
    /// `crate::rendered`).
    pub renders: Arc<crate::rendered::Renders>,
}

impl Shared {
    /// Forgets the rate-limit state of API keys and sign-in clients idle
    /// long enough to be indistinguishable from new ones, so memory stays
    /// bounded by recently active ones (the sign-in limiter is keyed by
    /// client addresses, of which IPv6 clients have no shortage).
    /// `play serve` calls it every minute ([`Shared::prune_rate_limits`]).
    pub fn forget_idle_rate_limits(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
        self.sign_in_limiter.retain_recent();
        self.sign_in_limiter.shrink_to_fit();
    }

    /// Forgets idle rate-limit state ([`Shared::forget_idle_rate_limits`])
    /// every minute until `shutdown`.
    pub async fn prune_rate_limits(&self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => self.forget_idle_rate_limits(),
            }
        }
    }

    /// What server-side apply runs with on this replica.
    pub fn apply_env(&self) -> play_core::apply::Env<'_> {
        play_core::apply::Env {
            store: &self.store,
            secrets: &self.secrets,
            pepper: &self.pepper,
            cpu: &self.cpu,
            limits: self.limits(),
            allow_local_playrooms: self.config.allow_local_playrooms,
            schedule_min_interval: self.config.schedule_min_interval,
            webhook_urls: &self.config.webhook_urls,
        }
    }

    /// What bounds the creation of Playgrounds (quotas, lifetimes,
    /// repositories, and the source host a repository URL may name), for
    /// the domain's flows.
    pub fn limits(&self) -> Limits<'_> {
        Limits {
            quotas: &self.config.quotas,
            lifetimes: self.config.life.lifetimes,
            repositories: &self.config.repository_policy,
            hosts: &self.hosts,
        }
    }
}

fn sign_in_quota() -> Quota {
    let burst = NonZeroU32::new(SIGN_IN_BURST).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(SIGN_IN_PERIOD).unwrap_or_else(|| Quota::per_minute(burst)).allow_burst(burst)
}

impl AppState {
    pub fn new(
        store: Store,
        config: ApiConfig,
        pepper: TokenPepper,
        secrets: SecretBox,
        metrics: Arc<Metrics>,
        gateway: Arc<dyn HostGateway>,
    ) -> Self {
        let per_second = NonZeroU32::new(config.rate_limit_per_second).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(config.rate_limit_burst).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::per_second(per_second).allow_burst(burst);
        let renders = Arc::new(crate::rendered::Renders::new(config.read_staleness, store.local_writes().clone()));
        AppState(Arc::new(Shared {
            store,
            config: Arc::new(config),
            pepper,
            secrets,
            metrics,
            limiter: Arc::new(RateLimiter::keyed(quota)),
            sign_in_limiter: Arc::new(RateLimiter::keyed(sign_in_quota())),
            keys: Arc::default(),
            gateway,
            repositories: Arc::new(play_model::repository::NoRepositories),
            hosts: SourceHosts::default(),
            cpu: CpuPool::per_core(),
            routes: Arc::default(),
            renders,
        }))
    }

    /// This state's own copy to change (at start-up and in tests; copied
    /// if shared).
    pub fn shared_mut(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.0)
    }

    /// Gives the API live access to repositories (`play serve` passes the
    /// git gateway; without it, `env_defaults` answers that repository
    /// access is not configured).
    pub fn with_repositories(mut self, repositories: Arc<dyn RepositoryGateway>) -> Self {
        self.shared_mut().repositories = repositories;
        self
    }

    /// Gives the repositories facility its source host (`play serve`
    /// passes play's own Git host unless the operator switched it off).
    pub fn with_source_host(mut self, host: Arc<dyn SourceHost>) -> Self {
        self.shared_mut().hosts.builtin = Some(host);
        self
    }

    /// Gives the API the GitHub App accounts install (`play serve` passes
    /// it when the operator configured one).
    pub fn with_github_app(mut self, app: Arc<dyn InstallableApp>) -> Self {
        self.shared_mut().hosts.github = Some(app);
        self
    }
}

impl FromRef<AppState> for ApiConfig {
    fn from_ref(state: &AppState) -> Self {
        (*state.config).clone()
    }
}
