//! `play serve`: the API and (as they arrive) the reconcile loops in one
//! process, stopped gracefully on SIGINT or SIGTERM.
//!
//! Shutdown: the listener stops accepting, in-flight requests get up to
//! `--shutdown-timeout` to finish, background tasks are cancelled at their
//! next safe point, then the store is closed.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use play_api::{ApiConfig, AppState};
use play_core::metrics::Metrics;
use play_core::wake::ChannelWaker;
use play_model::model::quota::QuotaLimits;
use play_model::playground::{LifePolicy, Lifetimes};
use play_model::playzone::RepositoryPolicy;
use play_model::webhook::UrlPolicy;
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::args::ServeArgs;
use crate::config::Settings;
use crate::reconcile;

pub async fn run(settings: Settings, args: ServeArgs) -> anyhow::Result<()> {
    let quotas = QuotaLimits::parse(&args.quotas).map_err(|e| anyhow::anyhow!("--quotas: {e}"))?;
    let backup_source = settings.paths().source(crate::repositories::git_host_root(&settings, &args));
    args.backup.before_upgrade(&backup_source).await.context("the backup before migrating failed")?;
    let store = settings.open_store().await?;
    let master_key = play_core::master_key::checked(&store, &settings.master_key_file).await?;
    let pepper = master_key.token_pepper();
    let first_start = play_core::admin_keys::ensure_admin_key(&store, &pepper, &settings.data_dir).await?;
    let mut link = None;
    if let Some(admin) = &first_start {
        tracing::info!(path = %admin.path.display(), "no API key existed: created an admin key; its token is in this file");
        link = play_core::admin_keys::sign_in_link(&store, &pepper, admin).await?;
    }
    let webhook_urls = UrlPolicy::from_settings(args.webhook_allow_http, &args.webhook_allowlist)
        .map_err(|e| anyhow::anyhow!("--webhook-allowlist: {e}"))?;
    let repository_policy = RepositoryPolicy {
        urls: UrlPolicy::from_settings(args.repository_allow_http, &args.repository_allowlist)
            .map_err(|e| anyhow::anyhow!("--repository-allowlist: {e}"))?,
    };
    let github_app = crate::repositories::github_app(&args, &repository_policy)?;
    let host_keys = Arc::new(play_core::playzone::host_keys::PinnedHostKeys::new(store.clone()));
    let repositories =
        crate::repositories::gateway(&settings, &args, &repository_policy, github_app.clone(), host_keys)?;
    // The installation's one LifePolicy: the API and the loops are both
    // given it.
    let life = LifePolicy {
        lifetimes: Lifetimes { playground: args.playground_ttl.into(), job: args.job_ttl.into() },
        sleep_after: args.sleep_after.duration(),
    };
    let config = ApiConfig {
        body_limit: args.max_body_bytes,
        rate_limit_per_second: args.rate_limit_per_second,
        rate_limit_burst: args.rate_limit_burst,
        quotas,
        allow_local_playrooms: args.allow_local_playrooms,
        life,
        webhook_urls: webhook_urls.clone(),
        webhook_test_wait: args.webhook_test_wait.into(),
        repository_policy,
        read_staleness: args.read_staleness.into(),
        github_webhook_secret: crate::repositories::github_webhook_secret(&args)?,
        secure_cookies: args.public_url.as_deref().is_some_and(|url| url.starts_with("https://")),
        schedule_min_interval: args.schedule_min_interval.into(),
    };
    let metrics = Arc::new(Metrics::new());
    metrics.register_store(&store);
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(args.host_timeout.into()), metrics.clone())
        .with_pins(store.clone())
        .reporting_reachability(store.clone());
    // Reconcilers subscribe to this waker by their KIND (wake::Kind); the
    // store's commits deliver the wakes their writes noted to it
    // (`play_store::wakes`), before any loop or request writes.
    let waker = ChannelWaker::new();
    store.set_waker(std::sync::Arc::new(waker.clone()));
    let shared = reconcile::Shared {
        store: store.clone(),
        secrets: master_key.secret_box(),
        gateway: gateway.clone(),
        metrics: metrics.clone(),
        waker: waker.clone(),
        webhook_urls,
        repositories: repositories.clone(),
        life,
    };
    let state = AppState::new(store.clone(), config, pepper, master_key.secret_box(), metrics, Arc::new(gateway))
        .with_repositories(repositories);
    let state = match crate::repositories::source_host(&settings, &args)? {
        Some(host) => state.with_source_host(host),
        None => state,
    };
    let mut state = match github_app {
        Some(app) => state.with_github_app(app),
        None => state,
    };
    state.shared_mut().hosts.builtin_selected = args.git_host_accounts == crate::args::GitHostAccounts::Selected;
    let shutdown = CancellationToken::new();
    let background = tokio_util::task::TaskTracker::new();
    let (pruned, stop) = (state.clone(), shutdown.clone());
    background.spawn(async move { pruned.prune_rate_limits(stop).await });
    let mut loops = reconcile::config(&args)?;
    // Build contexts are spooled on the data directory's disk, not in a
    // temporary directory that may be memory (tmpfs).
    let spool = settings.data_dir.join("spool");
    std::fs::create_dir_all(&spool).with_context(|| format!("cannot create {}", spool.display()))?;
    play_reconcilers::playground::remove_dead_spools(&spool);
    loops.playground.spool_dir = spool;
    let api = &state.config;
    loops.schedules.launch = play_reconcilers::launching::LaunchBounds {
        quotas: api.quotas.clone(),
        repository_policy: api.repository_policy.clone(),
        hosts: state.hosts.clone(),
    };
    loops.triggers.launch = loops.schedules.launch.clone();
    let grace = loops.runtime.shutdown_grace;
    let owner = play_reconcilers::runtime::lease_owner(args.replica_id.as_deref(), store.backend());
    reconcile::start_all(&shared, &loops, &owner, &shutdown, &background)?;
    let scheduled = args.backup.scheduled(store.clone(), backup_source, owner.clone(), shutdown.clone());
    if let Some((run, taken)) = scheduled.map_err(|e| anyhow::anyhow!(e))? {
        register_backup_metrics(&shared.metrics, &taken);
        background.spawn(run);
    }

    let listener =
        TcpListener::bind(&args.listen).await.with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    tracing::info!(%address, store = store.backend().as_str(), "play is serving");
    if let Some(secret) = link {
        let public = args.public_url.clone().unwrap_or_else(|| format!("http://{address}"));
        println!("\nOpen the dashboard (this link works once, within ten minutes):");
        println!("  {}/sign-in/link/{secret}\n", public.trim_end_matches('/'));
    }

    let signal = shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down: finishing in-flight requests");
        signal.cancel();
    });
    // The client's address: sign-in attempts are limited per address.
    let app = play_api::router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    let server = axum::serve(listener, app).with_graceful_shutdown(shutdown.clone().cancelled_owned());
    let drained = async {
        shutdown.cancelled().await;
        tokio::time::sleep(args.shutdown_timeout.into()).await;
    };
    // Start-up's freed pages back to the system once it settles. Here, not
    // in a task: this future is polled on the main thread (`block_on`),
    // which ran start-up, and `mi_collect` frees the calling thread's pages
    // (and every thread's delayed ones).
    let settled = async {
        tokio::time::sleep(crate::allocator::START_UP_SETTLES).await;
        crate::allocator::return_freed_pages();
        std::future::pending::<()>().await;
    };
    tokio::select! {
        result = server => result.context("server failed")?,
        () = settled => {}
        () = drained => tracing::warn!(timeout = ?args.shutdown_timeout, "in-flight requests did not finish in time"),
    }
    background.close();
    if tokio::time::timeout(grace + Duration::from_secs(5), background.wait()).await.is_err() {
        tracing::warn!("background tasks did not stop in time");
    }
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

fn register_backup_metrics(metrics: &Metrics, taken: &play_backup::schedule::Metrics) {
    let success = "When the last verified scheduled backup finished (Unix seconds; 0: none since start)";
    metrics.register("backup_last_success_timestamp_seconds", success, taken.last_success.clone());
    metrics.register(
        "backup_duration_seconds",
        "The last verified backup's time to take and check",
        taken.duration.clone(),
    );
    metrics.register("backup_bytes", "The last verified backup's size", taken.bytes.clone());
    metrics.register("backup_failures", "Scheduled backups that failed or did not verify", taken.failures.clone());
}

async fn wait_for_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
