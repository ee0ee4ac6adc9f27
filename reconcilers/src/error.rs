//! The one error type of the reconcilers crate.
//!
//! Host access failures are [`HostError`] from `play-core`, so the API can
//! show them without knowing russh or bollard; Docker engine answers keep the
//! bollard error as their source for logs.
//!
//! Owns the error type and how an engine or transport failure is classified
//! (including digging a dialer's [`HostError`] out of hyper's error chain).
//! It sits below every other module of the crate and imports none of them:
//! a module here that needs an error imports this one, never the reverse.

use std::io;

use play_model::host::{FailureKind, HostError};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reaching the host failed, or the call was not answered in time.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The engine answered a call with an error.
    #[error("Docker {operation}: {source}")]
    Docker {
        operation: &'static str,
        #[source]
        source: bollard::errors::Error,
    },
    /// The registry refused the credentials (or asked for some) while the
    /// engine pulled `image`.
    #[error("registry refused the credentials for {image}: {message}")]
    RegistryUnauthorized { image: String, message: String },
    /// The engine could not pull `image` (no registry serves it, the
    /// registry is unreachable from the host): retried, and named, so the
    /// Playground's status says which image.
    #[error("pulling the image {image} failed: {message}")]
    PullFailed { image: String, message: String },
    /// The Playroom's stored parameters cannot be used (a key that does not
    /// parse, a pin that is not a key).
    #[error("invalid Playroom host settings: {0}")]
    InvalidTarget(String),
    /// The store failed (database, missing rows, secrets).
    #[error("store: {0}")]
    Store(#[from] play_core::Error),
    /// The desired state cannot be made true by retrying (a Compose file
    /// that cannot run, a service that must be built): terminal, written to
    /// the object's status, not retried until the object changes.
    #[error("{0}")]
    InvalidSpec(String),
    /// Mounted files could not be packed for the host (a file changed
    /// under the pass, say): transient, the next pass starts over.
    #[error("mounted files: {0}")]
    Files(String),
    /// A zero-downtime rollout's new container never became healthy: the
    /// old one keeps serving, and the rollout is not tried again until the
    /// Playground changes (terminal).
    #[error("{0}")]
    RolloutFailed(String),
    /// The edge proxy's admin API failed or refused a config (its message).
    #[error("edge: {0}")]
    Edge(String),
    /// This replica lost the object's reconcile lease; its fenced writes
    /// were refused. The replica that holds the lease carries on.
    #[error("the reconcile lease was lost")]
    LeaseLost,
    /// The webhook dispatcher cannot run (its HTTP client cannot be built).
    #[error("webhooks: {0}")]
    Webhooks(String),
    /// A Playzone's repository failed while a service was built from it
    /// (its message names the repository, never the token). Refused
    /// credentials, a missing repository or commit and a bound that was hit
    /// are terminal; an unreachable or slow repository is retried.
    #[error("repository: {0}")]
    Repository(play_model::repository::RepositoryError),
    /// A service's image failed to build (the engine refused the
    /// Dockerfile, a step failed, the build timed out): terminal until the
    /// Playground changes. The message ends with the build log's tail.
    #[error("{0}")]
    BuildFailed(String),
}

impl From<play_store::fence::LeaseLost> for Error {
    /// A fenced write found the lease lost: `write(..).await?.held()?`.
    fn from(_: play_store::fence::LeaseLost) -> Self {
        Error::LeaseLost
    }
}

/// A refusal of the model's rules, as the store's error carries it.
impl From<play_model::Error> for Error {
    fn from(error: play_model::Error) -> Self {
        Error::Store(error.into())
    }
}

impl From<play_model::playground::DesiredError> for Error {
    /// A Playground that cannot run is terminal ([`Error::InvalidSpec`]); a
    /// corrupt row is a store error (terminal too, see `is_terminal`).
    fn from(error: play_model::playground::DesiredError) -> Self {
        use play_model::playground::DesiredError;
        match error {
            DesiredError::Store(e) => Error::Store(e.into()),
            e @ (DesiredError::NoPlayspec | DesiredError::CannotRun(_)) => Error::InvalidSpec(e.to_string()),
        }
    }
}

impl Error {
    /// Wraps a bollard error, classifying the ones that are really about the
    /// path to the host (timeouts, broken tunnels) as [`HostError`]s.
    pub fn docker(operation: &'static str, source: bollard::errors::Error) -> Self {
        use bollard::errors::Error as B;
        match source {
            B::RequestTimeoutError => Error::Host(HostError::Timeout(format!("Docker {operation}"))),
            B::DockerResponseServerError { status_code: 404, message } => Error::Host(HostError::NotFound(message)),
            // A dialer's typed failure (socket missing, auth refused on
            // reconnect, ...) rides inside hyper's connect error.
            B::HyperLegacyError { err } => Error::Host(host_error_in(&err).unwrap_or_else(|| {
                HostError::Protocol(format!("Docker {operation}: the connection to the engine failed: {err}"))
            })),
            source => Error::Docker { operation, source },
        }
    }

