//! What the API answers: response bodies, one module per resource, built from
//! core's records. Handlers (`crate::routes`) and MCP return them.

pub mod keys;
pub mod launch;
pub mod playground_urls;
pub mod playground_views;
pub mod playgrounds;
pub mod playroom_edge;
pub mod playrooms;
pub mod playspecs;
pub mod playzones;
pub mod repos;
pub mod schedules;
pub mod template_versions;
pub mod templates;
pub mod triggers;
pub mod webhooks;
