//! play's flows: launch, Playground operations, linking Playzones, the
//! repositories facility, the checks of what play accepts (`input`), and
//! the seams the loops and the API share (wakes, CPU offloading, metrics).
//! The records and rules are `play-model`; the queries are `play-store`,
//! whose error is this crate's.
//!
//! This crate never talks to Docker or SSH and never serves HTTP.

pub mod admin_keys;
pub mod apply;
pub mod cpu;
pub mod input;
pub mod master_key;
pub mod metrics;
pub mod offload;
pub mod playground;
pub mod playzone;
pub mod scm;
pub mod wake;

pub use play_store::{Error, Result};
