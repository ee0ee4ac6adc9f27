//! The shared setup of the API's integration tests, one module per area:
//! a test file includes it with `mod support;` and uses the part it needs.
#![allow(dead_code, reason = "each test binary uses a different part of the shared setup")]

pub mod apply;
pub mod templates;
