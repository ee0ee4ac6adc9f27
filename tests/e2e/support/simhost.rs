//! A simulated Docker host (`play-simhost`) on a socket in a temporary
//! directory, served by a task of the test's runtime and stopped on drop.
//! It has the harness's test image and refuses pulls, as a test machine
//! with no registry access would.

use std::path::PathBuf;
use std::sync::Arc;

use play_simhost::{Latency, SimConfig, SimEngine};
use tokio::task::JoinHandle;

use super::docker::BUSYBOX_IMAGE;

pub struct SimHost {
    pub engine: Arc<SimEngine>,
    pub socket: PathBuf,
    task: JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl SimHost {
    /// Starts serving at once (the socket is bound before this returns);
    /// call it inside a tokio runtime.
    pub fn start() -> SimHost {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = dir.path().join("host-0.sock");
        let config = SimConfig { images: vec![BUSYBOX_IMAGE.to_owned()], pullable: false, name: "sim".to_owned() };
        let engine = Arc::new(SimEngine::new(config));
        let listener = play_simhost::bind(&socket).expect("bind the simulated host's socket");
        let served = Arc::clone(&engine);
        let task = tokio::spawn(async move {
            if let Err(e) = play_simhost::serve(listener, served, Latency::default()).await {
                panic!("the simulated host stopped: {e}");
            }
        });
        SimHost { engine, socket, task, _dir: dir }
    }

    /// The create body of a local Playroom at this host's socket, edge off.
    pub fn playroom_body(&self, name: &str) -> serde_json::Value {
        serde_json::json!({"playroom": {"name": name, "connection": "local",
                           "docker_socket": self.socket.to_string_lossy(), "edge": {"enabled": false}}})
    }
}

impl Drop for SimHost {
    fn drop(&mut self) {
        self.task.abort();
    }
}
