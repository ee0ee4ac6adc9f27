//! [`SimEngine`]: one simulated Docker host's objects, in memory.
//!
//! Invariants:
//! - every change is made under the one state lock and its events are sent
//!   while the lock is held, so a subscriber sees events in the order the
//!   changes were made (as the engine's `/events` stream does);
//! - names are unique per kind (containers, networks, volumes), as the
//!   engine's are; ids are 64 hex digits, and an object is found by id, by
//!   an unambiguous id prefix or by name, as `docker inspect` finds it;
//! - a container's networks and volumes exist for as long as it refers to
//!   them: removing a network with endpoints or a volume in use is refused
//!   (403 / 409), as the engine refuses it;
//! - no process runs: a started container runs until it is killed, stopped
//!   or removed, except that the commands `true` and `false` exit at once
//!   with 0 and 1 (so one-shot services complete). A container with a
//!   healthcheck is healthy once started.

pub mod archives;
mod container;
mod containers;
mod images;
mod networks;
mod volumes;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use bollard::models::{EventActor, EventMessage, EventMessageScopeEnum, EventMessageTypeEnum};
use tokio::sync::broadcast;

pub use container::{Container, RunState, VolumeMount};
pub use images::normalise as normalise_image;
use networks::Net;
use volumes::Vol;

use crate::{Error, Result};

/// How many events a slow `/events` subscriber may fall behind before it
/// misses some (it then skips ahead, as a lagging engine client would
/// reconnect; play's periodic resync covers what it missed).
const EVENT_BACKLOG: usize = 4096;

/// What the simulated host has before anyone asks it for anything.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Images present from the start (any spelling: `busybox`,
    /// `busybox:latest` and `docker.io/library/busybox:latest` are one).
    pub images: Vec<String>,
    /// Whether a pull of an image not present succeeds (it then is present);
    /// when false, a pull is refused as for a private repository.
    pub pullable: bool,
    /// The host's name in `/info`.
    pub name: String,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig { images: Vec::new(), pullable: true, name: "simhost".to_owned() }
    }
}

/// One simulated Docker host. Shared by its HTTP server and, in tests, by
/// the code that changes the host behind play's back (drift).
#[derive(Debug)]
pub struct SimEngine {
    state: Mutex<State>,
    events: broadcast::Sender<EventMessage>,
    config: SimConfig,
}

#[derive(Debug, Default)]
struct State {
    containers: BTreeMap<String, Container>,
    networks: BTreeMap<String, Net>,
    volumes: BTreeMap<String, Vol>,
    images: BTreeSet<String>,
}

impl SimEngine {
    pub fn new(config: SimConfig) -> SimEngine {
        let mut state =
            State { images: config.images.iter().map(|i| normalise_image(i)).collect(), ..State::default() };
        for name in networks::PREDEFINED {
            let net = Net::predefined(name);
            state.networks.insert(net.id.clone(), net);
        }
        let (events, _) = broadcast::channel(EVENT_BACKLOG);
        SimEngine { state: Mutex::new(state), events, config }
    }

    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// Events from now on, in the order the changes were made.
    pub fn subscribe(&self) -> broadcast::Receiver<EventMessage> {
        self.events.subscribe()
    }

    /// The lock is never held across an await, and a panic while holding it
    /// leaves whole objects behind (every change is one map insert or
    /// remove), so a poisoned lock is still good to use.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends one event (with the lock held by the caller: see the invariants).
    fn emit(&self, typ: EventMessageTypeEnum, action: &str, id: &str, attributes: HashMap<String, String>) {
        let now = chrono::Utc::now();
        let nanos = now.timestamp_nanos_opt().unwrap_or_default();
        let event = EventMessage {
            typ: Some(typ),
            action: Some(action.to_owned()),
            actor: Some(EventActor { id: Some(id.to_owned()), attributes: Some(attributes) }),
            scope: Some(EventMessageScopeEnum::LOCAL),
            time: Some(now.timestamp()),
            time_nano: Some(nanos),
        };
        // No subscriber is no error: the engine does not keep events either.
        let _ = self.events.send(event);
    }
}

/// A new object id: 64 hex digits, as the engine's.
fn new_id() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The engine's clock as its API writes it (RFC 3339, nanoseconds).
pub(crate) fn now_text() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// Finds the key of an object by id, unambiguous id prefix or name.
fn find<'a, T>(
    objects: &'a BTreeMap<String, T>,
    reference: &str,
    name_of: impl Fn(&T) -> &str,
    missing: impl FnOnce() -> Error,
) -> Result<&'a str> {
    let reference = reference.trim_start_matches('/');
    if let Some((id, _)) = objects.get_key_value(reference) {
        return Ok(id);
    }
    if let Some((id, _)) = objects.iter().find(|(_, o)| name_of(o) == reference) {
        return Ok(id);
    }
    let mut prefixed = objects.keys().filter(|id| !reference.is_empty() && id.starts_with(reference));
    match (prefixed.next(), prefixed.next()) {
        (Some(id), None) => Ok(id),
        (Some(_), Some(_)) => Err(Error::NotFound(format!("multiple IDs found with provided prefix: {reference}"))),
        _ => Err(missing()),
    }
}

/// What `/info` counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub containers: usize,
    pub running: usize,
    pub images: usize,
    pub networks: usize,
    pub volumes: usize,
}

impl SimEngine {
    pub fn counts(&self) -> Counts {
        let state = self.lock();
        Counts {
            containers: state.containers.len(),
            running: state.containers.values().filter(|c| c.is_running()).count(),
            images: state.images.len(),
            networks: state.networks.len(),
            volumes: state.volumes.len(),
        }
    }
}
