//! The Playroom loops: what runs once per Playroom rather than once per
//! Playground.
//!
//! - [`sweep`]: a reconciler keyed by Playroom id that removes host objects
//!   labelled for Playgrounds that no longer exist.
//! - [`events`]: one Docker event watcher per Playroom that has
//!   Playgrounds, waking the Playground reconciler when a container changed
//!   behind play's back.
//!
//! Owns these per-Playroom loops. Neither converges a Playground (that is
//! `crate::playground`'s: the watcher only sends ids, the sweep touches only
//! objects whose Playground has no row), and neither imports
//! `crate::playground`.

pub mod events;
pub mod sweep;
