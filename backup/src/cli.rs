//! The command line of `play backup` and `play restore`: their arguments,
//! what they print, and a progress line on a terminal.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use crate::{Output, Result, Source, Target, schedule};

#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// The archive to write (`.tar.zst`, a new file), or `-` for standard
    /// output. Default: `play-backup-<UTC time>.tar.zst` here.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// play's own Git host's folder, as `play serve` has it (default
    /// `<data dir>/repositories`).
    #[arg(long, env = "PLAY_GIT_HOST_ROOT")]
    pub git_host_root: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The archive `play backup` wrote, or `-` for standard input.
    pub archive: PathBuf,
    /// play's own Git host's folder to restore the repositories into
    /// (default `<data dir>/repositories`).
    #[arg(long, env = "PLAY_GIT_HOST_ROOT")]
    pub git_host_root: Option<PathBuf>,
    /// How long the Playroom sweep keeps the containers of Playgrounds
    /// made after the backup (stopped, listed by `play orphans`) before it
    /// removes them as orphans.
    #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
    pub quarantine: std::time::Duration,
}

/// `play serve`'s backup settings.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeBackupArgs {
    /// Where backups go: with it set, `play serve` takes one before it
    /// migrates the database to a newer schema (docs/operations.md).
    #[arg(long, env = "PLAY_BACKUP_DIR")]
    pub backup_dir: Option<PathBuf>,
    /// When to take a backup into `--backup-dir`, as a cron pattern (5 fields, or 6 with seconds; UTC),
    /// e.g. `0 3 * * *`. Each one is verified before it counts; one replica takes each.
    #[arg(long, env = "PLAY_BACKUP_SCHEDULE")]
    pub backup_schedule: Option<String>,
    /// How many scheduled backups to keep (the newest, verified ones).
    #[arg(long, env = "PLAY_BACKUP_KEEP", default_value_t = 7)]
    pub backup_keep: usize,
}

impl ServeBackupArgs {
    /// The backup before a migration, when a folder is set and the
    /// database's schema is older than the binary's.
    pub async fn before_upgrade(&self, source: &Source) -> Result<()> {
        let Some(dir) = &self.backup_dir else { return Ok(()) };
        if let Some(path) = crate::before_upgrade(source, dir).await? {
            tracing::info!(path = %path.display(), "took a backup before migrating the database");
        }
        Ok(())
    }

    /// The scheduled backups' loop and its metrics, when a schedule is
    /// set; why not, when the settings do not go together.
    pub fn scheduled(
        &self,
        store: play_store::Store,
        source: Source,
        owner: String,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> std::result::Result<Option<(impl Future<Output = ()> + use<>, schedule::Metrics)>, String> {
        let Some(pattern) = &self.backup_schedule else { return Ok(None) };
        let dir = self.backup_dir.clone().ok_or("--backup-schedule needs --backup-dir (PLAY_BACKUP_DIR)")?;
        let schedule =
            schedule::Schedule::new(pattern, dir, self.backup_keep).map_err(|e| format!("--backup-schedule: {e}"))?;
        let metrics = schedule::Metrics::default();
        Ok(Some((schedule::run(store, source, schedule, metrics.clone(), owner, shutdown), metrics)))
    }
}

/// Where play keeps its data, as the binary resolved it.
#[derive(Debug, Clone)]
pub struct Paths {
    pub data_dir: PathBuf,
    pub database_url: String,
    pub master_key_file: PathBuf,
}

impl Paths {
    fn git_root(&self, given: Option<PathBuf>) -> PathBuf {
        given.unwrap_or_else(|| self.data_dir.join("repositories"))
    }

