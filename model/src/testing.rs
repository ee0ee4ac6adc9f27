#![allow(clippy::expect_used, reason = "test fixtures: a panic is the failure report")]

//! Test fixtures of the model: a Playground as the store returns one, a
//! Compose project and build pins, for pure tests of what is computed from
//! them. Fixtures that need a store are `play_store::testing`.

/// A Playground as the store returns it (id 7, "pr-7", running desired
/// state, no settings), for pure tests of what is computed from one. Change
/// its public fields as a test needs.
pub fn playground() -> crate::playground::model::Playground {
    let now = crate::time::now();
    crate::playground::model::Playground {
        installation: "3fa91c0d4e5f6a7b".into(),
        id: 7,
        account_id: 1,
        name: "pr-7".into(),
        status: crate::playground::state::PlaygroundStatus::InProgress,
        playspec_id: Some(1),
        playspec_name: Some("shop".into()),
        playroom_id: 1,
        job_mode: false,
        agent: None,
        watched_services: Vec::new(),
        env_overrides: Default::default(),
        service_subdomains: Default::default(),
        failed_rollouts: Default::default(),
        sleep: Default::default(),
        service_settings: Default::default(),
        compose_project: "play-3fa91c-7-pr-7".into(),
        desired_state: crate::playground::state::DesiredState::Running,
        generation: 1,
        observed_generation: 0,
        creation_step: None,
        error_message: None,
        error_step: None,
        needs_recreation: false,
        restart_epoch: 0,
        pulled_epoch: 0,
        services: Vec::new(),
        expires_at: None,
        last_applied_at: None,
        created_at: now,
        updated_at: now,
    }
}

/// A Compose file as users bring it (issue #13, item 10): a relative bind
/// and a secret read from a relative `file:`, for the tests of relative
/// paths through the API and on a real host. Its image is the e2e
/// harness's busybox (API tests never pull it).
pub const PROJECT_COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    stop_grace_period: 1s
    volumes:
      - ./nginx.conf:/etc/app/app.conf:ro
    secrets: [db_password]
secrets:
  db_password:
    file: ./db_password.txt
"#;

/// A pin of `service` to the commit `commit` x 40 on branch `main` of
/// Playzone 7 (whose URL [`pinned_desired`] knows).
pub fn pin(service: &str, commit: char) -> crate::build::Pin {
    crate::build::Pin {
        service: service.into(),
        playzone_id: 7,
        branch: "main".into(),
        commit: commit.to_string().repeat(40),
        created_branch: false,
        env_file: Default::default(),
    }
}

/// The desired state of `compose` (validated for an untrusted Playroom) for
/// `playground`, with its dynamic services built from `pins` (see [`pin`]).
pub fn pinned_desired(
    playground: &crate::playground::model::Playground,
    compose: &str,
    pins: Vec<crate::build::Pin>,
) -> Result<crate::desired::Desired, String> {
    use crate::desired::{Inputs, desired, model_for};
    let model = model_for(compose, &crate::compose::Policy::UNTRUSTED, playground)?;
    let definitions = crate::compose::classify(&model);
    let urls = [(7, "https://git.example.org/app.git".to_owned())].into();
    let builds = crate::build::specs(
        playground,
        &model,
        &definitions,
        &crate::build::Sources { pins, urls, ..Default::default() },
    )?;
    desired(&Inputs::new(playground, &model).with_definitions(&definitions).with_builds(&builds))
}

/// A port on 127.0.0.1 that was free a moment ago and that this process has
/// not handed out before (shared by every test and bench that starts a
/// server of its own). Ports come from 20000-29999, below Linux's
/// ephemeral range, so a port a test has just stopped using (to test
/// "unreachable") is not handed to a parallel test's listener meanwhile.
pub fn free_port() -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let base = 20_000 + (std::process::id() % 400) * 25;
    for _ in 0..10_000 {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = u16::try_from(20_000 + (base - 20_000 + n) % 10_000).unwrap_or(20_000);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in 20000-29999");
}

/// The URL policy of tests that reach servers on loopback: `http` allowed,
/// `127.0.0.1` allowlisted (the default policy refuses both).
pub fn loopback_policy() -> crate::webhook::UrlPolicy {
    crate::webhook::UrlPolicy {
        allow_http: true,
        allowlist: crate::webhook::UrlPolicy::parse_allowlist("127.0.0.1").expect("a valid allowlist"),
    }
}
