//! The reconcilers tests of this crate, one binary (issue #50, item 7): each
//! module was a test binary of its own, and every binary was linked on
//! its own. The shared support is declared once here.

mod runtime_probe;

mod runtime_groups;
mod runtime_leases;
mod runtime_metrics;
mod runtime_replicas;
mod runtime_scheduling;
mod webhooks_metrics;
