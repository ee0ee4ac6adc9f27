//! The shared setup of the API's integration tests, one module per area:
//! a test file includes it with `mod support;` and uses the part it needs.
#![allow(dead_code, reason = "each test binary uses a different part of the shared setup")]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

pub mod apply;
pub mod browser;
pub mod github;
pub mod hosted;
pub mod templates;