    /// What `play serve` backs up, its Git host at `git_root`.
    pub fn source(&self, git_root: PathBuf) -> Source {
        Source { database_url: self.database_url.clone(), data_dir: self.data_dir.clone(), git_root }
    }
}

/// `play backup`: the archive, then one line saying what it holds.
pub async fn backup(paths: Paths, args: BackupArgs) -> Result<()> {
    let output = match args.output {
        Some(path) if path.as_os_str() == "-" => Output::Stdout,
        Some(path) => Output::File(path),
        None => Output::File(PathBuf::from(format!(
            "play-backup-{}.tar.zst",
            play_model::time::now().format("%Y%m%dT%H%M%SZ")
        ))),
    };
    let source = Source {
        git_root: paths.git_root(args.git_host_root),
        data_dir: paths.data_dir,
        database_url: paths.database_url,
    };
    let line = Line::on_terminal("backup");
    let manifest = crate::backup(&source, &output, &|step| line.show(step)).await?;
    line.clear();
    let written = match &output {
        Output::File(path) => format!("{} ({} bytes)", path.display(), std::fs::metadata(path).map_or(0, |m| m.len())),
        Output::Stdout => "standard output".to_owned(),
    };
    eprintln!(
        "backup written to {written}: {} store at schema {}, {} rows, {} files",
        manifest.store.as_str(),
        manifest.schema_version.unwrap_or(0),
        manifest.counts.values().sum::<i64>(),
        manifest.files.len()
    );
    Ok(())
}

/// `play restore ARCHIVE`: the restore, then one line saying what came
/// back.
pub async fn restore(paths: Paths, args: RestoreArgs) -> Result<()> {
    let target = Target {
        git_root: paths.git_root(args.git_host_root),
        data_dir: paths.data_dir,
        database_url: paths.database_url,
        master_key_file: paths.master_key_file,
        quarantine: args.quarantine,
    };
    let line = Line::on_terminal("restore");
    let restored = if args.archive.as_os_str() == "-" {
        crate::restore(std::io::stdin(), &target, &|step| line.show(step)).await
    } else {
        let file =
            std::fs::File::open(&args.archive).map_err(crate::Error::io(format!("open {}", args.archive.display())))?;
        crate::restore(file, &target, &|step| line.show(step)).await
    }?;
    line.clear();
    let m = &restored.manifest;
    eprintln!(
        "restored the backup of {} (play {}, schema {}, installation {}) at schema {}; Playgrounds made after the \
         backup keep their containers on the Playrooms (docs/operations.md, \"Restoring a backup\")",
        m.created_at,
        m.play_version,
        m.schema_version.unwrap_or(0),
        m.installation,
        restored.schema
    );
    Ok(())
}

/// `play orphans`: the host objects the sweep quarantined after a
/// restore, one a line (tab-separated), and until when they are kept.
pub async fn orphans(paths: Paths) -> Result<()> {
    let store = play_store::Store::connect(&paths.database_url).await?;
    let (restore, listed) =
        (play_store::restores::latest(&store).await, play_store::restores::quarantined(&store).await);
    store.close().await;
    let Some(restore) = restore? else {
        eprintln!("this store was never restored from a backup: nothing is quarantined");
        return Ok(());
    };
    println!("PLAYROOM\tPLAYGROUND\tKIND\tNAME\tID\tSINCE");
    for o in listed? {
        let since = play_model::time::to_db(&o.quarantined_at);
        println!("{}\t{}\t{}\t{}\t{}\t{since}", o.playroom_id, o.playground_id, o.kind, o.name, o.object_id);
    }
    eprintln!(
        "kept (containers stopped) until {}, then removed by the sweep; start one again with `docker start`, or \
         remove it now with `docker rm`",
        play_model::time::to_db(&restore.quarantine_until)
    );
    Ok(())
}

/// One line on standard error, rewritten at each step; nothing when
/// standard error is not a terminal (a script, a log).
struct Line {
    what: &'static str,
    shown: bool,
}

impl Line {
    fn on_terminal(what: &'static str) -> Line {
        Line { what, shown: std::io::stderr().is_terminal() }
    }

    fn show(&self, step: &str) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{}: {step}", self.what);
            let _ = err.flush();
        }
    }

    fn clear(&self) {
        if self.shown {
            eprint!("\r\x1b[2K");
        }
    }
}
