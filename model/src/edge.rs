//! The edge: one Caddy container per Playroom that routes the Playroom's
//! exposed services (issue #12, `docs/edge.md`).
//!
//! This module is the pure part: a Playroom's edge settings
//! ([`settings`]), the host names and URLs services get ([`hosts`]), the
//! Caddy JSON config for a set of routes ([`config`]) and the arbitration
//! of a host claimed by several Playgrounds ([`claims`]), and whether a
//! Playground's route is served now ([`serving`]). The edge
//! reconciler (`play-reconcilers`, `edge/`) runs the container and loads
//! the config; the store keeps what it last did (`store::edges`).

pub mod claims;
pub mod config;
pub mod hosts;
pub mod model;
pub mod serving;
pub mod settings;
pub mod waking;

pub use settings::{EdgeChanges, EdgeConflict, EdgeSettings, TlsMode};
