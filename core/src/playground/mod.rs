//! Playgrounds, the domain: what a Playground is ([`model`]), the typed
//! states it moves through ([`state`]), the one builder of its desired
//! objects ([`desired`]), the checks of what a request asks of it
//! ([`validate`]), and the flows that create it ([`launch`]) and change what
//! it should be ([`ops`]). The API's handlers parse, authorise, call one of
//! these flows and shape the response.
//!
//! Owns what a Playground *is* and the rules it follows; it must not hold
//! SQL (that is `crate::store`, which it calls) nor talk to a host. Inside
//! `play-core`, import from the submodule that defines an item, never
//! through the re-exports below: those are for other crates, and a store
//! module reaching this facade would depend on everything in it.

pub mod desired;
pub mod job;
pub mod launch;
pub mod model;
pub mod ops;
pub mod power;
pub mod sleep;
pub mod state;
pub mod trigger_launch;
pub mod ttl;
pub mod validate;

pub use desired::{Computed, DesiredError, desired_for, playroom_inputs, policy_for};
pub use launch::{ComposeLaunch, Launched, Limits, TemplateLaunch, TemplateLaunched};
pub use model::{
    GitConfig, Lifetimes, NewPlayground, Playground, RolloutChanges, ServiceSettings, ServiceStatus, compose_project,
    container_name,
};
pub use sleep::Sleep;
pub use state::{CreationStep, DesiredState, PlaygroundStatus, Power, PowerReason, ServiceState, UnknownValue};
pub use validate::CreateRequest;
