//! What the loops that launch templates on their own share (the schedule
//! loop, the trigger loop): the bounds of a launch, which are the API's so
//! that a loop never launches what a person could not, and template
//! compilation off the async threads.

use play_core::offload::Offload;
use play_core::playground::launch::Limits;
use play_core::scm::hosts::SourceHosts;
use play_model::model::quota::QuotaLimits;
use play_model::playground::model::Lifetimes;
use play_model::playzone::RepositoryPolicy;

/// The bounds of the Playgrounds a loop launches: `play serve` gives the
/// API's.
#[derive(Clone, Debug)]
pub struct LaunchBounds {
    pub quotas: QuotaLimits,
    pub lifetimes: Lifetimes,
    pub repository_policy: RepositoryPolicy,
    /// The source hosts a template's build services may name (play's own
    /// Git host).
    pub hosts: SourceHosts,
}

impl Default for LaunchBounds {
    fn default() -> Self {
        LaunchBounds {
            quotas: QuotaLimits::default(),
            lifetimes: Lifetimes {
                playground: play_model::playground::ttl::DEFAULT_TTL,
                job: play_model::playground::ttl::DEFAULT_JOB_TTL,
            },
            repository_policy: RepositoryPolicy::default(),
            hosts: SourceHosts::default(),
        }
    }
}

impl LaunchBounds {
    pub fn limits(&self) -> Limits<'_> {
        Limits {
            quotas: &self.quotas,
            lifetimes: self.lifetimes,
            repositories: &self.repository_policy,
            hosts: &self.hosts,
        }
    }
}

/// Template compilation on the blocking pool.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Blocking;

impl Offload for Blocking {
    async fn run<T, F>(&self, job: F) -> play_core::Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        tokio::task::spawn_blocking(job)
            .await
            .map_err(|e| play_core::Error::Internal(format!("a template compile stopped: {e}")))
    }
}

/// Field errors in one line (the reason a refused launch is recorded
/// with).
pub(crate) fn describe(errors: &play_model::FieldErrors) -> String {
    errors.iter().map(|(field, messages)| format!("{field}: {}", messages.join("; "))).collect::<Vec<_>>().join(", ")
}
