//! The model tests of this crate, one binary (issue #50, item 7): each
//! module was a test binary of its own, and every binary was linked on
//! its own. The shared support is declared once here.

mod caddy_matcher_e2e;
mod compose_corpus;
mod compose_policy;
mod compose_reserved;
