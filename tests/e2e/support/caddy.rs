//! The edge's test image: Debian's Caddy binary (package `caddy`) and the
//! libraries it links, imported as an image, so no test needs a registry.
//! play runs it as it runs the official `caddy:2` image: `caddy run
//! --config <bootstrap> --resume` with `XDG_*` under volumes.

use std::path::Path;
use std::time::Duration;

use play_reconcilers::edge::EdgeConfig;

use super::docker::ensure_binaries_image;
use super::require_binary;

pub const CADDY_IMAGE: &str = "play-test/caddy:2";
const CADDY: &str = "/usr/bin/caddy";

/// Builds [`CADDY_IMAGE`] once per machine.
pub fn ensure_caddy_image() {
    require_binary(CADDY, "caddy");
    ensure_binaries_image(CADDY_IMAGE, &[CADDY], &["data", "config"], r#"["caddy", "run"]"#);
}

/// The edge loop's settings in the tests: [`CADDY_IMAGE`], admin sockets
/// under `admin_dir`, a quick look again.
pub fn edge_config(admin_dir: &Path) -> EdgeConfig {
    EdgeConfig {
        image: CADDY_IMAGE.to_owned(),
        admin_dir: admin_dir.display().to_string(),
        check_interval: Duration::from_millis(500),
        ..EdgeConfig::default()
    }
}

/// GET `http://<host>:<port><path>` with `host` resolved to loopback (the
/// edge's HTTP port): status and body, `None` when nothing answers within
/// 3 s.
pub async fn edge_get(port: u16, host: &str, path: &str) -> Option<(u16, String)> {
    let client = reqwest::Client::builder()
        .resolve(host, ([127, 0, 0, 1], port).into())
        .timeout(Duration::from_secs(3))
        .build()
        .expect("an HTTP client");
    let answer = client.get(format!("http://{host}:{port}{path}")).send().await.ok()?;
    let status = answer.status().as_u16();
    Some((status, answer.text().await.ok()?))
}
