//! The reconcile loops `play serve` runs: their settings from the command
//! line. The loops themselves, and how each is woken, are listed once in
//! `play_reconcilers::loops`.

use play_model::webhook::UrlPolicy;
use play_reconcilers::edge::EdgeConfig;
pub use play_reconcilers::loops::{Loops, Shared, start_all};
use play_reconcilers::playground::PlaygroundConfig;
use play_reconcilers::playzone::SyncConfig;
use play_reconcilers::runtime::Config;
use play_reconcilers::webhooks::WebhooksConfig;

use crate::args::ServeArgs;

/// The loops' settings from the command line.
pub fn config(args: &ServeArgs) -> anyhow::Result<Loops> {
    Ok(Loops {
        runtime: Config {
            concurrency: args.reconcile_concurrency.max(1),
            per_group: args.reconcile_per_playroom.max(1),
            resync_every: args.resync_interval.into(),
            resync_rate: args.resync_rate.max(1),
            startup_rate: args.startup_resync_rate.max(1),
            lease_duration: args.lease_duration.into(),
            ..Config::default()
        },
        sweep_interval: args.sweep_interval.into(),
        events_refresh: args.events_refresh.into(),
        playground: PlaygroundConfig {
            drain: args.rollout_drain.into(),
            build_timeout: args.build_timeout.into(),
            slots: play_reconcilers::playground::SlotsConfig {
                per_replica: args.build_concurrency.max(1),
                per_playroom: args.builds_per_playroom.max(1),
                bytes_per_account: args.build_bytes_per_account,
            },
            registry_policy: UrlPolicy::from_settings(true, &args.registry_allowlist)
                .map_err(|e| anyhow::anyhow!("--registry-allowlist: {e}"))?,
            build_network: Some(args.build_network.trim().to_owned()).filter(|n| !n.is_empty()),
            ..PlaygroundConfig::default()
        },
        edge: EdgeConfig {
            image: args.edge_image.clone(),
            admin_dir: args.edge_admin_dir.clone(),
            check_interval: args.edge_check_interval.into(),
            acme_directory: args.edge_acme_directory.clone(),
            acme_root: args.edge_acme_root.clone(),
            ..EdgeConfig::default()
        },
        playzone_sync: SyncConfig { interval: args.playzone_sync_interval.into(), ..SyncConfig::default() },
        // The bounds of a launch are the API's: `serve` sets them.
        schedules: play_reconcilers::schedule::ScheduleLoopConfig::default(),
        triggers: play_reconcilers::trigger::TriggerLoopConfig {
            interval: args.trigger_interval.into(),
            ..Default::default()
        },
        webhooks: WebhooksConfig {
            timeout: args.webhook_timeout.into(),
            poll_interval: args.webhook_poll_interval.into(),
            concurrency: args.webhook_concurrency.max(1),
            per_endpoint: args.webhook_per_endpoint.max(1),
            retry_schedule: play_model::webhook::delivery::parse_retry_schedule(&args.webhook_retry_schedule)
                .map_err(|e| anyhow::anyhow!("--webhook-retry-schedule: {e}"))?,
            ..WebhooksConfig::default()
        },
    })
}
