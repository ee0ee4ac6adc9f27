//! What play accepts for the objects server-side apply also writes:
//! request bodies, one module per resource, each with the checks that turn
//! its fields into the model's types. The API's handlers and server-side
//! apply share them, so a field is validated the same way on both paths.
//!
//! With the `openapi` feature (the API crate's), each type also describes
//! itself as an OpenAPI schema, from the same constants as its checks.

pub mod playroom_edge;
pub mod playrooms;
pub mod playspec_files;
pub mod playspecs;
pub mod playzones;
pub mod repos;
pub mod templates;
