//! What the loops that launch templates on their own share (the schedule
//! loop, the trigger loop): the bounds of a launch, which are the API's so
//! that a loop never launches what a person could not, and template
//! compilation off the async threads.

use play_core::offload::Offload;
use play_core::playground::launch::Limits;
use play_core::scm::hosts::SourceHosts;
use play_model::model::quota::QuotaLimits;
use play_model::playground::LifePolicy;
use play_model::playzone::RepositoryPolicy;

/// The bounds of the Playgrounds a loop launches: `play serve` gives the
/// API's. Their lifetimes are the installation's policy, which the loops
/// get from `crate::loops::Shared::life`.
#[derive(Clone, Debug, Default)]
pub struct LaunchBounds {
    pub quotas: QuotaLimits,
    pub repository_policy: RepositoryPolicy,
    /// The source hosts a template's build services may name (play's own
    /// Git host).
    pub hosts: SourceHosts,
}

impl LaunchBounds {
    /// The limits of one launch, whose Playground lives as `life` says.
    pub fn limits(&self, life: &LifePolicy) -> Limits<'_> {
        Limits {
            quotas: &self.quotas,
            lifetimes: life.lifetimes,
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
pub(crate) use play_model::error::in_one_line as describe;
