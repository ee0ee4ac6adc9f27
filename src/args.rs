//! Command-line arguments. Every setting has a flag and a `PLAY_*`
//! environment variable. Defaults are read from the configuration type
//! that owns each setting (`ApiConfig`, `HostConfig`, the runtime's
//! `Config`, ...), never written again here.
//!
//! This module only describes the command line: it imports no module that
//! runs a command (that is `dispatch`, which reads these types), so the
//! modules that take their settings from here never import themselves
//! back through it.

use std::path::PathBuf;

use crate::admin_args::{AccountsCommand, CategoriesCommand, KeysCommand};
use clap::{Args as ClapArgs, Parser, Subcommand, ValueEnum};
use play_api::ApiConfig;
use play_cli::duration::HumanDuration;
use play_git::GitHostLimits;
use play_model::playground::Lifetimes;
use play_model::playground::sleep::{self, SleepAfter};
use play_model::webhook::delivery::retry_schedule_text;
use play_reconcilers::edge::EdgeConfig;
use play_reconcilers::host::HostConfig;
use play_reconcilers::playground::PlaygroundConfig;
use play_reconcilers::playroom::events::EventsConfig;
use play_reconcilers::playroom::sweep::SweepConfig;
use play_reconcilers::playzone::SyncConfig;
use play_reconcilers::runtime::Config as RuntimeConfig;
use play_reconcilers::webhooks::WebhooksConfig;

#[derive(Debug, Parser)]
#[command(name = "play", version, about = "Self-hosted environments from Docker Compose")]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub client: play_cli::ClientOpts,
    #[command(subcommand)]
    pub command: Command,
}

