//! Job mode: a Playground that runs until its *watched* services have
//! exited, then records its result and removes itself from the host.
//!
//! Which services are watched ([`watched`]), first rule that applies, among
//! the services that run (services with `profiles` never start):
//! 1. the Playground's `watched_services` (each must run, else the spec
//!    cannot complete: a terminal error);
//! 2. the services labelled `svc/job_watch: true`;
//! 3. the dynamic services (built from source), except those labelled
//!    `svc/job_watch: false`;
//! 4. every service except those labelled `svc/job_watch: false`.
//!
//! While the job runs, the plan never starts an exited watched container
//! again ([`plan::plan_keeping`]); other services are converged as usual. A
//! watched service has exited when Docker reports its container `exited`:
//! a container Docker is about to restart (restart policy) is `restarting`,
//! so `on-failure:3` counts as exited only once Docker gives up.
//!
//! When every watched service has exited ([`finished`]), [`result`] reads
//! the last [`MAX_CACHED_LINES`] lines of every service's container and
//! makes the result the pass records in one fenced transaction
//! (`play_store::job_results::record_completion`): `exit_code`
//! ([`exit_code`]), `completed_at` (the latest exit of a watched service),
//! `tail_logs` ([`tail_logs`]). The host is then cleaned
//! like a DELETE does, from the stored desired state `complete`, so a crash
//! after the record finishes the clean-up without recomputing anything.
//!
//! Owns the job rules (which services are watched, when the job is done,
//! its result). It neither writes the store nor holds the pass's state:
//! the pass hands it what it observed and records what it returns.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bollard::Docker;
use play_model::host::HostError;
use play_model::playground::job::Completion;
use play_model::playground::{Playground, ServiceState, ServiceStatus};
use play_model::time::{self, Timestamp};
use play_store::job_results::MAX_CACHED_LINES;

use super::plan::{self, Observed, State};
use super::spec::{Desired, ServiceSpec};
use crate::docker::logs;
use crate::{Error, Result};

/// The label that marks (`true`) or excludes (`false`) a watched service.
pub const JOB_WATCH_LABEL: &str = "svc/job_watch";
/// Lines of each watched service in `tail_logs`.
pub const TAIL_LOG_LINES: usize = 100;

fn job_watch(service: &ServiceSpec) -> Option<&str> {
    service.container.labels.get(JOB_WATCH_LABEL).map(String::as_str)
}

/// The watched services of a job-mode Playground (see the
/// [module documentation](self) for the rule). An `Err` is a spec that can
/// never complete (terminal).
pub fn watched(p: &Playground, desired: &Desired) -> Result<BTreeSet<String>, String> {
    let runs = |name: &str| desired.services.iter().any(|s| s.name == name);
    if !p.watched_services.is_empty() {
        if let Some(name) = p.watched_services.iter().find(|n| !runs(n)) {
            return Err(format!(
                "the watched service `{name}` never runs (it has profiles), so the job could never complete"
            ));
        }
        return Ok(p.watched_services.iter().cloned().collect());
    }
    let names = |keep: &dyn Fn(&ServiceSpec) -> bool| -> BTreeSet<String> {
        desired.services.iter().filter(|s| keep(s)).map(|s| s.name.clone()).collect()
    };
    let marked = names(&|s| job_watch(s) == Some("true"));
    if !marked.is_empty() {
        return Ok(marked);
    }
    let dynamic = names(&|s| s.build && job_watch(s) != Some("false"));
    if !dynamic.is_empty() {
        return Ok(dynamic);
    }
    let all = names(&|s| job_watch(s) != Some("false"));
    if all.is_empty() {
        return Err(format!("every service is labelled `{JOB_WATCH_LABEL}: false`: the job watches nothing"));
    }
    Ok(all)
}

/// Each watched service's exit code, once every watched service's container
/// (with the desired config hash) has exited; `None` while any runs, waits
/// or has no container.
pub fn finished(desired: &Desired, observed: &Observed, watched: &BTreeSet<String>) -> Option<BTreeMap<String, i64>> {
    if watched.is_empty() {
        return None;
    }
    let current = plan::current_containers(desired, observed);
    watched
        .iter()
        .map(|name| match current.get(name.as_str()).map(|c| c.state) {
            Some(State::Exited(code)) => Some((name.clone(), code)),
            _ => None,
        })
        .collect()
}

