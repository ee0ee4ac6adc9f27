//! Whether the edge serves a Playground's route now, and if not why: the
//! route the desired state asks for (`desired::exposure`) joined with what
//! the edge reconciler last decided for it (`store::edges`, a row per
//! Playground and service). The API's Playground views show the result.
//!
//! The edge decides only routes of running services of Playgrounds whose
//! desired state is `running`, and a route is live only once a config that
//! serves it was accepted; between a change and the edge's next pass the
//! decided row lags behind the desired route (an old host, no row yet).

/// What the edge last decided for the route (a row of `edge_routes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decided<'a> {
    pub host: &'a str,
    pub live: bool,
    /// The Playground holding the host this route lost.
    pub conflict_with: Option<i64>,
}

/// Whether the route is served, and why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Serving {
    /// The edge serves the route under the host the desired state asks for.
    pub live: bool,
    /// Another Playground holds the host: this route is held back.
    pub held_by: Option<i64>,
    /// Why the route is not served; `None` when it is.
    pub reason: Option<String>,
}

/// The state of the route to `fqdn` of a service that is `running` (as the
/// Playground's status last saw it), given the edge's decision for it and
/// the edge's current error, if any.
pub fn serving(fqdn: &str, running: bool, decided: Option<Decided<'_>>, edge_error: Option<&str>) -> Serving {
    let not_served = |reason: String| Serving { live: false, held_by: None, reason: Some(reason) };
    let pending = |what: String| match edge_error {
        Some(error) => not_served(format!("{what}; the edge's last pass failed: {error}")),
        None => not_served(format!("{what} (on its next pass)")),
    };
    match decided {
        Some(d) if d.host == fqdn => match d.conflict_with {
            Some(holder) => Serving {
                live: false,
                held_by: Some(holder),
                reason: Some(format!(
                    "host {fqdn} is held by Playground {holder}, which claimed it first: give this service \
                     another subdomain (service_subdomains), or destroy Playground {holder}"
                )),
            },
            None if d.live => Serving { live: true, held_by: None, reason: None },
            None if !running => not_served("the service is not running".to_owned()),
            None => pending("the edge has not loaded the route yet".to_owned()),
        },
        _ if !running => not_served("the service is not running yet".to_owned()),
        Some(d) => pending(format!("the edge still routes the previous host {} and moves it", d.host)),
        None => pending("the edge has not picked the route up yet".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "shop.apps.example.com";

    fn row(host: &str, live: bool, conflict_with: Option<i64>) -> Option<Decided<'_>> {
        Some(Decided { host, live, conflict_with })
    }

    #[test]
    fn a_live_route_on_the_desired_host_is_served() {
        let s = serving(HOST, true, row(HOST, true, None), Some("port 80 in use"));
        assert_eq!(s, Serving { live: true, held_by: None, reason: None }, "Caddy keeps the last good config");
    }

    #[test]
    fn a_lost_host_names_its_holder() {
        let s = serving(HOST, true, row(HOST, false, Some(7)), None);
        assert_eq!((s.live, s.held_by), (false, Some(7)));
        assert!(s.reason.unwrap().contains("held by Playground 7"));
    }

    #[test]
    fn reasons_before_the_edge_serves_a_route() {
        let reason = |running, decided, error| serving(HOST, running, decided, error).reason.unwrap();
        assert_eq!(reason(false, None, None), "the service is not running yet");
        assert!(reason(true, None, None).contains("not picked the route up yet"));
        assert!(reason(true, None, Some("boom")).ends_with("the edge's last pass failed: boom"));
        assert!(reason(true, row(HOST, false, None), None).contains("not loaded the route yet"));
        assert!(reason(true, row("old.apps.example.com", true, None), None).contains("previous host old."));
        // A conflict on a host the service no longer asks for is stale.
        let moved = serving(HOST, true, row("old.apps.example.com", false, Some(3)), None);
        assert_eq!((moved.live, moved.held_by), (false, None));
        assert_eq!(reason(false, row(HOST, false, None), None), "the service is not running");
    }
}