/// Settings every subcommand shares.
#[derive(Debug, Clone, ClapArgs)]
pub struct Common {
    /// Directory for the SQLite database, the master key, the admin token and `spool/` (build
    /// contexts on their way to a Playroom).
    #[arg(long, env = "PLAY_DATA_DIR", default_value = "./.play", global = true)]
    pub data_dir: PathBuf,
    /// `sqlite://PATH` or `postgres://...`; defaults to SQLite in the data directory.
    #[arg(long, env = "PLAY_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// File holding the 32-byte master key (hex) that derives the token pepper and encrypts stored
    /// secrets; created with mode 0600 when missing. Back it up: without it stored secrets cannot
    /// be read and every token stops working. Default `<data dir>/master.key`.
    #[arg(long, env = "PLAY_MASTER_KEY_FILE", global = true)]
    pub master_key_file: Option<PathBuf>,
    /// Log filter, e.g. `info` or `play=debug,tower_http=info`.
    #[arg(long = "log", env = "PLAY_LOG", default_value = "info", global = true)]
    pub log_filter: String,
    /// Log lines as text or JSON (one object per line).
    #[arg(long, env = "PLAY_LOG_FORMAT", value_enum, default_value = "text", global = true)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the API and the reconcile loops.
    Serve(Box<ServeArgs>),
    /// Apply database migrations and exit. A database whose schema is
    /// newer than this binary is refused, naming both versions.
    Migrate {
        /// List the migrations that would run, and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write one archive of the store, the Git host's repositories and a
    /// manifest, while `play serve` runs (docs/operations.md).
    Backup(play_backup::cli::BackupArgs),
    /// Restore a backup into an empty data directory (or an empty
    /// PostgreSQL database), checked whole first.
    Restore(play_backup::cli::RestoreArgs),
    /// List the host objects quarantined after a restore: those of
    /// Playgrounds made after the backup.
    Orphans,
    /// Manage accounts (offline, against the configured database).
    #[command(subcommand)]
    Accounts(AccountsCommand),
    /// Manage API keys (offline, against the configured database).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Manage template categories (offline, against the configured
    /// database); the API only reads them.
    #[command(subcommand)]
    Categories(CategoriesCommand),
    /// Client commands: they talk to a server over its HTTP API only.
    #[command(flatten)]
    Client(play_cli::ClientCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions { shell: play_cli::Shell },
}

#[derive(Debug, Clone, ClapArgs)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "PLAY_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Largest accepted request body, in bytes; larger ones get `413 PAYLOAD_TOO_LARGE`.
    #[arg(long, env = "PLAY_MAX_BODY_BYTES", default_value_t = ApiConfig::default().body_limit)]
    pub max_body_bytes: usize,
    /// Sustained requests per second allowed per API key.
    #[arg(long, env = "PLAY_RATE_LIMIT_PER_SECOND", default_value_t = ApiConfig::default().rate_limit_per_second)]
    pub rate_limit_per_second: u32,
    /// Burst allowed per API key above the sustained rate; beyond it `429 RATE_LIMITED` with
    /// `Retry-After`.
    #[arg(long, env = "PLAY_RATE_LIMIT_BURST", default_value_t = ApiConfig::default().rate_limit_burst)]
    pub rate_limit_burst: u32,
    /// Default per-account limits, `RESOURCE=N,...` (e.g. `api_keys=100`); beyond them `422
    /// QUOTA_EXCEEDED`.
    #[arg(long, env = "PLAY_QUOTAS", default_value = "")]
    pub quotas: String,
    /// Allow Playrooms on the Docker engine play itself runs on (`connection: local`), for single-machine
    /// installs. Tenants' containers then run next to play.
    #[arg(long, env = "PLAY_ALLOW_LOCAL_PLAYROOMS", default_value_t = false)]
    pub allow_local_playrooms: bool,
    /// How long `POST /api/webhook_endpoints/:id/test` waits for the first
    /// attempt's outcome before answering 202.
    #[arg(long, env = "PLAY_WEBHOOK_TEST_WAIT", default_value_t = HumanDuration(ApiConfig::default().webhook_test_wait))]
    pub webhook_test_wait: HumanDuration,
    /// How long a Playground's detail or status, once rendered, may be served again to its account
    /// (at most `5s`; `0s`: every read goes to the store). Writes made through this replica, and
    /// its reconcilers' status writes, are seen at once whatever the value; other replicas' writes
    /// within it; a request with `Cache-Control: no-cache` always reads the store.
    #[arg(long, env = "PLAY_READ_STALENESS", default_value_t = HumanDuration(ApiConfig::default().read_staleness), value_parser = parse_read_staleness)]
    pub read_staleness: HumanDuration,
    /// Accept `http://` webhook endpoint URLs. Off by default: deliveries
    /// and their signatures would cross the network in clear.
    #[arg(long, env = "PLAY_WEBHOOK_ALLOW_HTTP", default_value_t = false)]
    pub webhook_allow_http: bool,
    /// Hosts and networks webhook endpoints may name although they are loopback, private, link-local
    /// or metadata addresses, comma-separated (`127.0.0.1,10.0.0.0/8,hooks.internal`). Empty
    /// by default; checked again on every resolved address at send time.
    #[arg(long, env = "PLAY_WEBHOOK_ALLOWLIST", default_value = "")]
    pub webhook_allowlist: String,
    /// play's own Git host (the repositories facility without an external
    /// app): on for every account by default; `false` switches it off, and
    /// `/api/repos` answers `SCM_APP_REQUIRED`.
    #[arg(long, env = "PLAY_GIT_HOST", default_value_t = true, action = clap::ArgAction::Set)]
    pub git_host: bool,
    /// Which accounts may create repositories on play's own Git host and push to them: `all`, or
    /// `selected` (those switched on with `play accounts git-host NAME on`; switched off, an
    /// account still clones, fetches and deletes its repositories, but pushes are refused).
    #[arg(long, env = "PLAY_GIT_HOST_ACCOUNTS", value_enum, default_value_t = GitHostAccounts::All)]
    pub git_host_accounts: GitHostAccounts,
    #[command(flatten)]
    pub backup: play_backup::cli::ServeBackupArgs,
    /// Where play's own Git host keeps its bare repositories
    /// (`<owner>/<name>.git`); default `<data dir>/repositories`. With
    /// several replicas it must be one shared file system.
    #[arg(long, env = "PLAY_GIT_HOST_ROOT")]
    pub git_host_root: Option<std::path::PathBuf>,
    /// The bounds of play's own Git host (`PLAY_GIT_MAX_*`,
    /// `PLAY_GIT_QUEUE_WAIT`; docs/repositories.md, "Bounds").
    #[command(flatten)]
    pub git_limits: GitLimitsArgs,
    /// A file holding the GitHub App's webhook secret (as set on the app's
    /// settings page). Set, `POST /api/scm_installations/github/webhook`
    /// takes the app's deliveries; unset, it answers 404.
    #[arg(long, env = "PLAY_GITHUB_WEBHOOK_SECRET_FILE")]
    pub github_webhook_secret_file: Option<std::path::PathBuf>,
    /// The GitHub App accounts install (`docs/repositories.md`): its id,
    /// URL name, private key file, OAuth client id and a file holding its
    /// client secret. All five or none.
    #[command(flatten)]
    pub github: GithubAppArgs,
    /// The address people and `git` reach this installation at, for the URLs it shows
    /// (`clone_url`); default `http://` and the listen address. `https:` makes browser session
    /// cookies `Secure` and names them `__Host-play_session`.
    #[arg(long, env = "PLAY_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Accept `http://` repository URLs for Playzones. Off by default:
    /// access tokens and code would cross the network in clear.
    #[arg(long, env = "PLAY_REPOSITORY_ALLOW_HTTP", default_value_t = false)]
    pub repository_allow_http: bool,
    /// Hosts and networks Playzone repositories may be on although they are
    /// loopback, private or link-local, comma-separated
    /// (`git.internal,10.0.0.0/8`). Empty by default; checked again on
    /// every resolved address at connection time.
    #[arg(long, env = "PLAY_REPOSITORY_ALLOWLIST", default_value = "")]
    pub repository_allowlist: String,
    /// How often each Playzone is synced with its repository without being
    /// asked.
    #[arg(long, env = "PLAY_PLAYZONE_SYNC_INTERVAL", default_value_t = HumanDuration(SyncConfig::default().interval))]
    pub playzone_sync_interval: HumanDuration,
    /// How often each trigger compares its Playgrounds with its repository's branches (or open pull
    /// requests) without a wake, and the most its Playzone's last sync may be behind before it asks
    /// for another.
    #[arg(long, env = "PLAY_TRIGGER_INTERVAL", default_value = "60s")]
    pub trigger_interval: HumanDuration,
    /// Bound on one repository operation (list branches, fetch a commit,
    /// push a branch).
    #[arg(long, env = "PLAY_REPOSITORY_TIMEOUT", default_value = "60s")]
    pub repository_timeout: HumanDuration,
    /// Registries an untrusted Playroom may pull from (`image:` and a
    /// Dockerfile's `FROM`) although they are on loopback, private,
    /// link-local or metadata addresses: hosts and networks
    /// (`registry.internal,10.0.0.0/8`). Empty by default.
    #[arg(long, env = "PLAY_REGISTRY_ALLOWLIST", default_value = "")]
    pub registry_allowlist: String,
    /// The Docker network the `RUN` steps of builds join on every Playroom
    /// (it must exist there); empty: the engine's default bridge. Point it
    /// at a network whose egress the host's firewall limits (docs/hosts.md).
    #[arg(long, env = "PLAY_BUILD_NETWORK", default_value = "")]
    pub build_network: String,
    /// Bound on one image build of a service built from a Playzone
    /// (fetching its context included).
    #[arg(long, env = "PLAY_BUILD_TIMEOUT", default_value_t = HumanDuration(PlaygroundConfig::default().build_timeout))]
    pub build_timeout: HumanDuration,
    /// Builds and source fills that may hold repository files in memory at
    /// once in this replica, over all Playrooms.
    #[arg(long, env = "PLAY_BUILD_CONCURRENCY", default_value_t = PlaygroundConfig::default().slots.per_replica)]
    pub build_concurrency: usize,
    /// Of those, builds and source fills at once for one Playroom: a slow host or one tenant's
    /// burst holds no other Playroom back beyond it.
    #[arg(long, env = "PLAY_BUILDS_PER_PLAYROOM", default_value_t = PlaygroundConfig::default().slots.per_playroom)]
    pub builds_per_playroom: usize,
    /// Bytes of build contexts and source trees one account's builds and
    /// fills may hold at once in this replica (at least 512 MiB, one whole
    /// context); past it the next one waits for the others.
    #[arg(long, env = "PLAY_BUILD_BYTES_PER_ACCOUNT", default_value_t = PlaygroundConfig::default().slots.bytes_per_account)]
    pub build_bytes_per_account: u64,
    /// Most bytes one fetch from a repository may receive.
    #[arg(long, env = "PLAY_REPOSITORY_MAX_FETCH_BYTES", default_value_t = 512 * 1024 * 1024)]
    pub repository_max_fetch_bytes: u64,
    /// Most tree entries (files, folders, links; those `.dockerignore`
    /// leaves out included) one build context or folder read may visit.
    #[arg(long, env = "PLAY_REPOSITORY_MAX_TREE_ENTRIES", default_value_t = play_git::DEFAULT_MAX_TREE_ENTRIES)]
    pub repository_max_tree_entries: u64,
    /// Bound on one webhook delivery attempt (connect, send, read the answer).
    #[arg(long, env = "PLAY_WEBHOOK_TIMEOUT", default_value_t = HumanDuration(WebhooksConfig::default().timeout))]
    pub webhook_timeout: HumanDuration,
    /// How often the webhook dispatcher reads the events outbox and due
    /// retries without a wake: bounds the delay of a first delivery.
    #[arg(long, env = "PLAY_WEBHOOK_POLL_INTERVAL", default_value_t = HumanDuration(WebhooksConfig::default().poll_interval))]
    pub webhook_poll_interval: HumanDuration,
    /// Webhook delivery attempts in flight at once (per replica).
    #[arg(long, env = "PLAY_WEBHOOK_CONCURRENCY", default_value_t = WebhooksConfig::default().concurrency)]
    pub webhook_concurrency: usize,
    /// Webhook delivery attempts in flight at once per endpoint (per replica).
    #[arg(long, env = "PLAY_WEBHOOK_PER_ENDPOINT", default_value_t = WebhooksConfig::default().per_endpoint)]
    pub webhook_per_endpoint: usize,
    /// Delays before the 2nd, 3rd, ... attempt of a failed webhook delivery, comma-separated, each
    /// with 0-20% jitter added; when they are spent the delivery is abandoned.
    #[arg(long, env = "PLAY_WEBHOOK_RETRY_SCHEDULE", default_value_t = retry_schedule_text(&WebhooksConfig::default().retry_schedule))]
    pub webhook_retry_schedule: String,
    /// Lifetime of a new Playground.
    #[arg(long, env = "PLAY_PLAYGROUND_TTL", default_value_t = HumanDuration(Lifetimes::default().playground))]
    pub playground_ttl: HumanDuration,
    /// The default `sleep_after` of Playgrounds whose own setting and
    /// Playspec's are absent: how long without activity at the edge before
    /// they sleep (e.g. `30m`). Empty: such Playgrounds never sleep.
    #[arg(long, env = "PLAY_SLEEP_AFTER", default_value = "", value_parser = sleep::parse_default)]
    pub sleep_after: SleepAfter,
    /// Lifetime of a new job-mode Playground.
    #[arg(long, env = "PLAY_JOB_TTL", default_value_t = HumanDuration(Lifetimes::default().job))]
    pub job_ttl: HumanDuration,
    /// The shortest time a template's schedule may leave between two runs; a `cron` that fires more
    /// often is refused at validation.
    #[arg(long, env = "PLAY_SCHEDULE_MIN_INTERVAL", default_value_t = HumanDuration(ApiConfig::default().schedule_min_interval))]
    pub schedule_min_interval: HumanDuration,
    /// Bound on each call to a Playroom host (SSH connect, one Docker request).
    #[arg(long, env = "PLAY_HOST_TIMEOUT", default_value_t = HumanDuration(HostConfig::default().call_timeout))]
    pub host_timeout: HumanDuration,
    /// Objects reconciled at once, per reconciler.
    #[arg(long, env = "PLAY_RECONCILE_CONCURRENCY", default_value_t = RuntimeConfig::default().concurrency)]
    pub reconcile_concurrency: usize,
    /// Of those, Playground passes on one Playroom at once, so a slow or
    /// unreachable host holds only its own share.
    #[arg(long, env = "PLAY_RECONCILE_PER_PLAYROOM", default_value_t = RuntimeConfig::default().per_group)]
    pub reconcile_per_playroom: usize,
    /// How often every object is reconciled even without a change (the
    /// safety net for missed events); at most 60 s is sensible.
    #[arg(long, env = "PLAY_RESYNC_INTERVAL", default_value_t = HumanDuration(RuntimeConfig::default().resync_every))]
    pub resync_interval: HumanDuration,
    /// Resync visits per second at most, per reconciler: with more objects than fit in the interval
    /// at this rate, the interval stretches (10,000 Playgrounds: every 500 s). Changes and host
    /// events do not wait for it.
    #[arg(long, env = "PLAY_RESYNC_RATE", default_value_t = RuntimeConfig::default().resync_rate)]
    pub resync_rate: u32,
    /// Visits per second of the first resync after start-up (10,000 objects revisited within 40 s).
    #[arg(long, env = "PLAY_STARTUP_RESYNC_RATE", default_value_t = RuntimeConfig::default().startup_rate)]
    pub startup_resync_rate: u32,
    /// How often each Playroom is swept for host objects of Playgrounds
    /// that no longer exist.
    #[arg(long, env = "PLAY_SWEEP_INTERVAL", default_value_t = HumanDuration(SweepConfig::default().interval))]
    pub sweep_interval: HumanDuration,
    /// How often the list of Playrooms whose Docker events are followed is
    /// refreshed: it notices Playrooms with no Playground left and changed
    /// connection settings. A Playroom in use is watched from its first
    /// pass whatever this is.
    #[arg(long, env = "PLAY_EVENTS_REFRESH", default_value_t = HumanDuration(EventsConfig::default().refresh))]
    pub events_refresh: HumanDuration,
    /// How long a zero-downtime rollout keeps the old container running after
    /// the edge switched to the new one.
    #[arg(long, env = "PLAY_ROLLOUT_DRAIN", default_value_t = HumanDuration(PlaygroundConfig::default().drain))]
    pub rollout_drain: HumanDuration,
    /// The edge proxy's image (Caddy 2), run on every Playroom whose edge is on.
    #[arg(long, env = "PLAY_EDGE_IMAGE", default_value_t = EdgeConfig::default().image)]
    pub edge_image: String,
    /// The host directory under which each edge container's admin socket
    /// directory is made (bind-mounted; the SSH user must reach it).
    #[arg(long, env = "PLAY_EDGE_ADMIN_DIR", default_value_t = EdgeConfig::default().admin_dir)]
    pub edge_admin_dir: String,
    /// How often each Playroom's edge is looked at without a wake: bounds
    /// how long a removed edge container stays gone.
    #[arg(long, env = "PLAY_EDGE_CHECK_INTERVAL", default_value_t = HumanDuration(EdgeConfig::default().check_interval))]
    pub edge_check_interval: HumanDuration,
    /// The ACME directory URL certificates come from (default: Let's Encrypt).
    #[arg(long, env = "PLAY_EDGE_ACME_DIRECTORY")]
    pub edge_acme_directory: Option<String>,
    /// A PEM file whose roots the ACME server's TLS is trusted with (a
    /// private ACME server).
    #[arg(long, env = "PLAY_EDGE_ACME_ROOT")]
    pub edge_acme_root: Option<PathBuf>,
    /// How long a replica's claim on an object lasts without renewal (renewed every third of it
    /// while a pass runs): a killed replica's objects are attended by another within about this
    /// long, and so are the changes it had accepted (each replica writes a heartbeat every quarter
    /// of it; a survivor gives a pass to every Playground one silent this long reconciled last or
    /// left unconverged). Replicas' clocks must agree well within it.
    #[arg(long, env = "PLAY_LEASE_DURATION", default_value_t = HumanDuration(RuntimeConfig::default().lease_duration))]
    pub lease_duration: HumanDuration,
    /// This replica's lease owner id; default `local` on SQLite, random on PostgreSQL.
    #[arg(long, env = "PLAY_REPLICA_ID")]
    pub replica_id: Option<String>,
    /// How long in-flight requests may take to finish after SIGINT/SIGTERM.
    #[arg(long, env = "PLAY_SHUTDOWN_TIMEOUT", default_value_t = HumanDuration(std::time::Duration::from_secs(30)))]
    pub shutdown_timeout: HumanDuration,
}

/// Parses `--read-staleness`: a duration within the API's bound
/// (`play_api::recent::MAX_FRESH_FOR`).
fn parse_read_staleness(text: &str) -> anyhow::Result<HumanDuration> {
    let value: HumanDuration = text.parse()?;
    Ok(HumanDuration(play_api::recent::check_fresh_for(value.0).map_err(anyhow::Error::msg)?))
}

/// `PLAY_GIT_HOST_ACCOUNTS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GitHostAccounts {
    All,
    Selected,
}

