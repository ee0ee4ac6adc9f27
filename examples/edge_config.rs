//! For `scripts/bench-edge`: prints the Caddy JSON config play would load
//! into an edge serving `routes` routes, built by the same function the
//! edge reconciler uses (`play_core::edge::config::caddy_config`).
//!
//!   edge_config <routes> <upstream> <upstream port> [http port, default 8080]
//!
//! Route `i` (1-based) answers for `s<i>-<routes>.localhost` and sends to
//! `<upstream>:<upstream port>`; every fourth route also carries a path
//! rule (PathPrefix, Path and PathRegexp in turn), as `svc/path_rule` does.
//! All routes are plain HTTP: HTTPS would make Caddy start issuing
//! certificates, which is not what is measured.

use std::process::ExitCode;

use play_core::desired::Route;
use play_core::edge::EdgeSettings;
use play_core::edge::config::{Acme, EdgeConfig, caddy_config};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(count), Some(upstream), Some(port), Some(http_port)) = (
        args.next().and_then(|a| a.parse::<usize>().ok()),
        args.next(),
        args.next().and_then(|a| a.parse::<u16>().ok()),
        args.next().map_or(Some(8080), |a| a.parse::<u16>().ok()),
    ) else {
        eprintln!("usage: edge_config <routes> <upstream> <upstream port> [http port]");
        return ExitCode::FAILURE;
    };

    let routes: Vec<Route> = (1..=count)
        .map(|i| {
            let fqdn = format!("s{i}-{count}.localhost");
            let path_rule = match i % 12 {
                4 => Some("PathPrefix(`/api`)".to_owned()),
                8 => Some(format!("Path(`/r{i}`)")),
                0 => Some("PathRegexp(`^/v[0-9]+/`)".to_owned()),
                _ => None,
            };
            let rule = match &path_rule {
                Some(p) => format!("Host(`{fqdn}`) && ({p})"),
                None => format!("Host(`{fqdn}`)"),
            };
            Route {
                id: format!("bench-s{i}"),
                url: format!("http://{fqdn}/"),
                fqdn,
                path_rule,
                rule,
                port,
                upstream: upstream.clone(),
                https: false,
            }
        })
        .collect();
    let settings = EdgeSettings { http_port, https_port: http_port + 1, ..EdgeSettings::default() };
    match caddy_config(&EdgeConfig { settings, acme: Acme::default(), routes: &routes }) {
        Ok(config) => {
            println!("{config}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("edge_config: {e}");
            ExitCode::FAILURE
        }
    }
}
