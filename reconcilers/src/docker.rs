//! Docker helpers shared by every loop that talks to an engine (the
//! Playground reconciler, the Playroom sweep, the event watchers, the API's
//! live reads through the gateway). One home per idea, so a bound or a
//! policy (a log byte cap, an ownership check) is written once.
//!
//! - [`labels`]: the label filters of list and event calls.
//! - [`ownership`]: whether an object's labels make it this installation's,
//!   or one Playground's.
//! - [`inspect`]: a container's state, exit code and health, read once.
//! - [`remove`]: graceful stop, and removal of containers, networks and
//!   volumes, where gone already is success.
//! - [`logs`]: the bounded end of a container's log.
//! - [`edge_network`]: a Playroom's edge network, found or created for the
//!   Playground loop and the edge loop alike.
//!
//! What is here is mechanism over a `bollard::Docker` and labels: nothing
//! here reads the store, plans, or knows which loop calls it, and no module
//! here imports a loop (`playground`, `sweep`, `events`) or `host`: they
//! import this one.

pub mod edge_network;
pub mod inspect;
pub mod labels;
pub mod logs;
pub mod ownership;
pub mod remove;

use bollard::errors::Error as BollardError;

/// The HTTP status of the engine's answer when it refused a call (404 gone,
/// 409 conflict, 304 already so); `None` when the call failed on the way.
pub fn status_of(e: &BollardError) -> Option<u16> {
    match e {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}