/// The bounds of play's own Git host (see `play_git::limits`, where the
/// defaults live).
#[derive(Debug, Clone, ClapArgs)]
pub struct GitLimitsArgs {
    /// Most bytes of one request body to the Git host, counted after gzip
    /// inflation; a push's pack alone too (`receive.maxInputSize`).
    #[arg(long = "git-max-request-bytes", env = "PLAY_GIT_MAX_REQUEST_BYTES", default_value_t = GitHostLimits::default().max_request_bytes, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_request_bytes: u64,
    /// Most refs one push may create, move or delete.
    #[arg(long = "git-max-refs-per-push", env = "PLAY_GIT_MAX_REFS_PER_PUSH", default_value_t = GitHostLimits::default().max_refs_per_push, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_refs_per_push: usize,
    /// Most objects one push's pack may hold.
    #[arg(long = "git-max-objects-per-push", env = "PLAY_GIT_MAX_OBJECTS_PER_PUSH", default_value_t = GitHostLimits::default().max_objects_per_push, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_objects_per_push: u64,
    /// Most bytes an account's repositories may use on disk; pushes (Git's and the API's) are
    /// refused once they do.
    #[arg(long = "git-max-account-bytes", env = "PLAY_GIT_MAX_ACCOUNT_BYTES", default_value_t = GitHostLimits::default().max_account_bytes, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_account_bytes: u64,
    /// Most Git processes this replica runs at once (clones, fetches, pushes, anonymous ones
    /// included).
    #[arg(long = "git-max-processes", env = "PLAY_GIT_MAX_PROCESSES", default_value_t = GitHostLimits::default().max_processes, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_processes: usize,
    /// How long a Git request waits for a free process before `503` with `Retry-After`.
    #[arg(long = "git-queue-wait", env = "PLAY_GIT_QUEUE_WAIT", default_value_t = HumanDuration(GitHostLimits::default().queue_wait))]
    pub queue_wait: HumanDuration,
}

