//! Playgrounds, the model: what a Playground is ([`model`]), the typed
//! states it moves through ([`state`]), the one builder of its desired
//! objects ([`desired`]), its lifetime ([`ttl`]) and sleep ([`sleep`]), and the operator's
//! policy for both ([`policy`]).
//! The flows that check, create and change Playgrounds are
//! `play_core::playground`; their rows are `play_store`.
//!
//! Owns what a Playground *is* and the rules it follows, with no I/O.
//! Inside this crate, import from the submodule that defines an item,
//! never through the re-exports below: those are for other crates.

pub mod desired;
pub mod job;
pub mod list;
pub mod model;
pub mod policy;
pub mod sleep;
pub mod state;
pub mod trigger_launch;
pub mod ttl;

pub use desired::{Computed, DesiredError, desired_for, playroom_inputs, policy_for};
pub use model::{
    GitConfig, NewPlayground, Playground, RolloutChanges, ServiceSettings, ServiceStatus, compose_project,
    container_name,
};
pub use policy::{LifePolicy, Lifetimes};
pub use sleep::Sleep;
pub use state::{CreationStep, DesiredState, PlaygroundStatus, Power, PowerReason, ServiceState, UnknownValue};
