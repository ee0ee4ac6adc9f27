//! What the API accepts: request bodies and queries, one module per resource,
//! each with the checks that turn its fields into core's types. Handlers
//! (`crate::routes`) and server-side apply (`crate::apply`) share them, so a
//! field is validated the same way on both paths.

pub mod keys;
pub mod launch;
pub mod playground_ops;
pub mod playground_views;
pub mod playgrounds;
pub mod playroom_edge;
pub mod playrooms;
pub mod playspec_files;
pub mod playspecs;
pub mod playzones;
pub mod repos;
pub mod template_versions;
pub mod templates;
pub mod webhooks;
