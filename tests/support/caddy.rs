//! The edge's test image: Debian's Caddy binary (package `caddy`) and the
//! libraries it links, imported as an image, so no test needs a registry.
//! play runs it as it runs the official `caddy:2` image: `caddy run
//! --config <bootstrap> --resume` with `XDG_*` under volumes.

use super::docker::ensure_binaries_image;
use super::require_binary;

pub const CADDY_IMAGE: &str = "play-test/caddy:2";
const CADDY: &str = "/usr/bin/caddy";

/// Builds [`CADDY_IMAGE`] once per machine.
pub fn ensure_caddy_image() {
    require_binary(CADDY, "caddy");
    ensure_binaries_image(CADDY_IMAGE, &[CADDY], &["data", "config"], r#"["caddy", "run"]"#);
}
