//! The api tests of this crate, one binary (issue #50, item 7): each
//! module was a test binary of its own, and every binary was linked on
//! its own. The shared support is declared once here.

mod support;

mod apply;
mod apply_concurrency;
mod apply_repository;
mod attach;
mod compose_project_files;
mod dashboard;
mod errors;
mod git_http;
mod git_http_bounds;
mod github_install;
mod github_repos;
mod github_slow_create;
mod github_token_scope;
mod github_webhook;
mod isolation;
mod job_result;
mod keys;
mod launch_defaults;
mod layout;
mod mcp;
mod openapi;
mod ops;
mod playground_list;
mod playground_ops;
mod playground_urls;
mod playground_views;
mod playgrounds;
mod playroom_edge;
mod playroom_trust;
mod playrooms;
mod playspecs;
mod playzone_by_url;
mod playzone_links;
mod playzone_ssh;
mod playzones;
mod recent_reads;
mod rendered_reads;
mod repos;
mod schedules;
mod scopes;
mod sessions;
mod template_launch;
mod template_versions;
mod templates;
mod triggers;
mod webhooks;
