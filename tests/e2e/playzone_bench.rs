//! Benchmarks of Playzones (issue #13), run by hand; results in
//! BENCHMARKS.md. They print figures and assert nothing about time:
//!
//! ```sh
//! cargo test --release --test playzone_bench -- --ignored --nocapture --test-threads 1
//! ```
//!
//! - `bench_sync_of_1000_branches`: one sync pass of a Playzone whose
//!   repository (real git smart HTTP on loopback) has 1,000 branches, from
//!   the wake to `sync_pending: false`: the first (1,000 rows written), an
//!   unchanged one, and one where every branch moved.
//! - `bench_cached_build_vs_static`: create-to-running of a Playground
//!   whose service is built from a Playzone and found in the build cache,
//!   against the same Compose with a static image, over the harness's sshd
//!   and Docker engine.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmark code: a panic is the failure report")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::docker::BUSYBOX_IMAGE;
use crate::support::world::World;
use axum::http::StatusCode;
use play_api::testing::TestApp;
use play_core::metrics::Metrics;
use play_git::testing::{Access, GitServer, file};
use play_git::{GitConfig, GitGateway};
use play_model::model::event::Acting;
use play_model::model::quota::QuotaLimits;
use play_model::playzone::{Changes, Input, RepositoryPolicy};
use play_reconcilers::host::{DockerHostGateway, HostConfig};
use play_reconcilers::loops::Shared;
use play_reconcilers::playzone::SyncConfig;
use play_reconcilers::runtime::Config;
use play_store::accounts;
use play_store::playzones;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use play_model::testing::loopback_policy;

