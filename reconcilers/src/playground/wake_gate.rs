//! The last step of a wake (issue #32): a woken Playground is recorded
//! `running`, which switches its routes from the edge's waking route back
//! to the plain proxy, only once every routed service's container accepts
//! connections on its port, and [`SETTLE`] after that.
//!
//! Why: the switch is a Caddy config load, and Caddy 2.6 ends the retries
//! of every request the old config still holds (its reverse proxy stops
//! retrying when the old config's context is cancelled:
//! `LoadBalancing.tryAgain`), so they get the error page. A container runs
//! before its process listens (an application server that loads for a
//! few seconds, with no healthcheck), and switching as soon as every
//! container ran cut the requests the wake was for: `tests/e2e/sleep_e2e.rs`
//! failed so once in CI, and `tests/e2e/sleep_faults_e2e.rs` shows it with a
//! service that listens 3 s after its container starts.
//!
//! Guarantees: a held request retries every
//! [`HOLD_INTERVAL`](play_model::edge::waking::HOLD_INTERVAL); once the
//! port accepted a connection, [`SETTLE`] is several of those, so every
//! request held before has reached the service when the route switches.
//! Bounded by [`HOLD`](play_model::edge::waking::HOLD) from the start of the
//! wait: past it, every held request got its answer anyway, and the
//! Playground is recorded running as before (whether it serves is its
//! healthcheck's business). A pass that dies while waiting leaves the
//! Playground `sleeping` with desired power `awake`: the next pass finds
//! the containers running and waits again (idempotent).
//!
//! The probe is a TCP connection to the container's address on the edge
//! network through the Playroom's connection (SSH `direct-tcpip`, as the
//! zero-downtime gate's): what the edge's held request needs, and nothing
//! of the service's protocol.

use std::time::{Duration, Instant};

use bollard::Docker;
use play_model::edge::waking::{HOLD, HOLD_INTERVAL};
use play_model::host::HostTarget;

use super::PlaygroundReconciler;
use super::observe::edge_address;
use super::spec::Desired;
use crate::Result;

/// How long the route stays the waking one after its services accepted
/// connections: five retry intervals of a held request.
pub const SETTLE: Duration = HOLD_INTERVAL.saturating_mul(5);

/// The bound of one connection attempt.
const ATTEMPT: Duration = Duration::from_secs(2);

/// Waits until every routed service of `desired` accepts connections on
/// its container's edge address, then [`SETTLE`]; at most [`HOLD`]. Only
/// a Docker error fails it (the pass is retried, the Playground stays
/// `sleeping`).
pub(super) async fn await_listening(
    r: &PlaygroundReconciler,
    playground_id: i64,
    docker: &Docker,
    target: &HostTarget,
    desired: &Desired,
) -> Result<()> {
    if desired.edge_network.is_none() {
        return Ok(()); // no edge: no request is held
    }
    let routes = desired.routes();
    if routes.is_empty() {
        return Ok(());
    }
    let started = Instant::now();
    for (service, route) in &routes {
        loop {
            let (running, address) = edge_address(docker, desired, &route.upstream).await?;
            if let Some(ip) = address.filter(|_| running) {
                let dial = r.gateway.dial_tcp(target, &ip, route.port);
                if matches!(tokio::time::timeout(ATTEMPT, dial).await, Ok(Ok(_))) {
                    break;
                }
            }
            if started.elapsed() >= HOLD {
                tracing::warn!(
                    playground = playground_id,
                    service = service.as_str(),
                    port = route.port,
                    "woken, but the service did not accept connections within the hold; switching its route anyway"
                );
                return Ok(());
            }
            tokio::time::sleep(HOLD_INTERVAL).await;
        }
    }
    tokio::time::sleep(SETTLE).await;
    Ok(())
}
