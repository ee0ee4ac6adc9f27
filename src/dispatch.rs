//! Runs the parsed command line: the server commands here, the client
//! commands in `play-cli`. The only place that builds the async runtime.

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Args, Command};
use crate::{admin, config, logging, serve};

impl Args {
    /// Parses the command line, runs the command and maps the outcome to an
    /// exit code. The only place that builds the runtime.
    pub fn parse_and_run() -> ExitCode {
        let args = <Args as Parser>::parse();
        if let Command::Completions { shell } = args.command {
            play_cli::print_completions(shell, &mut <Args as clap::CommandFactory>::command());
            return ExitCode::SUCCESS;
        }
        // Client commands print for people and scripts; the server's logs
        // would only be noise there.
        let client = matches!(args.command, Command::Client(_));
        if !client {
            logging::init(&args.common.log_filter, args.common.log_format);
        }
        let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("play: cannot start the async runtime: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Command::Client(command) = args.command {
            return runtime.block_on(play_cli::run(args.client, command));
        }
        match runtime.block_on(args.run()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("play: {e:#}");
                ExitCode::FAILURE
            }
        }
    }

    async fn run(self) -> anyhow::Result<()> {
        let Args { common, command, client: _ } = self;
        let settings = config::Settings::resolve(&common)?;
        match command {
            Command::Serve(serve_args) => serve::run(settings, *serve_args).await,
            Command::Migrate { dry_run: true } => config::dry_run_migrations(&settings).await,
            Command::Migrate { dry_run: false } => {
                let store = settings.open_store().await?;
                store.close().await;
                eprintln!("migrations applied ({})", store.backend().as_str());
                Ok(())
            }
            Command::Backup(args) => Ok(play_backup::cli::backup(settings.paths(), args).await?),
            Command::Restore(args) => Ok(play_backup::cli::restore(settings.paths(), args).await?),
            Command::Orphans => Ok(play_backup::cli::orphans(settings.paths()).await?),
            Command::Accounts(cmd) => admin::accounts(settings, cmd).await,
            Command::Categories(cmd) => admin::categories(settings, cmd).await,
            Command::Keys(cmd) => admin::keys(settings, cmd).await,
            // Handled before the runtime starts (`parse_and_run`).
            Command::Client(_) | Command::Completions { .. } => Ok(()),
        }
    }
}
