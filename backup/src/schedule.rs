//! Scheduled backups (issue #53, item 2): `PLAY_BACKUP_SCHEDULE` (a cron
//! pattern, read as schedules read theirs), into `PLAY_BACKUP_DIR`, the
//! newest `PLAY_BACKUP_KEEP` verified ones kept.
//!
//! # Guarantees
//! - **One replica per fire time.** At each fire time every replica asks
//!   for the `backup` lease until the next fire time; the one that gets it
//!   takes the backup, the others skip that time. A replica that dies
//!   mid-backup loses that time's backup; the next time is taken as usual.
//! - **Only a verified backup counts.** Each archive is read back whole
//!   and checked ([`crate::verify`]) before it is kept; one that fails is
//!   removed, counted in `play_backup_failures_total`, and logged as an
//!   error. `play_backup_last_success_timestamp_seconds` moves only with a
//!   verified backup, so an alert on its age sees every kind of failure.
//! - **Retention never removes the last good one first.** The oldest
//!   scheduled archives beyond `keep` are removed only after a new one was
//!   verified; archives this loop did not write (another name) are never
//!   touched.
//! - A failure is also the event `system.backup.failed` of the operator's
//!   account (webhooks can subscribe to it), with the fire time and why.
//! - A missed fire time (play was down) is not caught up: the next one is
//!   taken.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::time::Duration;

use croner::Cron;
use play_model::model::event::{Actor, NewEvent};
use play_model::time::{self, Timestamp};
use play_store::{Store, leases};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio_util::sync::CancellationToken;

use crate::{Error, Output, Result, Source};

/// The lease that makes one replica take each fire time's backup.
const LEASE: &str = "backup";

/// Names of the archives this loop writes (and alone removes).
const PREFIX: &str = "play-backup-scheduled-";

/// When and where backups are taken.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub cron: Cron,
    pub dir: PathBuf,
    /// How many verified archives are kept (at least 1).
    pub keep: usize,
}

impl Schedule {
    /// The schedule of `pattern` into `dir`; why not, when it is not one.
    pub fn new(pattern: &str, dir: PathBuf, keep: usize) -> std::result::Result<Schedule, String> {
        let cron = play_model::schedule::parse_cron(pattern)?;
        if keep == 0 {
            return Err("keep at least 1 backup".into());
        }
        Ok(Schedule { cron, dir, keep })
    }

    /// The first fire time strictly after `t` (UTC, whole seconds).
    fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let t = time::truncate(t);
        self.cron.find_next_occurrence(&t, false).ok()
    }
}

/// What the loop exports (registered by the binary with play's metrics).
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    /// `play_backup_last_success_timestamp_seconds`.
    pub last_success: Gauge<i64, AtomicI64>,
    /// `play_backup_duration_seconds`: the last verified backup's, taking
    /// and checking.
    pub duration: Gauge<f64, AtomicU64>,
    /// `play_backup_bytes`: the last verified archive's size.
    pub bytes: Gauge<i64, AtomicI64>,
    /// `play_backup_failures_total`.
    pub failures: Counter,
}

/// Takes `source`'s backups on `schedule` until `shutdown`.
pub async fn run(
    store: Store,
    source: Source,
    schedule: Schedule,
    metrics: Metrics,
    owner: String,
    shutdown: CancellationToken,
) {
    let mut after = time::now();
    while let Some(at) = schedule.next_after(after) {
        let wait = (at - time::now()).to_std().unwrap_or(Duration::ZERO);
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        after = at;
        // Held until the next fire time: no other replica takes this one.
        let hold =
            schedule.next_after(at).and_then(|next| (next - at).to_std().ok()).unwrap_or(Duration::from_secs(60));
        match leases::claim(&store, LEASE, 0, &owner, time::now(), hold).await {
            Ok(Some(_)) => {}
            Ok(None) => continue,
            Err(e) => {
                tracing::error!(error = %e, "scheduled backup: the lease could not be asked for; skipping this time");
                metrics.failures.inc();
                continue;
            }
        }
        let started = std::time::Instant::now();
        match take(&source, &schedule, at).await {
            Ok((path, bytes)) => {
                metrics.last_success.set(time::now().timestamp());
                metrics.duration.set(started.elapsed().as_secs_f64());
                metrics.bytes.set(i64::try_from(bytes).unwrap_or(i64::MAX));
                tracing::info!(path = %path.display(), bytes, "scheduled backup taken and verified");
            }
            Err(e) => {
                metrics.failures.inc();
                tracing::error!(error = %e, "scheduled backup failed; no backup counts for this time");
                report_failure(&store, at, &e).await;
            }
        }
    }
}