async fn until_synced(store: &play_store::Store, id: i64) -> Duration {
    let started = Instant::now();
    loop {
        let z = playzones::find(store, id).await.unwrap().unwrap();
        if z.synced_generation == z.generation {
            assert_eq!(z.status, play_model::playzone::Status::Active, "{:?}", z.status_message);
            return started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run by hand, results in BENCHMARKS.md"]
async fn bench_sync_of_1000_branches() {
    const BRANCHES: usize = 1000;
    let git = GitServer::start();
    let commits = git.create_repo(
        "big",
        Access::Public,
        &[("main", &[("compose.yaml", file("services: {}\n"))]), ("other", &[("README", file("x"))])],
    );
    let names: Vec<String> = (0..BRANCHES - 2).map(|i| format!("feature/branch-{i:04}")).collect();
    git.set_branches("big", &names.iter().map(|n| (n.clone(), commits[0].clone())).collect::<Vec<_>>());
    let t = play_store::testing::store().await;
    let store = t.store.clone();
    let secrets = play_model::secrets::MasterKey::generate().secret_box();
    let (account, _) = accounts::create_account(&store, "bench").await.unwrap();
    let policy = RepositoryPolicy { urls: loopback_policy() };
    let input = Input { name: Some("big".into()), scm_url: Some(git.url("big")), ..Input::default() };
    let changes = Changes::validate(input, None, &policy).unwrap();
    let zone =
        playzones::create(&store, Some(&secrets), Acting::system(account.id), changes, false, &QuotaLimits::default())
            .await
            .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let gateway = GitGateway::new(GitConfig::new(cache.path(), loopback_policy())).unwrap();
    let host = DockerHostGateway::new(HostConfig::default(), Arc::new(Metrics::new()));
    let shared =
        Shared { repositories: Arc::new(gateway), ..crate::support::world::shared_over(&store, &secrets, &host) };
    let config = Config { resync_every: Duration::from_secs(3600), ..Config::default() };
    let runtime = shared.runtime(shared.playzone_sync(SyncConfig::default()), config, "bench");
    let handle = runtime.handle().clone();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(runtime.run(shutdown.clone()));

    handle.wake(zone.id);
    let first = until_synced(&store, zone.id).await;
    let indexed = playzones::branches(&store, zone.id, None, None, usize::MAX).await.unwrap().len();
    assert_eq!(indexed, BRANCHES);

    playzones::request_sync(&store, account.id, zone.id).await.unwrap();
    handle.wake(zone.id);
    let unchanged = until_synced(&store, zone.id).await;

    let moved = git.commit("big", "other", &[("README", file("y"))]);
    let all: Vec<(String, String)> = names.iter().map(|n| (n.clone(), moved.clone())).collect();
    git.set_branches("big", &all);
    playzones::request_sync(&store, account.id, zone.id).await.unwrap();
    handle.wake(zone.id);
    let all_moved = until_synced(&store, zone.id).await;

    println!(
        "sync of {BRANCHES} branches ({}): first {} ms, unchanged {} ms, {} moved {} ms",
        play_store::testing::backend().as_str(),
        first.as_millis(),
        unchanged.as_millis(),
        BRANCHES - 2,
        all_moved.as_millis()
    );
    shutdown.cancel();
    let _ = task.await;
}

const STATIC: &str = "services:\n  web:\n    image: play-test/busybox:1\n    command: [\"sleep\", \"3600\"]\n";
const BUILT: &str = "services:\n  web:\n    build: .\n    command: [\"sleep\", \"3600\"]\n";

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run by hand, results in BENCHMARKS.md"]
async fn bench_cached_build_vs_static() {
    const ROUNDS: usize = 5;
    let git = GitServer::start();
    git.create_repo("app", Access::Public, &[("main", &[("Dockerfile", file(format!("FROM {BUSYBOX_IMAGE}\n")))])]);
    let mut config = TestApp::default_config();
    config.repository_policy.urls = loopback_policy();
    let world = World::start_with(config.clone()).await;
    let cache = tempfile::tempdir().unwrap();
    let gateway = GitGateway::new(GitConfig::new(cache.path(), loopback_policy())).unwrap();
    let runtimes = world.runtimes_with_repositories(Arc::new(gateway));
    let app = &world.app;
    let body = json!({"playzone": {"name": "app", "scm_url": git.url("app")}});
    let zone = app.post("/api/playzones", &app.admin, body).await.body["id"].as_i64().unwrap();
    runtimes.1.handle.wake(zone);
    crate::support::wait_until("the first sync", Duration::from_secs(30), || async {
        app.get(&format!("/api/playzones/{zone}"), &app.admin).await.body["status"] == "active"
    })
    .await;
    let static_spec = world.playspec("static", STATIC).await;
    let body = json!({"playspec": {"name": "built", "base_compose_yaml": BUILT,
                                   "services": [{"name": "web", "playzone_id": zone}]}});
    let r = app.post("/api/playspecs", &app.admin, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let built_spec = r.body["id"].as_i64().unwrap();

    let run = |name: String, spec: i64| {
        let world = &world;
        let handle = runtimes.0.handle.clone();
        async move {
            let started = Instant::now();
            let id = world.playground(&name, spec, json!({})).await["id"].as_i64().unwrap();
            handle.wake(id);
            world.wait_converged(id, &name).await;
            started.elapsed()
        }
    };
    // Warm-up: the build itself, and the static image's first use.
    run("warm-built".into(), built_spec).await;
    run("warm-static".into(), static_spec).await;
    let (mut static_total, mut built_total) = (Duration::ZERO, Duration::ZERO);
    for round in 0..ROUNDS {
        static_total += run(format!("static-{round}"), static_spec).await;
        built_total += run(format!("built-{round}"), built_spec).await;
    }
    let (s, b) = (static_total / ROUNDS as u32, built_total / ROUNDS as u32);
    println!(
        "create-to-running over {ROUNDS} rounds: static image {} ms, cached build {} ms, ratio {:.2}",
        s.as_millis(),
        b.as_millis(),
        b.as_secs_f64() / s.as_secs_f64()
    );
}

/// Peak memory while 10 builds of a 200 MiB context run (issue #27, item
/// 6): one Compose file of 10 services, each `build: .` of the same
/// repository (a 200 MiB file of zeros: a few hundred KiB in git) with its
/// own build argument, so 10 images are built. Prints the process's peak
/// RSS (`VmHWM`, reset once the repository is made) for the default slots
/// (one build per Playroom at a time) and with 10 at once. The reconcilers
/// run in this process, as in `play serve`; git and the engine are other
/// processes.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run by hand, results in BENCHMARKS.md"]
async fn bench_peak_memory_of_10_builds_of_a_200_mib_context() {
    const MIB: usize = 1024 * 1024;
    let nonce = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dockerfile = format!("FROM {BUSYBOX_IMAGE}\nARG N\nRUN echo {nonce}-$N\nCMD [\"sleep\", \"3600\"]\n");
    let services: String =
        (0..10).map(|n| format!("  s{n}:\n    build:\n      context: .\n      args:\n        N: \"{n}\"\n")).collect();
    let compose = format!("services:\n{services}");
    for (label, slots) in [
        ("default slots (2 per replica, 1 per Playroom)", play_reconcilers::playground::SlotsConfig::default()),
        (
            "10 at once",
            play_reconcilers::playground::SlotsConfig {
                per_replica: 10,
                per_playroom: 10,
                bytes_per_account: 10 << 30,
            },
        ),
    ] {
        let git = GitServer::start();
        git.create_repo(
            "big",
            Access::Private { token: "bench-token".into() },
            &[("main", &[("Dockerfile", file(dockerfile.clone())), ("zeros.bin", file(vec![0u8; 200 * MIB]))])],
        );
        let config =
            play_reconcilers::playground::PlaygroundConfig { slots, ..crate::support::world::playground_config() };
        let crate::support::playzones::PlayzoneWorld { world, runtimes, playzone, cache: _cache } =
            crate::support::playzones::start_with(&git, "big", "bench-token", config).await;
        let app = &world.app;
        let defs: Vec<_> = (0..10).map(|n| json!({"name": format!("s{n}"), "playzone_id": playzone})).collect();
        let body = json!({"playspec": {"name": "big", "base_compose_yaml": compose, "services": defs}});
        let r = app.post("/api/playspecs", &app.admin, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        // The peak from here on: not the repository this test made.
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
        let started = Instant::now();
        let id = world.playground("big", r.body["id"].as_i64().unwrap(), json!({})).await["id"].as_i64().unwrap();
        runtimes.0.handle.wake(id);
        world.wait_converged(id, "10 builds").await;
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let peak = status.lines().find(|l| l.starts_with("VmHWM")).unwrap_or_default().to_owned();
        println!("{label}: 10 builds of a 200 MiB context in {:.1} s, peak {peak}", started.elapsed().as_secs_f64());
    }
}
