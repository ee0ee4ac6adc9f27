//! A test reconciler that records every pass, and catches two passes of one
//! object overlapping (also across runtimes sharing the probe).

#![allow(dead_code, reason = "each test file uses a part of the probe")]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test fixtures: a panic is the failure report")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use play_core::metrics::Metrics;
use play_reconcilers::runtime::{Action, Config, Ctx, LeaseStore, Reconciler, Runtime};
use play_reconcilers::{Error, Result};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What a pass returns, from the object id and how many passes of it ran
/// before (0 for the first).
pub type Plan = dyn Fn(i64, usize) -> Result<Action> + Send + Sync;

#[derive(Clone, Debug)]
pub struct Run {
    pub id: i64,
    pub owner: String,
    pub token: i64,
    pub attempt: u32,
    pub started: Instant,
    pub ended: Option<Instant>,
}

pub struct Inner {
    hold: Duration,
    plan: Box<Plan>,
    terminal_errors: bool,
    /// The error policy's action, no later than this (a Playground's
    /// expiry).
    retry_by: Mutex<Option<play_model::time::Timestamp>>,
    listed: Mutex<Vec<i64>>,
    runs: Mutex<Vec<Run>>,
    active: Mutex<HashMap<i64, usize>>,
    overlaps: AtomicUsize,
}

#[derive(Clone)]
pub struct Probe(pub Arc<Inner>);

impl Probe {
    /// Passes that take `hold` and then return `plan(id, n)`.
    pub fn new(hold: Duration, plan: impl Fn(i64, usize) -> Result<Action> + Send + Sync + 'static) -> Probe {
        Probe(Arc::new(Inner {
            hold,
            plan: Box::new(plan),
            terminal_errors: false,
            retry_by: Mutex::new(None),
            listed: Mutex::new(Vec::new()),
            runs: Mutex::new(Vec::new()),
            active: Mutex::new(HashMap::new()),
            overlaps: AtomicUsize::new(0),
        }))
    }

    /// Passes that take `hold` and succeed, awaiting change.
    pub fn ok(hold: Duration) -> Probe {
        Probe::new(hold, |_, _| Ok(Action::await_change()))
    }

    /// Makes the error policy call every error terminal.
    pub fn terminal(self) -> Probe {
        let inner = Arc::into_inner(self.0).expect("configure before sharing");
        Probe(Arc::new(Inner { terminal_errors: true, ..inner }))
    }

    /// Failed passes run again no later than `at`, whatever the policy.
    pub fn retry_by(&self, at: play_model::time::Timestamp) {
        *self.0.retry_by.lock().unwrap() = Some(at);
    }

    pub fn set_listed(&self, ids: &[i64]) {
        *self.0.listed.lock().unwrap() = ids.to_vec();
    }

    pub fn runs(&self) -> Vec<Run> {
        self.0.runs.lock().unwrap().clone()
    }

    pub fn runs_of(&self, id: i64) -> Vec<Run> {
        self.runs().into_iter().filter(|r| r.id == id).collect()
    }

    pub fn overlaps(&self) -> usize {
        self.0.overlaps.load(Ordering::SeqCst)
    }
}

/// Marks a pass active for as long as it lives, also when it is dropped.
struct Active<'a> {
    inner: &'a Inner,
    id: i64,
    run: usize,
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        *self.inner.active.lock().unwrap().entry(self.id).or_default() -= 1;
        self.inner.runs.lock().unwrap()[self.run].ended = Some(Instant::now());
    }
}

pub fn failure(message: &str) -> Error {
    Error::InvalidTarget(message.to_owned())
}

impl Reconciler for Probe {
    const NAME: &'static str = "probe";
    const KIND: play_core::wake::Kind = play_core::wake::Kind::Playground;
    type Id = play_model::ids::PlaygroundId;

    async fn reconcile(&self, id: Self::Id, ctx: &Ctx) -> Result<Action> {
        let id = id.0;
        let inner = &*self.0;
        let (nth, run) = {
            let mut runs = inner.runs.lock().unwrap();
            let nth = runs.iter().filter(|r| r.id == id).count();
            runs.push(Run {
                id,
                owner: ctx.owner().to_owned(),
                token: ctx.fencing_token(),
                attempt: ctx.attempt(),
                started: Instant::now(),
                ended: None,
            });
            (nth, runs.len() - 1)
        };
        {
            let mut active = inner.active.lock().unwrap();
            let n = active.entry(id).or_default();
            *n += 1;
            if *n > 1 {
                inner.overlaps.fetch_add(1, Ordering::SeqCst);
            }
        }
        let _active = Active { inner, id, run };
        if !inner.hold.is_zero() {
            tokio::time::sleep(inner.hold).await;
        }
        (inner.plan)(id, nth)
    }

    fn error_policy(&self, _id: Self::Id, _error: &Error, _attempt: u32) -> Action {
        let base = if self.0.terminal_errors { Action::await_change() } else { Action::backoff() };
        base.or_at(*self.0.retry_by.lock().unwrap())
    }

    async fn list(&self) -> Result<Vec<Self::Id>> {
        Ok(self.0.listed.lock().unwrap().iter().copied().map(Self::Id::from).collect())
    }
}

/// A config with a resync too rare to interfere, unless a test sets one.
pub fn quiet_config() -> Config {
    Config { resync_every: Duration::from_secs(24 * 3600), ..Config::default() }
}

/// A runtime started on its own task; `stop` cancels it and waits.
pub struct Running {
    pub shutdown: CancellationToken,
    pub task: tokio::task::JoinHandle<()>,
    pub metrics: Arc<Metrics>,
}

impl Running {
    pub fn start<R: Reconciler>(runtime: Runtime<R>, metrics: Arc<Metrics>) -> Running {
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(runtime.run(shutdown.clone()));
        Running { shutdown, task, metrics }
    }

    pub async fn stop(self) -> Arc<Metrics> {
        self.shutdown.cancel();
        self.task.await.expect("runtime task");
        self.metrics
    }
}

pub fn runtime<L: LeaseStore>(probe: &Probe, leases: L, config: Config) -> (Runtime<Probe>, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::new());
    (Runtime::new(probe.clone(), leases, metrics.clone()).with_config(config), metrics)
}

/// The value of `play_reconciles_total{reconciler="probe",result=...}`.
pub fn reconciles(metrics: &Metrics, result: &str) -> u64 {
    let text = metrics.render();
    let needle = format!("play_reconciles_total{{reconciler=\"probe\",result=\"{result}\"}} ");
    text.lines().find_map(|line| line.strip_prefix(&needle)).map_or(0, |n| n.trim().parse().expect("a counter value"))
}

/// The value of the sample `series` (name and labels, as rendered: e.g.
/// `play_reconcile_errors_total{controller="probe"}`) in what `/metrics`
/// serves (`Metrics::render`), `None` when the series is absent.
pub fn sample(metrics: &Metrics, series: &str) -> Option<f64> {
    let text = metrics.render();
    let needle = format!("{series} ");
    text.lines().find_map(|line| line.strip_prefix(&needle)).map(|n| n.trim().parse().expect("a sample value"))
}
