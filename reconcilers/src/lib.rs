//! play's reconcile runtime, the reconcilers, and host access (`host`): russh
//! to the Playroom's sshd, a `direct-streamlocal` channel to the Docker
//! socket, bollard on top.

pub mod docker;
pub mod edge;
pub mod error;
pub mod heartbeat;
pub mod host;
pub mod launching;
pub mod loops;
pub mod playground;
pub mod playroom;
pub mod playzone;
pub mod runtime;
pub mod schedule;
pub mod trigger;
pub mod wake_relay;
pub mod webhooks;

pub use error::{Error, Result};
