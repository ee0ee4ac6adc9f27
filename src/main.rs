//! `play`: the server, its reconcile loops and its command line.

mod admin;
mod admin_args;
mod allocator;
mod args;
mod config;
mod dispatch;
mod logging;
mod reconcile;
mod repositories;
mod serve;

use std::process::ExitCode;

fn main() -> ExitCode {
    args::Args::parse_and_run()
}
