//! The webhook dispatcher: delivers the events outbox to webhook endpoints
//! (`docs/webhooks.md`).
//!
//! Not a [`Reconciler`](crate::runtime::Reconciler): its unit of work is a
//! delivery, claimed in the store, not an object under a lease. Two tasks:
//!
//! 1. **Fan-out** reads undispatched outbox events oldest first and, per
//!    event in one transaction, writes one pending delivery per matching
//!    endpoint of the event's account that was enabled when the event was
//!    recorded, and marks the event
//!    dispatched (`play_store::webhook_dispatch::fan_out`).
//! 2. **Send** claims due deliveries of enabled endpoints, posts each one
//!    signed ([`send`]) and records the outcome (one recorder task, the
//!    outcomes that arrived together in one transaction): 2xx succeeds and resets
//!    the endpoint's failure count; anything else is retried after the
//!    next delay of [`WebhooksConfig::retry_schedule`] (plus up to 20%
//!    jitter) until the schedule is spent (`abandoned`), counts one
//!    failure of the endpoint, and disables it at 10 consecutive failures
//!    or at once on 410 Gone.
//!
//! # Guarantees
//!
//! - **At least once, never lost**: a delivery row exists before its first
//!   attempt, committed with the event's `dispatched_at`; an attempt whose
//!   outcome was not recorded (crash, lost database) is sent again once its
//!   claim expires (at once after a restart on SQLite's fixed replica id).
//! - **One delivery per (event, endpoint)**, whatever crashes or replicas
//!   race (`UNIQUE`); its id is stable across retries, and receivers dedupe
//!   on it (`X-Webhook-Delivery`, `webhook-id`).
//! - **One attempt of a delivery at a time across replicas**: an attempt
//!   starts only under a claim won by compare-and-set; the claim outlives
//!   the attempt's timeout.
//! - **Isolation**: at most [`WebhooksConfig::per_endpoint`] attempts per
//!   endpoint are in flight on a replica, and at most
//!   [`WebhooksConfig::concurrency`] in all, each bounded by
//!   [`WebhooksConfig::timeout`]: a slow or dead endpoint holds at most its
//!   own slots and never delays another endpoint's deliveries.
//! - **Each claim sees its endpoint as the last outcome left it**: an
//!   attempt holds its slots until its outcome is written, so a 410 or the
//!   10th failure disables the endpoint before this replica claims its
//!   next delivery.
//! - **A disabled endpoint keeps its backlog**: its deliveries are not
//!   claimed while it is disabled and are sent when it is enabled again.
//!
//! # Caveats
//!
//! - No order between deliveries: retries and concurrency reorder them;
//!   receivers order by the payload's `timestamp`.
//! - Wakes: the API does not signal outbox inserts to this loop; both
//!   tasks poll every [`WebhooksConfig::poll_interval`] (1 s by default),
//!   which bounds the delay of a first attempt. A finished attempt or a
//!   fan-out wakes the sender at once.
//! - The per-endpoint bound is per replica.
//!
//! # Metrics
//!
//! With [`Dispatcher::with_metrics`], each attempt counts as a pass of the
//! controller [`Dispatcher::NAME`] in controller-runtime's `reconcile_*`
//! families (`success` when the endpoint answered 2xx, `error` otherwise)
//! and is in flight, for the stuck-thread gauges, from its start until its
//! outcome is written. The `workqueue_*` queue families and the leases do
//! not apply: the due deliveries wait as rows in the store, not in a queue
//! of this process, and are claimed, not leased.

mod client;
mod send;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use play_core::metrics::Metrics;
use play_core::wake::WakeReceiver;
use play_model::secrets::SecretBox;
use play_model::webhook::UrlPolicy;
use play_model::webhook::delivery::default_retry_schedule;
use play_model::webhook::model::ClaimLimits;
use play_store::webhook_dispatch;
use play_store::{Store, events};
use tokio::sync::{Notify, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use client::{Answer, ClientLimits, DeliveryClient, SendError};
pub use send::{headers, outcome};

use crate::{Error, Result};

/// The most outcomes recorded in one transaction.
pub const RECORD_BATCH: usize = 256;

/// An outcome on its way to the recorder, and how the recorder tells its
/// attempt it is written.
type Recording = (send::Outcome, oneshot::Sender<()>);

/// The dispatcher's settings (the operator's).
#[derive(Clone, Debug)]
pub struct WebhooksConfig {
    /// How often the outbox and the due deliveries are looked at without
    /// a wake.
    pub poll_interval: Duration,
    /// Bound on one attempt: connect, send, and read the answer.
    pub timeout: Duration,
    /// Attempts in flight at once on this replica.
    pub concurrency: usize,
    /// Attempts in flight at once per endpoint on this replica.
    pub per_endpoint: usize,
    /// Delay before the 2nd, 3rd, ... attempt; spent, a delivery is
    /// abandoned.
    pub retry_schedule: Vec<Duration>,
    /// Most bytes of an answer read.
    pub max_response_bytes: usize,
    /// Bytes of an answer kept in the delivery history.
    pub snippet_bytes: usize,
    /// Outbox events fanned out per read.
    pub fan_out_batch: i64,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        WebhooksConfig {
            poll_interval: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            concurrency: 64,
            per_endpoint: 2,
            retry_schedule: default_retry_schedule(),
            max_response_bytes: 64 * 1024,
            snippet_bytes: 1024,
            fan_out_batch: 100,
        }
    }
}

