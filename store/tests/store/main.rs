//! The store tests of this crate, one binary (issue #50, item 7): each
//! module was a test binary of its own, and every binary was linked on
//! its own. The shared support is declared once here.

mod store;
mod store_cancel;
mod store_corrupt;
mod store_master_key;
mod store_playzones;
mod store_pool;
mod store_reads;
