//! Host access: one pooled SSH connection per Playroom, Docker over it.
//!
//! ```text
//! DockerHostGateway ─► Pool ─► HostLink (one per Playroom)
//!                                 │ dial() per HTTP connection
//!                                 ├─ SSH:   russh session ─► direct-streamlocal channel to docker.sock
//!                                 │                        └► exec `docker system dial-stdio` (fallback)
//!                                 └─ local: UnixStream to the socket
//!                      hyper-util legacy client (sends Host) ─► bollard::Docker (custom transport)
//! ```
//!
//! Everything above the byte stream (HTTP client, version negotiation,
//! timeouts, metrics, bollard) is one code path for SSH and local Playrooms,
//! so tests on either exercise the same code the reconcilers use.
//!
//! - [`ssh`]: the russh client: connect, host key check, auth, transport probe.
//! - [`tunnel`]: byte streams to HTTP to bollard; per-call timeout and metrics.
//! - [`pool`]: the per-Playroom connection pool and its guarantees.
//! - [`local`]: the local-socket dialer.
//! - [`gateway`]: [`DockerHostGateway`], the `HostGateway` implementation,
//!   and byte streams to other unix sockets (the edge's admin API) and to
//!   container ports (health probes) over the same connection.
//! - [`exchange`]: one HTTP exchange over such a stream.
//! - [`registry`]: image pulls with registry credentials.
//! - [`reachability`]: whether each Playroom's engine answers, reported on
//!   the Playroom.

use std::time::Duration;

pub mod exchange;
pub mod gateway;
pub mod local;
pub mod pool;
mod quickack;
pub mod reachability;
pub mod registry;
pub mod ssh;
pub mod tunnel;

pub use gateway::{DockerHostGateway, HostConnection};
pub use registry::{RegistryCredentials, check_registry, pull_image};

/// Time bounds and liveness settings of host access. One value is shared by
/// every connection of a gateway.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Bound on each remote call: one Docker API request (until the response
    /// head), one SSH connection set-up. The spec's default is 10 s.
    pub call_timeout: Duration,
    /// Bound on establishing an SSH connection: TCP, handshake, auth and the
    /// transport probe together.
    pub connect_timeout: Duration,
    /// A keepalive is sent when the server has been silent this long;
    /// `keepalive_max` unanswered ones close the connection, so a dead host is
    /// noticed even while the pool is idle.
    pub keepalive_interval: Duration,
    pub keepalive_max: usize,
    /// A connection with no traffic at all (not even keepalive replies) for
    /// this long is closed.
    pub inactivity_timeout: Duration,
    /// Idle HTTP connections (SSH channels) kept per Playroom for reuse.
    pub max_idle_http_connections: usize,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            call_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            keepalive_interval: Duration::from_secs(15),
            keepalive_max: 3,
            inactivity_timeout: Duration::from_secs(300),
            max_idle_http_connections: 4,
        }
    }
}

impl HostConfig {
    /// Both bounds set to `timeout` (tests use short ones).
    pub fn with_timeout(timeout: Duration) -> Self {
        HostConfig { call_timeout: timeout, connect_timeout: timeout, ..HostConfig::default() }
    }
}
