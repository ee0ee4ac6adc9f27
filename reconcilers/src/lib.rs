//! play's reconcile runtime, the reconcilers, and host access (`host`): russh
//! to the Playroom's sshd, a `direct-streamlocal` channel to the Docker
//! socket, bollard on top.

pub mod docker;
pub mod error;
pub mod events;
pub mod host;
pub mod playground;
pub mod runtime;
pub mod sweep;

pub use error::{Error, Result};
