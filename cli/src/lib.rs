//! The client side of `play`: commands that talk to a play server over its
//! HTTP API only (`docs/cli.md`). Nothing here opens the database or the
//! data directory, and the crate depends on no server crate (play-api,
//! play-reconcilers, sqlx: `tests/e2e/dependency_directions.rs`); the status
//! words it judges come from `play-states`. The `play` binary parses
//! [`ClientOpts`] and [`ClientCommand`] beside its server commands and
//! hands them to [`run`].
//!
//! Commands return `anyhow::Error`s carrying the typed errors of
//! [`exit`], which decide the exit code; [`run`] prints the error once.

mod api_error;
mod apply;
mod apply_set;
pub mod args;
mod client;
mod context;
mod delete;
mod describe;
mod diff_lines;
pub mod duration;
mod exit;
mod get;
mod kinds;
mod launch;
mod login;
mod logs;
mod lookup;
mod manifest;
mod output;
mod power;
mod repo;
mod sse;
mod wait;

use std::process::ExitCode;

pub use args::{ClientCommand, ClientOpts};
pub use clap_complete::Shell;

use client::Client;
use context::ConfigFile;

/// A client for the selected context, `PLAY_URL` and `PLAY_TOKEN` applied.
fn connect(opts: &ClientOpts) -> anyhow::Result<Client> {
    let file = ConfigFile::load(&context::default_path()?)?;
    let target =
        file.target(opts.context.as_deref(), std::env::var("PLAY_URL").ok(), std::env::var("PLAY_TOKEN").ok())?;
    Client::new(&target)
}

/// Writes the completion script of `command` (the whole `play` command
/// line, server commands included) for `shell` to stdout.
pub fn print_completions(shell: Shell, command: &mut clap::Command) {
    clap_complete::generate(shell, command, "play", &mut std::io::stdout());
}

/// Runs a client command; prints its error, if any, and maps it to the
/// exit code `docs/cli.md` documents.
pub async fn run(opts: ClientOpts, command: ClientCommand) -> ExitCode {
    match dispatch(opts, command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => ExitCode::from(exit::report(&e)),
    }
}

async fn dispatch(opts: ClientOpts, command: ClientCommand) -> anyhow::Result<()> {
    use ClientCommand as C;
    match command {
        C::Login(args) => login::login(&opts, args).await,
        C::Config(command) => login::config(command),
        command => {
            let client = connect(&opts)?;
            match command {
                C::Apply(args) => apply::apply(&client, args).await,
                C::Diff(args) => apply::diff(&client, args).await,
                C::Get(args) => get::get(&client, args).await,
                C::Describe(args) => describe::describe(&client, args).await,
                C::Delete(args) => delete::delete(&client, args).await,
                C::Logs(args) => logs::logs(&client, args).await,
                C::Wait(args) => wait::wait(&client, args).await,
                C::Launch(args) => launch::launch(&client, args).await,
                C::Extend(args) => launch::extend(&client, args).await,
                C::Sleep(args) => power::power(&client, args, power::Way::Sleep).await,
                C::Wake(args) => power::power(&client, args, power::Way::Wake).await,
                C::Repo(command) => repo::repo(&client, command).await,
                C::Login(_) | C::Config(_) => Ok(()),
            }
        }
    }
}
