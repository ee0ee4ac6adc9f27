//! play's domain crate: the types every other crate speaks, the Compose and
//! template engine, the store, secrets and the `HostGateway` and
//! `RepositoryGateway` seams.
//!
//! This crate never talks to Docker or SSH and never serves HTTP: it is the
//! part of play that can be tested with nothing running.

pub mod apply;
pub mod build;
pub mod compose;
pub mod desired;
pub mod edge;
pub mod error;
pub mod host;
pub mod metrics;
pub mod model;
pub mod offload;
pub mod playground;
pub mod playzone;
pub mod repository;
pub mod routing;
pub mod schedule;
pub mod scm;
pub mod scopes;
pub mod secrets;
pub mod ssh_keys;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod time;
pub mod token;
pub mod trigger;
pub mod validate;
pub mod wake;
pub mod webhook;

pub use error::{Error, FieldErrors, Result};
