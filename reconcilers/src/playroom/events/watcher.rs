//! One Playroom's watcher: follows its engine's event stream, reconnecting
//! with backoff, and sends the Playground ids the events name.
//!
//! Owns the subscription and which events count; the installation filter
//! and the ownership check of an event's labels are `crate::docker`'s. It
//! only wakes Playgrounds: it never changes anything on the host.

use std::sync::Arc;
use std::time::Duration;

use bollard::Docker;
use bollard::models::EventMessage;
use bollard::query_parameters::EventsOptions;
use futures::{Stream, StreamExt};
use play_model::model::playroom::WatchedPlayroom;
use play_store::playrooms;
use play_store::sweep;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::throttle::Wake;
use super::{ACTIONS, PlaygroundEvents};
use crate::docker::{labels, ownership};
use crate::runtime::Backoff;
use crate::{Error, Result};

/// Follows one Playroom's events until stopped.
pub(super) struct Watcher {
    pub(super) events: Arc<PlaygroundEvents>,
    pub(super) room: WatchedPlayroom,
    pub(super) installation: String,
    pub(super) tx: mpsc::Sender<Wake>,
    pub(super) stop: CancellationToken,
}

impl Watcher {
    pub(super) async fn run(self) {
        let room = self.room.id;
        tracing::debug!(playroom = room, "watching the Playroom's Docker events");
        let config = &self.events.config;
        let mut reconnects = Reconnects::default();
        loop {
            let opened = Instant::now();
            let mut subscribed = false;
            let outcome = tokio::select! {
                () = self.stop.cancelled() => break,
                outcome = self.follow(&mut subscribed) => outcome,
            };
            if self.tx.is_closed() {
                break;
            }
            // A host that could not be reached is probed on a short fixed
            // period (issue #51, item 2: after a 30 s outage the backoff
            // had grown to seconds, and the Playgrounds' errors cleared
            // 6 s after the host was back); only a stream that opened and
            // dropped backs off, since each open wakes every Playground.
            let delay = match subscribed {
                true => reconnects.after(opened.elapsed(), config.stable_after, &config.backoff),
                false => config.probe_every,
            };
            match outcome {
                Ok(()) => tracing::debug!(playroom = room, ?delay, "the Docker event stream ended; reconnecting"),
                Err(error) => {
                    tracing::warn!(playroom = room, %error, ?delay, "the Docker event stream failed; reconnecting");
                }
            }
            tokio::select! {
                () = self.stop.cancelled() => break,
                () = tokio::time::sleep(delay) => {}
            }
        }
        tracing::debug!(playroom = room, "stopped watching the Playroom's Docker events");
    }

    /// Connects, subscribes to the events from the engine's present
    /// instant on, wakes every Playground of the Playroom, then forwards
    /// events until the stream ends.
    ///
    /// Why in this order (on every connect, the first included): the passes
    /// the wake-up starts observe the host after `since`, and every change
    /// after `since` arrives as an event, however long the engine takes to
    /// answer the subscription. A change made while the Playroom was not yet
    /// watched, or while the stream was down, is therefore always followed
    /// by a full observe.
    ///
    /// `subscribed` is set once the engine answered and every Playground
    /// was woken: an error before that is a host not reached.
    async fn follow(&self, subscribed: &mut bool) -> Result<()> {
        let e = &self.events;
        let (_, target) = playrooms::target(&e.store, &e.secrets, self.room.account_id, self.room.id).await?;
        let docker = e.gateway.docker(&target).await?;
        let since = engine_now(&docker).await?;
        let mut stream = subscribe(&docker, &self.installation, &since);
        for id in sweep::playgrounds_in(&e.store, self.room.id).await? {
            self.send(Wake::of(id)).await;
        }
        *subscribed = true;
        while let Some(event) = stream.next().await {
            let event = event.map_err(|e| Error::docker("events", e))?;
            if let Some(id) = playground_of(&event, &self.installation) {
                tracing::debug!(playroom = self.room.id, playground = id, action = ?event.action, "Docker event");
                let health = event.action.as_deref().is_some_and(|a| a.starts_with("health_status"));
                self.send(Wake { id, health }).await;
            }
        }
        Ok(())
    }

    async fn send(&self, wake: Wake) {
        // Fails only when the runtime is gone; `run` then stops.
        let _ = self.tx.send(wake).await;
    }
}

/// When to reconnect after a stream ended: at once after a healthy one,
/// then backing off.
///
/// Invariants: the first reconnect after a stream that stayed open at
/// least `stable_after` is immediate (a host restarting its sshd, or a
/// network blip, is watched again, and fully observed, without waiting
/// out a delay); every further stream that ends sooner than that counts as
/// one more consecutive failure and waits `backoff.delay(failures)`, so a
/// connection that opens and drops in a loop, each open waking every
/// Playground of the Playroom, is retried ever more slowly (up to
/// `backoff.max`). A failure to connect does not count: it wakes nothing,
/// and is tried again every `EventsConfig::probe_every`.
#[derive(Debug, Default)]
struct Reconnects {
    /// Consecutive streams (or attempts) that ended before `stable_after`.
    failures: u32,
}

impl Reconnects {
    /// The delay before the next attempt, after one that lasted `lived`.
    fn after(&mut self, lived: Duration, stable_after: Duration, backoff: &Backoff) -> Duration {
        if lived >= stable_after {
            self.failures = 0;
        }
        let delay = if self.failures == 0 { Duration::ZERO } else { backoff.delay(self.failures) };
        self.failures = self.failures.saturating_add(1);
        delay
    }
}

