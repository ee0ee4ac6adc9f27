//! One module per resource.

pub mod keys;
pub mod ops;
pub mod playrooms;
