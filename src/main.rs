//! `play`: the server, its reconcile loops and its command line.

mod admin;
mod args;
mod bootstrap;
mod cli;
mod config;
mod duration;
mod logging;
mod reconcile;
mod repositories;
mod serve;

use std::process::ExitCode;

fn main() -> ExitCode {
    args::Args::parse_and_run()
}
