//! A local-engine Playroom: the machine's own Docker socket, no SSH.
//!
//! Only the byte stream differs from an SSH Playroom; HTTP, timeouts, metrics
//! and bollard are the same code ([`super::tunnel`]).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use play_model::host::HostError;

use super::tunnel::{Dialer, HostStream};

/// Dials the Unix socket at `path`, once per HTTP connection.
#[derive(Debug, Clone)]
pub struct LocalDialer {
    path: PathBuf,
}

impl LocalDialer {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        LocalDialer { path: path.into() }
    }

    pub async fn connect(&self) -> Result<HostStream, HostError> {
        tokio::net::UnixStream::connect(&self.path).await.map(HostStream::new).map_err(|e| classify(&self.path, &e))
    }
}

impl Dialer for LocalDialer {
    fn dial(self: Arc<Self>) -> BoxFuture<'static, io::Result<HostStream>> {
        Box::pin(async move { self.connect().await.map_err(io::Error::other) })
    }
}

fn classify(path: &std::path::Path, e: &io::Error) -> HostError {
    let shown = path.display();
    match e.kind() {
        io::ErrorKind::NotFound => HostError::SocketMissing(format!("{shown} does not exist; is Docker running?")),
        io::ErrorKind::PermissionDenied => {
            HostError::PermissionDenied(format!("play's user may not open {shown}; add it to the docker group"))
        }
        io::ErrorKind::ConnectionRefused => {
            HostError::Unreachable(format!("nothing listens on {shown} (a stale socket: is Docker running?)"))
        }
        _ => HostError::Protocol(format!("{shown}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_socket_is_socket_missing() {
        let dir = tempfile::tempdir().unwrap();
        let dialer = LocalDialer::new(dir.path().join("absent.sock"));
        let err = dialer.connect().await.unwrap_err();
        assert!(matches!(err, HostError::SocketMissing(_)), "{err:?}");
    }

    #[tokio::test]
    async fn a_socket_nobody_listens_on_is_unreachable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stale.sock");
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let err = LocalDialer::new(&path).connect().await.unwrap_err();
        assert!(matches!(err, HostError::Unreachable(_)), "{err:?}");
    }
}
