//! A [`World`] with the edge (Debian's Caddy) on free ports and the
//! reconcilers running, for the sleep and wake tests: requests reach a
//! Playground's URL as `<subdomain>-<id>.localhost` on [`Edged::http_port`].

use std::time::{Duration, Instant};

use play_model::edge::EdgeSettings;
use play_reconcilers::playground::PlaygroundConfig;
use serde_json::Value;

use super::caddy::{edge_config, ensure_caddy_image};
use super::docker::BUSYBOX_IMAGE;
use super::free_port;
use super::world::{Running, World};

/// The image the sleep tests' Compose files name (a tag of busybox).
pub const SLEEPY_IMAGE: &str = "play-test/sleepy:1";

/// See the [module documentation](self).
pub struct Edged {
    pub world: World,
    pub http_port: u16,
    pub _admin_dir: tempfile::TempDir,
    pub _runtimes: (Running, Running),
}

impl Edged {
    pub async fn start() -> Edged {
        Edged::start_with(play_api::testing::TestApp::default_config()).await
    }

    /// [`Edged::start`] with the API (and so the loops' life policy)
    /// configured as `config`.
    pub async fn start_with(config: play_api::ApiConfig) -> Edged {
        ensure_caddy_image();
        let world = World::start_with(config).await;
        super::run(std::process::Command::new("docker").args(["tag", BUSYBOX_IMAGE, SLEEPY_IMAGE]));
        let (http_port, https_port) = (free_port(), free_port());
        world.set_edge(EdgeSettings { http_port, https_port, ..EdgeSettings::default() }).await;
        let admin_dir = tempfile::tempdir().expect("a temporary directory");
        let playgrounds = PlaygroundConfig { poll_interval: Duration::from_millis(300), ..PlaygroundConfig::default() };
        let runtimes = world.runtimes_with_edge_and(edge_config(admin_dir.path()), playgrounds);
        Edged { world, http_port, _admin_dir: admin_dir, _runtimes: runtimes }
    }
}

/// A client that reaches `host` on the edge's `port` at loopback.
pub fn client(host: &str, port: u16) -> reqwest::Client {
    reqwest::Client::builder()
        .resolve(host, ([127, 0, 0, 1], port).into())
        .timeout(Duration::from_secs(40))
        .build()
        .expect("a client")
}

/// Playground `id`'s detail.
pub async fn status(world: &World, id: i64) -> Value {
    world.detail(id).await.1
}

/// Waits for Playground `id` to be `want`, at most `bound`; answers how
/// long it took.
pub async fn wait_status(world: &World, id: i64, want: &str, bound: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let body = status(world, id).await;
        if body["status"] == want {
            return started.elapsed();
        }
        assert!(started.elapsed() < bound, "not {want} within {bound:?}: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
