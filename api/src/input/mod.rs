//! What the API accepts: request bodies and queries, one module per resource,
//! each with the checks that turn its fields into core's types. Handlers
//! (`crate::routes`) and server-side apply (`crate::apply`) share them, so a
//! field is validated the same way on both paths.

pub mod keys;
pub mod launch;
pub mod launch_settings;
pub mod playground_ops;
pub mod playground_views;
pub mod playgrounds;
pub mod template_versions;
pub mod webhooks;

// Shared with server-side apply, which runs in `play-core`.
pub use play_core::input::{playroom_edge, playrooms, playspec_files, playspecs, playzones, repos, templates};
