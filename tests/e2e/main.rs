//! The e2e tests of this crate, one binary (issue #50, item 7): each
//! module was a test binary of its own, and every binary was linked on
//! its own. The shared support is declared once here.

mod source_tree;
mod support;

mod architecture_loops;
mod cli;
mod cli_client;
mod dashboard_browser_e2e;
mod dependency_directions;
mod edge_e2e;
mod edge_faults_e2e;
mod edge_tls_e2e;
mod edge_zero_downtime_e2e;
mod gitops_e2e;
mod host_connection;
mod host_key_pins;
mod host_pool;
mod host_registry;
mod module_cycles;
mod one_home;
mod playground_drift_e2e;
mod playground_e2e;
mod playground_exposure_e2e;
mod playground_files_e2e;
mod playground_installations_e2e;
mod playground_job_e2e;
mod playground_logs_e2e;
mod playground_ops_e2e;
mod playground_sigkill_e2e;
mod playground_simhost_e2e;
mod playground_sweep_e2e;
mod playrooms_e2e;
mod playzone_bench;
mod playzone_build_registry_e2e;
mod playzone_builds_e2e;
mod playzone_project_files_e2e;
mod playzone_source_mount_e2e;
mod playzones_e2e;
mod regressions_bench;
mod replicas_simhost_e2e;
mod repositories_attach_e2e;
mod repositories_e2e;
mod routing_in_one_place;
mod schedules_e2e;
mod schedules_sigkill_e2e;
mod script_libs;
mod serve_sweep_events_e2e;
mod sleep_default_e2e;
mod sleep_e2e;
mod sleep_faults_e2e;
mod sleep_sigkill_e2e;
mod triggers_e2e;
mod triggers_pulls_e2e;
mod typed_states;
mod webhooks_e2e;
