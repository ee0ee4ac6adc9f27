//! Playgrounds, the domain: the typed states a Playground moves through.
//!
//! Owns what a Playground *is* and the rules it follows; it must not hold
//! SQL (that is `crate::store`) nor talk to a host.

pub mod state;

pub use state::{CreationStep, DesiredState, PlaygroundStatus, ServiceState, UnknownValue};
