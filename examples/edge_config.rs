//! For `scripts/bench-edge`: prints the Caddy JSON config play would load
//! into an edge serving `routes` routes, built by the same function the
//! edge reconciler uses (`play_model::edge::config::caddy_config`).
//!
//!   edge_config <routes> <upstream> <upstream port> [http port, default 8080]
//!
//! Route `i` (1-based) answers for `s<i>-<routes>.localhost` and sends to
//! `<upstream>:<upstream port>`; every fourth route also carries a path
//! rule (PathPrefix, Path and PathRegexp in turn), as `svc/path_rule` does.
//! All routes are plain HTTP: HTTPS would make Caddy start issuing
//! certificates, which is not what is measured.

use std::process::ExitCode;

use play_model::edge::EdgeSettings;
use play_model::edge::config::{Acme, EdgeConfig, caddy_config};
use play_model::routing::route::Target;
use play_model::routing::{PathRule, Route};

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

    let mut routes = Vec::with_capacity(count);
    for i in 1..=count {
        let fqdn = format!("s{i}-{count}.localhost");
        let path_rule = match i % 12 {
            4 => Some("PathPrefix(`/api`)".to_owned()),
            8 => Some(format!("Path(`/r{i}`)")),
            0 => Some("PathRegexp(`^/v[0-9]+/`)".to_owned()),
            _ => None,
        };
        // Checked as validation checks a `svc/path_rule` label.
        let path_rule = match path_rule.as_deref().map(PathRule::check).transpose() {
            Ok(rule) => rule,
            Err(e) => {
                eprintln!("edge_config: {e}");
                return ExitCode::FAILURE;
            }
        };
        let target = Target {
            id: format!("bench-s{i}"),
            url: format!("http://{fqdn}/"),
            port,
            upstream: upstream.clone(),
            https: false,
        };
        routes.push(Route::new(fqdn, path_rule.as_ref(), target));
    }
    let settings = EdgeSettings { http_port, https_port: http_port + 1, ..EdgeSettings::default() };
    println!(
        "{}",
        caddy_config(&EdgeConfig { settings, acme: Acme::default(), routes: &routes, sleep: &Default::default() })
    );
    ExitCode::SUCCESS
}