/// See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct Dispatcher {
    store: Store,
    secrets: SecretBox,
    client: DeliveryClient,
    config: Arc<WebhooksConfig>,
    owner: Arc<str>,
    wake_sender: Arc<Notify>,
    /// Wakes fan-out at once (the API after it recorded an event that
    /// someone waits for: `test`).
    wake_fan_out: Arc<Notify>,
    wakes: Option<Arc<tokio::sync::Mutex<WakeReceiver>>>,
    metrics: Option<Arc<Metrics>>,
}

impl Dispatcher {
    /// The `controller` label of its attempts in the metrics.
    pub const NAME: &'static str = "webhook_dispatcher";

    /// A dispatcher sending as replica `owner` under the operator's URL
    /// `policy` (the same the API checks endpoint URLs with).
    pub fn new(
        store: Store,
        secrets: SecretBox,
        policy: UrlPolicy,
        config: WebhooksConfig,
        owner: &str,
    ) -> Result<Self> {
        let limits = ClientLimits {
            timeout: config.timeout,
            max_response_bytes: config.max_response_bytes,
            snippet_bytes: config.snippet_bytes,
        };
        let client = DeliveryClient::new(policy, limits).map_err(Error::Webhooks)?;
        Ok(Dispatcher {
            store,
            secrets,
            client,
            config: Arc::new(config),
            owner: owner.into(),
            wake_sender: Arc::new(Notify::new()),
            wake_fan_out: Arc::new(Notify::new()),
            wakes: None,
            metrics: None,
        })
    }

    /// Fans out as soon as `wakes` (kind `Webhooks`) says an event waits,
    /// not only every `poll_interval`.
    pub fn with_wakes(mut self, wakes: WakeReceiver) -> Self {
        self.wakes = Some(Arc::new(tokio::sync::Mutex::new(wakes)));
        self
    }

