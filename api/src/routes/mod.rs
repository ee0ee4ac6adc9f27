//! One module per resource.

pub mod apply;
pub mod git;
pub mod job_result;
pub mod keys;
pub mod launch;
pub mod launch_defaults;
pub mod ops;
pub mod playground_events;
pub mod playground_logs;
pub mod playground_ops;
pub mod playground_views;
pub mod playgrounds;
pub mod playrooms;
pub mod playspec_files;
pub mod playspecs;
pub mod playzone_keys;
pub mod playzones;
pub mod repos;
pub mod schedules;
pub mod scm_github;
pub mod scm_installations;
pub mod template_versions;
pub mod templates;
pub mod triggers;
pub mod webhooks;