/// Records `system.backup.failed` in the operator's account (`default`,
/// made at the first start), where its webhooks may subscribe to it; no
/// tenant's account ever sees it. Nothing when that account is gone.
async fn report_failure(store: &Store, at: Timestamp, error: &Error) {
    let Ok(account) = play_store::accounts::find_account_by_name(store, play_store::accounts::DEFAULT_ACCOUNT).await
    else {
        return;
    };
    let metadata = serde_json::json!({"scheduled_for": time::to_db(&at), "error": error.to_string()});
    let event = NewEvent::new(account.id, "system", 0, "backup.failed").actor(Actor::System).metadata(metadata);
    if let Err(e) = play_store::events::record_alone(store, event).await {
        tracing::error!(error = %e, "scheduled backup: the failure's event could not be recorded");
    }
}

/// One scheduled backup: taken, verified, then the oldest beyond `keep`
/// removed. Answers the archive and its size.
async fn take(source: &Source, schedule: &Schedule, at: Timestamp) -> Result<(PathBuf, u64)> {
    std::fs::create_dir_all(&schedule.dir).map_err(Error::io(format!("create {}", schedule.dir.display())))?;
    let path = schedule.dir.join(format!("{PREFIX}{}.tar.zst", at.format("%Y%m%dT%H%M%SZ")));
    crate::backup(source, &Output::File(path.clone()), &|_| {}).await?;
    let scratch = tempfile::Builder::new()
        .prefix(".verify-")
        .tempdir_in(&source.data_dir)
        .map_err(Error::io(format!("make a temporary folder in {}", source.data_dir.display())))?;
    if let Err(e) = crate::verify::verify(&path, scratch.path()).await {
        let _ = std::fs::remove_file(&path);
        return Err(Error::Damaged(format!("the backup {} did not verify, and was removed: {e}", path.display())));
    }
    let bytes = std::fs::metadata(&path).map_err(Error::io(format!("stat {}", path.display())))?.len();
    prune(&schedule.dir, schedule.keep)?;
    Ok((path, bytes))
}

/// Removes the oldest scheduled archives in `dir` beyond the newest `keep`.
fn prune(dir: &Path, keep: usize) -> Result<()> {
    let mut ours: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(Error::io(format!("list {}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(".tar.zst"))
        })
        .collect();
    // The names hold the fire time: their order is the time order.
    ours.sort();
    let extra = ours.len().saturating_sub(keep);
    for old in &ours[..extra] {
        std::fs::remove_file(old).map_err(Error::io(format!("remove {}", old.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_removes_only_the_oldest_scheduled_archives() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "play-backup-scheduled-20261201T000000Z.tar.zst",
            "play-backup-scheduled-20261202T000000Z.tar.zst",
            "play-backup-scheduled-20261203T000000Z.tar.zst",
            "play-before-migration-0044-to-0045-20261130T000000Z.tar.zst",
            "mine.tar.zst",
        ] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        prune(dir.path(), 2).unwrap();
        let mut left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(
            left,
            [
                "mine.tar.zst",
                "play-backup-scheduled-20261202T000000Z.tar.zst",
                "play-backup-scheduled-20261203T000000Z.tar.zst",
                "play-before-migration-0044-to-0045-20261130T000000Z.tar.zst",
            ]
        );
    }

    #[test]
    fn a_schedule_is_a_cron_pattern_and_keeps_at_least_one() {
        assert!(Schedule::new("0 3 * * *", PathBuf::from("/b"), 7).is_ok());
        assert!(Schedule::new("every night", PathBuf::from("/b"), 7).unwrap_err().contains("fields"));
        assert!(Schedule::new("0 3 * * *", PathBuf::from("/b"), 0).is_err());
        let every_second = Schedule::new("* * * * * *", PathBuf::from("/b"), 1).unwrap();
        let t = time::now();
        let next = every_second.next_after(t).unwrap();
        assert!(next > t && (next - t).num_milliseconds() <= 1000);
    }
}