    /// Counts its attempts in `metrics` (see the [module documentation](self)).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        metrics.controllers.passes_started(Self::NAME);
        self.metrics = Some(metrics);
        self
    }

    /// Runs fan-out and sending until `shutdown`; attempts in flight then
    /// get their timeout to finish.
    pub async fn run(self, shutdown: CancellationToken) {
        match webhook_dispatch::release_claims(&self.store, &self.owner).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(claims = n, "webhook deliveries interrupted by a restart are due again"),
            Err(e) => tracing::warn!(error = %e, "cannot release this replica's webhook claims; they expire"),
        }
        let forward = {
            let (wakes, notify, shutdown) = (self.wakes.clone(), self.wake_fan_out.clone(), shutdown.clone());
            async move {
                let Some(wakes) = wakes else { return };
                let mut wakes = wakes.lock().await;
                loop {
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        woken = wakes.recv() => match woken {
                            Some(_) => notify.notify_one(),
                            None => return,
                        },
                    }
                }
            }
        };
        tokio::join!(self.clone().fan_out_loop(shutdown.clone()), self.send_loop(shutdown), forward);
    }

    async fn fan_out_loop(self, shutdown: CancellationToken) {
        loop {
            let more = match self.fan_out_once().await {
                Ok(n) => n >= self.config.fan_out_batch,
                Err(e) => {
                    tracing::warn!(error = %e, "webhook fan-out failed; retrying");
                    false
                }
            };
            if more {
                continue;
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = self.wake_fan_out.notified() => {}
                () = tokio::time::sleep(self.config.poll_interval) => {}
            }
        }
    }

    /// Fans out one batch of undispatched events, in one transaction; how
    /// many were read.
    pub async fn fan_out_once(&self) -> Result<i64> {
        let batch = events::undispatched(&self.store, self.config.fan_out_batch).await?;
        if batch.is_empty() {
            return Ok(0);
        }
        let fanned = webhook_dispatch::fan_out_all(&self.store, &batch).await?;
        for (event, recipients) in batch.iter().zip(&fanned) {
            if !recipients.is_empty() {
                tracing::debug!(event = event.id, endpoints = ?recipients, "webhook deliveries created");
            }
        }
        if fanned.iter().any(|r| !r.is_empty()) {
            self.wake_sender.notify_one();
        }
        Ok(i64::try_from(batch.len()).unwrap_or(i64::MAX))
    }

    /// Records the outcomes `attempts` send, as many at once as have
    /// arrived (at most [`RECORD_BATCH`]), until every sender is gone; then
    /// tells each attempt its outcome is written.
    async fn record_loop(store: Store, mut outcomes: mpsc::Receiver<Recording>) {
        while let Some(first) = outcomes.recv().await {
            let mut batch = vec![first];
            while batch.len() < RECORD_BATCH {
                match outcomes.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let (batch, written): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
            send::record(&store, batch).await;
            for written in written {
                let _ = written.send(());
            }
        }
    }

    async fn send_loop(self, shutdown: CancellationToken) {
        let permits = Arc::new(Semaphore::new(self.config.concurrency.max(1)));
        let in_flight: Arc<Mutex<HashMap<i64, usize>>> = Arc::default();
        let tasks = TaskTracker::new();
        let limits = |total| ClaimLimits {
            total,
            per_endpoint: self.config.per_endpoint.max(1),
            hold: self.config.timeout * 2 + Duration::from_secs(30),
        };
        // Claiming is a write transaction: after a wake by one finished
        // attempt, wait until a batch of slots is free (or the poll timer)
        // rather than claim one delivery per transaction.
        let batch = (self.config.concurrency / 8).max(1);
        // Outcomes are written by one recorder, many per transaction. An
        // attempt frees its slots only once its outcome is written: until
        // then the endpoint's state (a 410 disables it, a success resets
        // its failures) is not what the next claim must see, and no more
        // outcomes wait than attempts may run.
        let (outcomes, queued) = mpsc::channel(self.config.concurrency.max(1));
        let recorder = tokio::spawn(Self::record_loop(self.store.clone(), queued));
        let mut polled = true;
        while !shutdown.is_cancelled() {
            let free = permits.available_permits();
            if free >= batch || (polled && free > 0) {
                let busy = in_flight.lock().map(|m| m.clone()).unwrap_or_default();
                match webhook_dispatch::claim_due(&self.store, &self.secrets, &self.owner, limits(free), &busy).await {
                    Ok(claimed) => {
                        for delivery in claimed {
                            let Ok(permit) = permits.clone().try_acquire_owned() else { break };
                            if let Ok(mut m) = in_flight.lock() {
                                *m.entry(delivery.endpoint_id).or_default() += 1;
                            }
                            let (this, in_flight, outcomes) = (self.clone(), in_flight.clone(), outcomes.clone());
                            tasks.spawn(async move {
                                let endpoint = delivery.endpoint_id;
                                // In flight until its outcome is written and its slots freed.
                                let _work = this.metrics.as_ref().map(|m| m.controllers.work_started(Self::NAME));
                                let started = tokio::time::Instant::now();
                                let done = send::attempt(&this.client, &this.config.retry_schedule, delivery).await;
                                if let Some(metrics) = &this.metrics {
                                    send::count(metrics, Self::NAME, done.as_ref(), started.elapsed());
                                }
                                if let Some(done) = done {
                                    let (written, recorded) = oneshot::channel();
                                    // Closed only once every attempt ended.
                                    if outcomes.send((done, written)).await.is_ok() {
                                        let _ = recorded.await;
                                    }
                                }
                                if let Ok(mut m) = in_flight.lock()
                                    && let Some(n) = m.get_mut(&endpoint)
                                {
                                    *n -= 1;
                                    if *n == 0 {
                                        m.remove(&endpoint);
                                    }
                                }
                                drop(permit);
                                this.wake_sender.notify_one();
                            });
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot claim due webhook deliveries; retrying"),
                }
            }
            polled = tokio::select! {
                () = shutdown.cancelled() => break,
                () = self.wake_sender.notified() => false,
                () = tokio::time::sleep(self.config.poll_interval) => true,
            };
        }
        tasks.close();
        let grace = self.config.timeout + Duration::from_secs(1);
        if tokio::time::timeout(grace, tasks.wait()).await.is_err() {
            tracing::warn!("webhook attempts still running at shutdown; they are sent again after a restart");
        }
        // The recorder writes what has arrived, then ends with the last
        // sender (attempts cut off above hold theirs until dropped).
        drop(outcomes);
        if tokio::time::timeout(Duration::from_secs(5), recorder).await.is_err() {
            tracing::warn!("webhook outcomes not all recorded at shutdown; those attempts are made again");
        }
    }
}
