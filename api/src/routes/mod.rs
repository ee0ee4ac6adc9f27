//! One module per resource.

pub mod keys;
pub mod ops;
pub mod playrooms;
pub mod playspec_files;
pub mod playspecs;
