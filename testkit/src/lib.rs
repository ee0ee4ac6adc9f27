//! Test support that more than one of play's test trees needs, so it is
//! written once: a dev-dependency of the workspace's integration tests,
//! never a dependency of a crate that ships (`tests/e2e/dependency_directions.rs`
//! checks that no product crate reaches it).
//!
//! Support that only one crate's tests use stays beside those tests.

pub mod github;