impl GitLimitsArgs {
    pub fn limits(&self) -> GitHostLimits {
        GitHostLimits {
            max_request_bytes: self.max_request_bytes,
            max_refs_per_push: self.max_refs_per_push,
            max_objects_per_push: self.max_objects_per_push,
            max_account_bytes: self.max_account_bytes,
            max_processes: self.max_processes,
            queue_wait: self.queue_wait.into(),
        }
    }
}

/// The operator's GitHub App (see `ServeArgs::github`).
#[derive(Debug, Clone, ClapArgs)]
pub struct GithubAppArgs {
    /// The GitHub App accounts install (docs/repositories.md, "Operator settings"): its id (or
    /// client id), as on its settings page. The app's five settings are given all or none.
    #[arg(long = "github-app-id", env = "PLAY_GITHUB_APP_ID")]
    pub app_id: Option<String>,
    /// The app's URL name (`https://github.com/apps/<slug>`).
    #[arg(long = "github-app-slug", env = "PLAY_GITHUB_APP_SLUG")]
    pub slug: Option<String>,
    /// The app's private key, the PEM file GitHub generated.
    #[arg(long = "github-app-key-file", env = "PLAY_GITHUB_APP_KEY_FILE")]
    pub key_file: Option<std::path::PathBuf>,
    /// The app's OAuth client id.
    #[arg(long = "github-client-id", env = "PLAY_GITHUB_CLIENT_ID")]
    pub client_id: Option<String>,
    /// A file holding the app's OAuth client secret.
    #[arg(long = "github-client-secret-file", env = "PLAY_GITHUB_CLIENT_SECRET_FILE")]
    pub client_secret_file: Option<std::path::PathBuf>,
    /// GitHub's REST API (GitHub Enterprise Server: `https://HOST/api/v3`).
    #[arg(long = "github-api-url", env = "PLAY_GITHUB_API_URL", default_value = "https://api.github.com")]
    pub api_url: String,
    /// GitHub's web address (GitHub Enterprise Server: `https://HOST`).
    #[arg(long = "github-web-url", env = "PLAY_GITHUB_WEB_URL", default_value = "https://github.com")]
    pub web_url: String,
}

impl GithubAppArgs {
    /// The settings as `play_github` reads the app from them.
    pub fn settings(&self) -> play_github::AppSettings {
        play_github::AppSettings {
            app_id: self.app_id.clone(),
            slug: self.slug.clone(),
            key_file: self.key_file.clone(),
            client_id: self.client_id.clone(),
            client_secret_file: self.client_secret_file.clone(),
            api_url: self.api_url.clone(),
            web_url: self.web_url.clone(),
        }
    }
}
