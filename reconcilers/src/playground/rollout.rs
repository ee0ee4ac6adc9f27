//! A zero-downtime switch-over ([`plan::Step::SwitchOver`]): the new
//! container of a service labelled `svc/zerodowntime: true` already runs
//! beside the old one (a `RunBeside` step made it).
//!
//! 1. **Health gate**: `GET <healthcheck_path>` on the new container's
//!    address on the edge network, through the Playroom's connection (SSH
//!    `direct-tcpip`, so no tool in the image is needed), every `interval`,
//!    each bounded by `timeout`. A 2xx is healthy. Failures within
//!    `start_period` do not count; `retries` counted failures, or the
//!    container exiting, fail the rollout.
//! 2. **Switch**: the new container is recorded as the one serving the
//!    service, and the Playroom's edge is woken; the switch waits (at most
//!    `edge_switch_timeout`) until the edge's live config sends the route to
//!    it (`edge_routes.upstream`).
//! 3. **Drain**: the old container keeps running for `drain`, so requests
//!    in flight through it finish; then it is stopped and removed.
//!
//! A failed gate removes the new container, records the failed config hash
//! (`store::rollouts::record_failed`: the plan does not try it again until
//! a rollout or hard restart) and fails the pass with a terminal
//! [`Error::RolloutFailed`]: the Playground is `failed` with the reason and
//! a `playground.error` event, while the old container keeps serving.
//!
//! Crash safety: everything is found again from the host and the store. A
//! pass that dies anywhere here leaves two containers; the next plan asks
//! for the switch-over again, which probes again (idempotent) and switches
//! again (a no-op when already recorded).

use std::time::{Duration, Instant};

use bollard::Docker;
use http::Method;
use play_model::desired::{Routing, ZeroDowntime};
use play_model::host::HostTarget;
use play_store::edges;
use play_store::playground_status::Fence;
use play_store::rollouts;

use super::spec::{Desired, ServiceSpec};
use super::{PlaygroundReconciler, observe};
use crate::docker::remove;
use crate::host::exchange::exchange;
use crate::{Error, Result};

/// How long a switch waits for the edge to decide a route it has none for.
const NO_ROUTE_GRACE: Duration = Duration::from_secs(2);

/// The most of a health answer read.
const MAX_PROBE_ANSWER: usize = 64 << 10;

/// One switch-over, with what it needs from the pass.
pub(super) struct SwitchOver<'a> {
    pub r: &'a PlaygroundReconciler,
    pub fence: Fence<'a>,
    pub playground_id: i64,
    pub playroom_id: i64,
    pub docker: &'a Docker,
    pub target: &'a HostTarget,
    pub desired: &'a Desired,
}

impl SwitchOver<'_> {
    /// Runs the switch-over of `service` to container `new` (named
    /// `new_name`), removing `old` once drained.
    pub async fn run(&self, service: &str, new: &str, new_name: &str, old: &[String]) -> Result<()> {
        let spec = self
            .desired
            .services
            .iter()
            .find(|s| s.name == service)
            .ok_or_else(|| Error::InvalidSpec(format!("service `{service}` is not desired")))?;
        let Some(gate) = &spec.zero_downtime else { return Ok(()) };
        if let Err(why) = self.healthy(spec, gate, new).await {
            remove::stop_and_remove(self.docker, new).await?;
            rollouts::record_failed(&self.r.store, self.fence, self.playground_id, service, &spec.config_hash)
                .await?
                .held()?;
            return Err(Error::RolloutFailed(format!(
                "the zero-downtime rollout of `{service}` failed: its new container {why}; the previous \
                 container keeps serving (roll out again to retry)"
            )));
        }
        rollouts::set_serving(&self.r.store, self.fence, self.playground_id, service, new_name).await?.held()?;
        self.r.wake_edge(self.playroom_id);
        self.await_edge(spec, new_name, gate.port).await?;
        tokio::time::sleep(self.r.config.drain).await;
        for id in old {
            remove::stop_and_remove(self.docker, id).await?;
        }
        Ok(())
    }

    /// Probes `new` until it is healthy; `Err` says why it is not.
    async fn healthy(&self, spec: &ServiceSpec, gate: &ZeroDowntime, new: &str) -> std::result::Result<(), String> {
        let host = match &spec.routing {
            Routing::Routed(route) => route.fqdn.clone(),
            _ => "localhost".to_owned(),
        };
        let started = Instant::now();
        let mut failures = 0u32;
        loop {
            let (running, address) = observe::edge_address(self.docker, self.desired, new)
                .await
                .map_err(|e| format!("could not be inspected: {e}"))?;
            if !running {
                return Err("exited before it answered its health path".to_owned());
            }
            let outcome = match address {
                Some(ip) => self.probe(&ip, gate, &host).await,
                None => Err("has no address on the edge network yet".to_owned()),
            };
            let last = match outcome {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if started.elapsed() >= gate.start_period {
                failures += 1;
                if failures >= gate.retries {
                    return Err(format!(
                        "did not answer GET {} with a 2xx ({failures} failed probes; last: {last})",
                        gate.path
                    ));
                }
            }
            tokio::time::sleep(gate.interval).await;
        }
    }

    /// One `GET` of the health path; `Err` says why it failed.
    async fn probe(&self, ip: &str, gate: &ZeroDowntime, host: &str) -> std::result::Result<(), String> {
        let attempt = async {
            let stream = self.r.gateway.dial_tcp(self.target, ip, gate.port).await.map_err(|e| e.to_string())?;
            exchange(stream, Method::GET, host, &gate.path, None, MAX_PROBE_ANSWER).await
        };
        match tokio::time::timeout(gate.timeout, attempt).await {
            Err(_) => Err(format!("no answer within {:?}", gate.timeout)),
            Ok(Err(e)) => Err(e),
            Ok(Ok((status, _))) if status.is_success() => Ok(()),
            Ok(Ok((status, _))) => Err(format!("answered {status}")),
        }
    }

    /// Waits until the edge's live config sends the service's route to
    /// `name:port`; returns at once when another Playground holds the host
    /// (no traffic to move), after a short grace when the edge has no route
    /// for the service at all (the edge off, or not routed), and after
    /// `edge_switch_timeout` in any case (the edge is failing: draining
    /// anyway is no worse than waiting).
    async fn await_edge(&self, spec: &ServiceSpec, name: &str, port: u16) -> Result<()> {
        let wanted = format!("{name}:{port}");
        let started = Instant::now();
        loop {
            let routes = edges::routes_of(&self.r.store, self.playground_id).await?;
            match routes.get(&spec.name) {
                Some(route) if route.upstream.as_deref() == Some(wanted.as_str()) => return Ok(()),
                Some(route) if route.conflict_with.is_some() => return Ok(()),
                None if started.elapsed() >= NO_ROUTE_GRACE => return Ok(()),
                _ => {}
            }
            if started.elapsed() >= self.r.config.edge_switch_timeout {
                tracing::warn!(
                    playground = self.playground_id,
                    service = spec.name,
                    "the edge did not switch to the new container in time; draining anyway"
                );
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
