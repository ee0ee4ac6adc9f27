//! play's model: the records every other crate speaks, their typed states
//! and ids, and the pure rules of the domain: the Compose and template
//! engine, routing, desired state, edge configuration, lifetimes and
//! sleep, builds' inputs, the shapes of webhooks, source hosting and apply,
//! secrets and keys, and the `HostGateway`, `RepositoryGateway` and
//! `SourceHost` seams as contracts.
//!
//! This crate does no I/O: no database, no network, no host. It is the part
//! of play that can be tested with nothing running; `play-store` keeps its
//! records, `play-core` runs its flows.

pub mod apply;
pub mod build;
pub mod compose;
pub mod desired;
pub mod edge;
pub mod error;
pub mod host;
pub mod ids;
pub mod json;
pub mod model;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod playground;
pub mod playzone;
pub mod repository;
pub mod routing;
pub mod schedule;
pub mod scm;
pub mod scopes;
pub mod secrets;
pub mod ssh_keys;
#[cfg(feature = "testing")]
pub mod testing;
pub mod time;
pub mod token;
pub mod trigger;
pub mod validate;
pub mod wake;
pub mod webhook;

pub use error::{Error, FieldErrors, Result};