    /// Low-cardinality label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Host(e) => e.kind().as_str(),
            Error::Docker { .. } => "docker",
            Error::RegistryUnauthorized { .. } => "registry_unauthorized",
            Error::PullFailed { .. } => "pull_failed",
            Error::InvalidTarget(_) => "invalid_target",
            Error::Store(_) => "store",
            Error::InvalidSpec(_) => "invalid_spec",
            Error::Files(_) => "files",
            Error::Edge(_) => "edge",
            Error::RolloutFailed(_) => "rollout_failed",
            Error::LeaseLost => "lease_lost",
            Error::Webhooks(_) => "webhooks",
            Error::Repository(_) => "repository",
            Error::BuildFailed(_) => "build_failed",
        }
    }

    /// This error as the seam's [`HostError`], for `HostGateway` callers.
    pub fn into_host_error(self) -> HostError {
        match self {
            Error::Host(e) => e,
            Error::Docker { operation, source } => HostError::Protocol(format!("Docker {operation}: {source}")),
            e @ Error::RegistryUnauthorized { .. } => HostError::AuthRefused(e.to_string()),
            e @ (Error::InvalidTarget(_)
            | Error::PullFailed { .. }
            | Error::Store(_)
            | Error::InvalidSpec(_)
            | Error::Files(_)
            | Error::Edge(_)
            | Error::RolloutFailed(_)
            | Error::LeaseLost
            | Error::Webhooks(_)
            | Error::Repository(_)
            | Error::BuildFailed(_)) => HostError::Protocol(e.to_string()),
        }
    }

    pub fn kind(&self) -> FailureKind {
        match self {
            Error::Host(e) => e.kind(),
            Error::RegistryUnauthorized { .. } => FailureKind::AuthRefused,
            Error::Docker { .. }
            | Error::PullFailed { .. }
            | Error::InvalidTarget(_)
            | Error::Store(_)
            | Error::InvalidSpec(_)
            | Error::Files(_)
            | Error::Edge(_)
            | Error::RolloutFailed(_)
            | Error::LeaseLost
            | Error::Webhooks(_)
            | Error::Repository(_)
            | Error::BuildFailed(_) => FailureKind::Protocol,
        }
    }

    /// Retrying cannot fix it: the error policy parks the object until it
    /// changes. A corrupt stored row is terminal: the next read is just as
    /// corrupt, and nothing must act on a default in its place.
    pub fn is_terminal(&self) -> bool {
        use play_model::repository::RepositoryError as R;
        matches!(
            self,
            Error::InvalidSpec(_)
                | Error::RolloutFailed(_)
                | Error::BuildFailed(_)
                | Error::Store(play_core::Error::Corrupt { .. })
                | Error::Repository(R::Refused(_) | R::Unauthorized(_) | R::NotFound(_) | R::TooLarge(_))
        )
    }
}

/// The [`HostError`] a dialer put into an error chain, if any: a dialer
/// (the host tunnel's) wraps it in an `io::Error`, which hyper and bollard
/// carry as a source.
pub(crate) fn host_error_in(error: &(dyn std::error::Error + 'static)) -> Option<HostError> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        if let Some(host) = e.downcast_ref::<HostError>() {
            return Some(host.clone());
        }
        if let Some(io) = e.downcast_ref::<io::Error>()
            && let Some(host) = io.get_ref().and_then(|i| i.downcast_ref::<HostError>())
        {
            return Some(host.clone());
        }
        current = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_404_and_timeouts_become_host_kinds() {
        let not_found = Error::docker(
            "logs",
            bollard::errors::Error::DockerResponseServerError {
                status_code: 404,
                message: "No such container: x".into(),
            },
        );
        assert_eq!(not_found.kind(), FailureKind::NotFound);
        let timeout = Error::docker("ping", bollard::errors::Error::RequestTimeoutError);
        assert_eq!(timeout.metric_label(), "timeout");
        let conflict = Error::docker(
            "create",
            bollard::errors::Error::DockerResponseServerError { status_code: 409, message: "name in use".into() },
        );
        assert_eq!(conflict.metric_label(), "docker");
        assert!(conflict.into_host_error().message().contains("name in use"));
    }

    #[test]
    fn host_errors_survive_io_wrapping() {
        let io = io::Error::other(HostError::SocketMissing("/x".into()));
        let found = host_error_in(&io);
        assert_eq!(found, Some(HostError::SocketMissing("/x".into())));
    }
}
