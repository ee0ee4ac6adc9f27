//! `play`: the server, its reconcile loops and its command line.

mod admin;
mod args;
mod bootstrap;
mod config;
mod dispatch;
mod logging;
mod reconcile;
mod repositories;
mod serve;

use std::process::ExitCode;

/// mimalloc instead of the system allocator: the Compose engine and the API
/// allocate many small, short-lived objects (YAML trees, JSON bodies), and
/// glibc's malloc was a third of the engine's time (issue #16; the figures
/// are in BENCHMARKS.md, "Compose and template engine"). Built without
/// transparent huge pages (the `no_thp` feature, workspace Cargo.toml):
/// they more than doubled an idle process's resident memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    args::Args::parse_and_run()
}