/// The job's exit code: the first non-zero exit code of a watched service,
/// in service order (dependencies first, then as written), else 0.
pub fn exit_code(desired: &Desired, exits: &BTreeMap<String, i64>) -> i64 {
    desired.services.iter().filter_map(|s| exits.get(&s.name)).copied().find(|code| *code != 0).unwrap_or(0)
}

/// When the job completed: the latest exit of a watched service, as the
/// engine reports it (`None` when it reports none).
pub fn completed_at(desired: &Desired, observed: &Observed, watched: &BTreeSet<String>) -> Option<Timestamp> {
    let current = plan::current_containers(desired, observed);
    watched.iter().filter_map(|name| current.get(name.as_str())?.finished_at).max()
}

/// `tail_logs`: the last [`TAIL_LOG_LINES`] lines of the watched services,
/// in service order. With one watched service they are its lines as they
/// are; with several, each line is prefixed `service | ` as in `docker
/// compose logs`.
pub fn tail_logs(desired: &Desired, watched: &BTreeSet<String>, logs: &BTreeMap<String, Vec<String>>) -> String {
    let several = watched.len() > 1;
    let mut out: Vec<String> = Vec::new();
    for service in desired.services.iter().filter(|s| watched.contains(&s.name)) {
        let lines = logs.get(&service.name).map(Vec::as_slice).unwrap_or_default();
        let tail = &lines[lines.len().saturating_sub(TAIL_LOG_LINES)..];
        out.extend(tail.iter().map(|l| if several { format!("{} | {l}", service.name) } else { l.clone() }));
    }
    out.join("\n")
}

/// The last [`MAX_CACHED_LINES`] lines (stdout and stderr) of a container,
/// oldest first, bounded as [`logs::tail`] bounds them. A container already
/// gone has none.
async fn last_lines(docker: &Docker, container: &str, bound: Duration) -> Result<Vec<String>> {
    match logs::tail(docker, container, MAX_CACHED_LINES, bound).await {
        Err(Error::Host(HostError::NotFound(_))) => Ok(Vec::new()),
        other => other,
    }
}

/// A finished job's result, owned: what
/// `play_store::job_results::record_completion` records (see
/// [`JobResult::completion`]).
#[derive(Debug)]
pub struct JobResult {
    exit_code: i64,
    completed_at: Timestamp,
    tail_logs: String,
    watched: BTreeMap<String, i64>,
    logs: BTreeMap<String, Vec<String>>,
    services: Vec<ServiceStatus>,
    keep_until: Timestamp,
}

impl JobResult {
    /// The result as the store records it.
    pub fn completion(&self) -> Completion<'_> {
        Completion {
            exit_code: self.exit_code,
            completed_at: self.completed_at,
            tail_logs: &self.tail_logs,
            watched: &self.watched,
            logs: &self.logs,
            services: &self.services,
            keep_until: self.keep_until,
        }
    }
}

/// Reads what a finished job leaves (the last lines of every service's
/// container, each read bounded by `log_bound`) and makes its result:
/// every service `stopped`, kept for `retention` from now. `exits` is what
/// [`finished`] returned. Writes nothing: the pass records the result in
/// one fenced transaction, then reloads the Playground and cleans the host
/// from its desired state.
pub async fn result(
    docker: &Docker,
    desired: &Desired,
    observed: &Observed,
    watched: &BTreeSet<String>,
    exits: BTreeMap<String, i64>,
    log_bound: Duration,
    retention: Duration,
) -> Result<JobResult> {
    let current = plan::current_containers(desired, observed);
    let mut logs = BTreeMap::new();
    for service in &desired.services {
        let lines = match current.get(service.name.as_str()) {
            Some(c) => last_lines(docker, &c.id, log_bound).await?,
            None => Vec::new(),
        };
        logs.insert(service.name.clone(), lines);
    }
    let now = time::now();
    let services: Vec<ServiceStatus> = desired
        .services
        .iter()
        .map(|s| ServiceStatus {
            name: s.name.clone(),
            status: ServiceState::Stopped,
            health: None,
            running: false,
            container: None,
        })
        .collect();
    let retention = chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::hours(24));
    Ok(JobResult {
        exit_code: exit_code(desired, &exits),
        completed_at: completed_at(desired, observed, watched).unwrap_or(now),
        tail_logs: tail_logs(desired, watched, &logs),
        watched: exits,
        logs,
        services,
        keep_until: now + retention,
    })
}

#[cfg(test)]
#[path = "job_tests.rs"]
mod tests;
