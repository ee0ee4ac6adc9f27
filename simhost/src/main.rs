//! `play-simhost --dir DIR --hosts N`: N simulated Docker hosts, one socket
//! each (`DIR/host-<i>.sock`), on one tokio runtime, so that 200 hosts cost
//! one process. Point local Playrooms' `docker_socket` at them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use play_simhost::{Latency, SimConfig, SimEngine};

#[derive(Debug, Parser)]
#[command(name = "play-simhost", about = "Simulated Docker hosts on Unix sockets (see docs/simhost.md)")]
struct Args {
    /// The directory of the sockets (created when missing).
    #[arg(long, env = "PLAY_SIMHOST_DIR")]
    dir: PathBuf,
    /// How many hosts: sockets host-0.sock .. host-<N-1>.sock.
    #[arg(long, default_value_t = 1)]
    hosts: usize,
    /// The delay before each read (GET) answer, in milliseconds.
    #[arg(long, default_value_t = 2)]
    read_latency_ms: u64,
    /// The delay before each write (create, start, stop, remove, pull), in milliseconds.
    #[arg(long, default_value_t = 20)]
    write_latency_ms: u64,
    /// Images every host has from the start, comma-separated.
    #[arg(long, value_delimiter = ',')]
    images: Vec<String>,
    /// Refuse pulls of images that are not preloaded.
    #[arg(long)]
    no_pull: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    let args = Args::parse();
    std::fs::create_dir_all(&args.dir).with_context(|| format!("create {}", args.dir.display()))?;
    let latency = Latency {
        read: Duration::from_millis(args.read_latency_ms),
        write: Duration::from_millis(args.write_latency_ms),
    };
    let mut hosts = tokio::task::JoinSet::new();
    for i in 0..args.hosts {
        let path = args.dir.join(format!("host-{i}.sock"));
        let config = SimConfig { images: args.images.clone(), pullable: !args.no_pull, name: format!("simhost-{i}") };
        let listener = play_simhost::bind(&path)?;
        hosts.spawn(play_simhost::serve(listener, Arc::new(SimEngine::new(config)), latency));
    }
    println!("play-simhost: {} hosts in {}", args.hosts, args.dir.display());
    tokio::select! {
        _ = tokio::signal::ctrl_c() => Ok(()),
        Some(ended) = hosts.join_next() => Err(anyhow::anyhow!("a simulated host stopped: {:?}", ended?)),
    }
}
