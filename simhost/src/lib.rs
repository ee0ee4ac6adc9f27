//! `play-simhost`: a simulated Docker host for scale tests (issue #16).
//!
//! It speaks the part of the Docker Engine API that play's reconcilers use
//! (`docs/simhost.md` lists it), over a Unix socket, from in-memory state.
//! A local Playroom whose `docker_socket` is such a socket is driven by
//! play's own code, unchanged: the same dialer, HTTP client, bollard calls,
//! reconcilers and event watcher as against `dockerd`. What it leaves out is
//! everything a process would do: nothing runs, nothing listens, no file is
//! written.
//!
//! ```no_run
//! # async fn run() -> play_simhost::Result<()> {
//! use std::sync::Arc;
//! use play_simhost::{Latency, SimConfig, SimEngine};
//! let engine = Arc::new(SimEngine::new(SimConfig { images: vec!["busybox".into()], ..SimConfig::default() }));
//! play_simhost::serve_at("/tmp/host-0.sock".as_ref(), engine, Latency::default()).await
//! # }
//! ```

pub mod engine;
mod error;
pub mod filters;
mod routes;
mod server;

pub use engine::{Container, Counts, RunState, SimConfig, SimEngine, VolumeMount};
pub use error::{Error, Result};
pub use routes::API_VERSION;
pub use server::{Latency, MAX_BODY, bind, serve, serve_at};
