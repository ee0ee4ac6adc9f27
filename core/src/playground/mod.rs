//! Playgrounds, the domain: the typed states a Playground moves through and
//! the one builder of its desired objects.
//!
//! Owns what a Playground *is* and the rules it follows; it must not hold
//! SQL (that is `crate::store`) nor talk to a host.

pub mod desired;
pub mod state;

pub use desired::{Computed, DesiredError, desired_for};
pub use state::{CreationStep, DesiredState, PlaygroundStatus, ServiceState, UnknownValue};
