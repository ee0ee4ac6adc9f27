//! The git tests of this crate, one binary (issue #50, item 7): each
//! module was a test binary of its own, and every binary was linked on
//! its own. The shared support is declared once here.

mod common;

mod contents;
mod hosted;
mod remote;
mod ssh;
mod ssh_harness;