/// The engine's present instant, in the `seconds.nanoseconds` form the
/// events endpoint takes as `since`. The engine's own clock, not play's:
/// the two may disagree, and events are stamped by the engine.
async fn engine_now(docker: &Docker) -> Result<String> {
    let info = docker.info().await.map_err(|e| Error::docker("info", e))?;
    let text = info.system_time.unwrap_or_default();
    since_param(&text).ok_or_else(|| {
        Error::Host(play_model::host::HostError::Protocol(format!(
            "the engine reported its time as {text:?}, not an RFC 3339 time"
        )))
    })
}

/// `seconds.nanoseconds` of an RFC 3339 time (`SystemTime` of `/info`).
fn since_param(rfc3339: &str) -> Option<String> {
    let at = chrono::DateTime::parse_from_rfc3339(rfc3339).ok()?;
    Some(format!("{}.{:09}", at.timestamp(), at.timestamp_subsec_nanos()))
}

/// The event stream of `installation`'s containers, [`ACTIONS`] only, from
/// `since` (see [`since_param`]) on.
fn subscribe(
    docker: &Docker,
    installation: &str,
    since: &str,
) -> impl Stream<Item = Result<EventMessage, bollard::errors::Error>> {
    let mut filters = labels::of_installation(installation);
    filters.insert("type".to_owned(), vec!["container".to_owned()]);
    filters.insert("event".to_owned(), ACTIONS.iter().map(|a| (*a).to_owned()).collect());
    let options = EventsOptions { since: Some(since.to_owned()), filters: Some(filters), ..Default::default() };
    docker.events(Some(options))
}

/// The Playground an event is about, if it is a state change of one of
/// `installation`'s containers. The engine already filtered; checking again
/// keeps an engine that ignores a filter from waking anything it should not.
pub fn playground_of(event: &EventMessage, installation: &str) -> Option<i64> {
    use bollard::models::EventMessageTypeEnum;
    if event.typ != Some(EventMessageTypeEnum::CONTAINER) {
        return None;
    }
    let action = event.action.as_deref()?;
    let name = action.split(':').next().unwrap_or(action);
    if !ACTIONS.contains(&name) {
        return None;
    }
    ownership::playground_of(event.actor.as_ref()?.attributes.as_ref()?, installation)
}

#[cfg(test)]
mod tests {

    use bollard::models::{EventActor, EventMessageTypeEnum};
    use play_model::desired::{LABEL_INSTALLATION, LABEL_PLAYGROUND};

    use super::*;

    fn event(typ: EventMessageTypeEnum, action: &str, labels: &[(&str, &str)]) -> EventMessage {
        EventMessage {
            typ: Some(typ),
            action: Some(action.to_owned()),
            actor: Some(EventActor {
                id: Some("c0ffee".into()),
                attributes: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_healthy_stream_reconnects_at_once_and_short_ones_back_off() {
        let backoff = Backoff { initial: Duration::from_millis(250), max: Duration::from_secs(60) };
        let stable = Duration::from_secs(10);
        let mut r = Reconnects::default();
        // The first stream stayed up: reconnect at once.
        assert_eq!(r.after(Duration::from_secs(60), stable, &backoff), Duration::ZERO);
        // Then each short one waits longer (the ceiling doubles).
        let mut ceilings = Vec::new();
        for _ in 0..10 {
            let delay = r.after(Duration::from_millis(300), stable, &backoff);
            assert!(delay >= backoff.initial, "{delay:?}");
            ceilings.push(backoff.ceiling(r.failures - 1));
            assert!(delay <= *ceilings.last().unwrap(), "{delay:?}");
        }
        assert_eq!(ceilings[0], Duration::from_millis(500));
        assert_eq!(ceilings[9], Duration::from_secs(60), "capped at the maximum");
        // A healthy stream again: at once, and the backoff starts over.
        assert_eq!(r.after(stable, stable, &backoff), Duration::ZERO);
        let next = r.after(Duration::ZERO, stable, &backoff);
        assert!(next <= Duration::from_millis(500), "{next:?}");
    }

    #[test]
    fn since_is_the_engines_time_in_seconds_and_nanoseconds() {
        assert_eq!(since_param("2024-05-01T10:00:00.123456789Z").as_deref(), Some("1714557600.123456789"));
        assert_eq!(since_param("2024-05-01T12:00:00.5+02:00").as_deref(), Some("1714557600.500000000"));
        assert_eq!(since_param(""), None);
        assert_eq!(since_param("yesterday"), None);
    }

    #[test]
    fn state_changes_of_this_installations_containers_name_their_playground() {
        let ours = [(LABEL_INSTALLATION, "abc"), (LABEL_PLAYGROUND, "7"), ("name", "play-abc-7-x-app-1")];
        let container = EventMessageTypeEnum::CONTAINER;
        assert_eq!(playground_of(&event(container, "die", &ours), "abc"), Some(7));
        assert_eq!(playground_of(&event(container, "destroy", &ours), "abc"), Some(7));
        assert_eq!(playground_of(&event(container, "health_status: unhealthy", &ours), "abc"), Some(7));
        assert_eq!(playground_of(&event(container, "exec_start: true", &ours), "abc"), None, "healthcheck noise");
        assert_eq!(playground_of(&event(container, "attach", &ours), "abc"), None);
        assert_eq!(playground_of(&event(EventMessageTypeEnum::NETWORK, "destroy", &ours), "abc"), None);
        assert_eq!(playground_of(&event(container, "die", &ours), "other"), None, "another installation");
        let no_id = [(LABEL_INSTALLATION, "abc")];
        assert_eq!(playground_of(&event(container, "die", &no_id), "abc"), None);
        assert_eq!(playground_of(&EventMessage::default(), "abc"), None);
    }
}
