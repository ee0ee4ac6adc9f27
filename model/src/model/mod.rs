//! Records: what a row of the store is, the fields a write takes, and the
//! small value types that go with them, for the domains that have no flows
//! of their own in core. A domain that has (the Playground, Playzones,
//! webhooks, apply, builds, the edge) keeps its records beside its flows,
//! in its own `model` module.
//!
//! Invariant: nothing here imports the store or a flow; the store imports
//! these types, never the reverse.

pub mod account;
pub mod event;
pub mod installation;
pub mod lease;
pub mod overview;
pub mod playroom;
pub mod playspec;
pub mod quota;
pub mod restore;
pub mod schedule;
pub mod schema;
pub mod session;
pub mod snapshot;
pub mod template;
pub mod trigger;
