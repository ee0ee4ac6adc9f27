//! How a routed service labelled `svc/zerodowntime: true` is replaced when
//! its container must be recreated: the new container starts beside the
//! old one, must answer `svc/healthcheck_path` with a 2xx (probed by play
//! through the Playroom's connection), then the edge switches to it, the
//! old one drains and is stopped. Everything else is replaced
//! stop-then-start.
//!
//! Defaults, for labels left empty: path `/`, interval 1 s, timeout 1 s,
//! 3 retries, no start period: a new version gets `start_period` plus
//! `retries` failed probes, `interval` apart, before the rollout fails.

use std::time::Duration;

use serde::Serialize;

use super::exposure::Routing;
use crate::compose::model::Service;

/// A zero-downtime service's health gate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ZeroDowntime {
    /// Probed with `GET`; a 2xx answer is healthy.
    pub path: String,
    /// The container port probed (the route's).
    pub port: u16,
    pub interval: Duration,
    pub timeout: Duration,
    /// Failed probes after the start period that fail the rollout.
    pub retries: u32,
    /// Failed probes in this time after the start do not count.
    pub start_period: Duration,
}

/// The service's zero-downtime settings: `Some` only for a routed service
/// with `svc/zerodowntime: true` (without a route there is no edge to
/// switch, so such a service is replaced stop-then-start).
pub(super) fn zero_downtime(service: &Service, routing: &Routing) -> Option<ZeroDowntime> {
    let Routing::Routed(route) = routing else { return None };
    if service.labels.get("svc/zerodowntime").map(String::as_str) != Some("true") {
        return None;
    }
    let label = |key: &str| service.labels.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
    let duration = |key: &str, default: Duration| label(key).and_then(parse_duration).unwrap_or(default);
    Some(ZeroDowntime {
        path: label("svc/healthcheck_path").unwrap_or("/").to_owned(),
        port: route.port,
        interval: duration("svc/healthcheck_interval", Duration::from_secs(1)),
        timeout: duration("svc/healthcheck_timeout", Duration::from_secs(1)),
        retries: label("svc/healthcheck_retries").and_then(|r| r.parse().ok()).filter(|r| *r >= 1).unwrap_or(3),
        start_period: duration("svc/healthcheck_start_period", Duration::ZERO),
    })
}

/// A duration label (`500ms`, `10s`, `2m`; validated earlier).
fn parse_duration(text: &str) -> Option<Duration> {
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = digits.parse().ok()?;
    match unit {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" => Some(Duration::from_secs(n.checked_mul(60)?)),
        _ => None,
    }
}

/// The name of a container started beside `serving` for a rollout: Docker
/// Compose's numbering, alternating between `-1` (the canonical name) and
/// `-2`, so a rollout never needs a third name.
pub fn beside_name(canonical: &str, serving: &str) -> String {
    if serving == canonical {
        match canonical.strip_suffix("-1") {
            Some(stem) => format!("{stem}-2"),
            None => format!("{canonical}-2"),
        }
    } else {
        canonical.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_names() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Some(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("s"), None);
        assert_eq!(beside_name("p-web-1", "p-web-1"), "p-web-2");
        assert_eq!(beside_name("p-web-1", "p-web-2"), "p-web-1");
    }
}
