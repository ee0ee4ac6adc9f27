//! The states of a Playground as typed values (its status, its desired
//! state, its creation step, the state of each service). They are defined
//! in `play-states`, a crate of plain words without the store, so that the
//! command-line client (`play-cli`) can read the API's status words with
//! the same types and no server dependency; this module keeps them where
//! the domain names them.

pub use play_states::{CreationStep, DesiredState, PlaygroundStatus, Power, PowerReason, ServiceState, UnknownValue};
