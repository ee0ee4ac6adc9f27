//! What a test sees of a Playground on its Playroom's host, and how it
//! changes the host behind play's back, whichever host that is: the
//! machine's Docker engine (through the `docker` CLI) or a simulated one
//! (through its [`SimEngine`]). The shared scenarios (`super::scenarios`)
//! touch the host only through [`HostView`], so one body runs on both.
//!
//! Both views read a container as the engine's inspect document (`docker
//! inspect`; the simulator's own `Container::inspect`, the document it
//! serves play), so a [`Seen`] means the same on either host. Every
//! question is scoped by the world's installation label as well as the
//! Playground's, so a test never sees another test's Playground with the
//! same id.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;

use play_simhost::SimEngine;
use play_simhost::filters::Filters;
use serde_json::Value;

use super::world::docker_lines;

/// The host as the shared scenarios observe and disturb it.
pub trait HostView {
    /// The containers labelled for Playground `id`, by name.
    fn containers(&self, id: i64) -> BTreeMap<String, Seen>;
    /// Names of the networks labelled for Playground `id`.
    fn networks(&self, id: i64) -> Vec<String>;
    /// Names of the volumes labelled for Playground `id`.
    fn volumes(&self, id: i64) -> Vec<String>;
    /// Networks and volumes whose name contains `project`, labelled or not
    /// (the engine makes a named volume a container mounts without labels
    /// when it is missing).
    fn named_for(&self, project: &str) -> Vec<String>;
    /// Removes `container`, running or not (`docker rm -f`).
    fn remove(&self, container: &str);
    /// Kills `container`'s process with SIGKILL (`docker kill`).
    fn kill(&self, container: &str);
    /// Stops `container` (`docker stop`).
    fn stop(&self, container: &str);
    /// Leaves an empty file at `path`, which must lie in a named volume
    /// `container` mounts (the simulator keeps files only there).
    fn touch(&self, container: &str, path: &str);
    /// Whether `path` exists in `container` (in a named volume it mounts).
    fn exists(&self, container: &str, path: &str) -> bool;
}

/// A container as the engine's inspect document describes it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub id: String,
    pub running: bool,
    pub labels: HashMap<String, String>,
    pub env: Vec<String>,
    /// Names of the networks it is attached to.
    pub networks: Vec<String>,
    /// (volume name, target) of every named volume it mounts.
    pub volumes: Vec<(String, String)>,
}

impl Seen {
    /// Reads an inspect document (the engine's `ContainerInspectResponse`
    /// as JSON): (name without the leading `/`, what it holds).
    fn from_inspect(doc: &Value) -> (String, Seen) {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let name = text(&doc["Name"]).trim_start_matches('/').to_owned();
        let labels = serde_json::from_value(doc["Config"]["Labels"].clone()).unwrap_or_default();
        let env = serde_json::from_value(doc["Config"]["Env"].clone()).unwrap_or_default();
        let networks = doc["NetworkSettings"]["Networks"].as_object().map(|n| n.keys().cloned().collect());
        let mounts = doc["Mounts"].as_array().map(Vec::as_slice).unwrap_or_default();
        let volumes = mounts
            .iter()
            .filter(|m| m["Type"] == "volume")
            .map(|m| (text(&m["Name"]), text(&m["Destination"])))
            .collect();
        let seen = Seen {
            id: text(&doc["Id"]),
            running: doc["State"]["Running"] == true,
            labels,
            env,
            networks: networks.unwrap_or_default(),
            volumes,
        };
        (name, seen)
    }
}

/// The machine's Docker engine, through the `docker` CLI.
pub struct RealEngine {
    installation: String,
}

impl RealEngine {
    pub fn new(installation: &str) -> RealEngine {
        RealEngine { installation: installation.to_owned() }
    }

    /// `docker <args> --filter <Playground id's labels>`: output lines.
    fn labelled(&self, args: &[&str], id: i64) -> Vec<String> {
        let playground = format!("label=dev.play.playground={id}");
        let installation = format!("label=dev.play.installation={}", self.installation);
        docker_lines(&[args, &["--filter", &playground, "--filter", &installation]].concat())
    }
}

impl HostView for RealEngine {
    fn containers(&self, id: i64) -> BTreeMap<String, Seen> {
        let names = self.labelled(&["ps", "-a", "--format", "{{.Names}}"], id);
        if names.is_empty() {
            return BTreeMap::new();
        }
        // A container play removes between the two calls is missing from
        // the answer (and makes the command fail): it is gone, so skip it.
        let out = Command::new("docker").arg("inspect").args(&names).output().expect("run docker inspect");
        let docs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
        docs.iter().map(Seen::from_inspect).collect()
    }

    fn networks(&self, id: i64) -> Vec<String> {
        self.labelled(&["network", "ls", "--format", "{{.Name}}"], id)
    }

    fn volumes(&self, id: i64) -> Vec<String> {
        self.labelled(&["volume", "ls", "--format", "{{.Name}}"], id)
    }

    fn named_for(&self, project: &str) -> Vec<String> {
        let filter = format!("name={project}");
        let mut all = docker_lines(&["network", "ls", "--filter", &filter, "--format", "{{.Name}}"]);
        all.extend(docker_lines(&["volume", "ls", "--filter", &filter, "--format", "{{.Name}}"]));
        all
    }

    fn remove(&self, container: &str) {
        super::run(Command::new("docker").args(["rm", "-f", container]));
    }

    fn kill(&self, container: &str) {
        super::run(Command::new("docker").args(["kill", container]));
    }

    fn stop(&self, container: &str) {
        super::run(Command::new("docker").args(["stop", "--time", "1", container]));
    }

    fn touch(&self, container: &str, path: &str) {
        super::run(Command::new("docker").args(["exec", container, "touch", path]));
    }

    fn exists(&self, container: &str, path: &str) -> bool {
        let status = Command::new("docker").args(["exec", container, "test", "-e", path]).status();
        status.expect("run docker exec").success()
    }
}

/// A simulated engine, through its in-process state.
pub struct SimulatedEngine {
    engine: Arc<SimEngine>,
    installation: String,
}

impl SimulatedEngine {
    pub fn new(engine: Arc<SimEngine>, installation: &str) -> SimulatedEngine {
        SimulatedEngine { engine, installation: installation.to_owned() }
    }

    fn of_playground(&self, id: i64) -> Filters {
        let playground = format!("dev.play.playground={id}");
        let installation = format!("dev.play.installation={}", self.installation);
        Filters::labels(&[&playground, &installation])
    }
}

impl HostView for SimulatedEngine {
    fn containers(&self, id: i64) -> BTreeMap<String, Seen> {
        let filter = self.of_playground(id);
        let ours = self.engine.containers().into_iter().filter(|c| filter.labels_match(&c.labels()));
        ours.map(|c| Seen::from_inspect(&serde_json::to_value(c.inspect()).expect("an inspect document"))).collect()
    }

    fn networks(&self, id: i64) -> Vec<String> {
        self.engine.list_networks(&self.of_playground(id)).into_iter().filter_map(|n| n.name).collect()
    }

    fn volumes(&self, id: i64) -> Vec<String> {
        self.engine.list_volumes(&self.of_playground(id)).into_iter().map(|v| v.name).collect()
    }

    fn named_for(&self, project: &str) -> Vec<String> {
        let everything = Filters::default();
        let networks = self.engine.list_networks(&everything).into_iter().filter_map(|n| n.name);
        let volumes = self.engine.list_volumes(&everything).into_iter().map(|v| v.name);
        networks.chain(volumes).filter(|name| name.contains(project)).collect()
    }

    fn remove(&self, container: &str) {
        self.engine.remove_container(container, true).expect("remove the container");
    }

    fn kill(&self, container: &str) {
        self.engine.kill_container(container, Some("SIGKILL")).expect("kill the container");
    }

    fn stop(&self, container: &str) {
        self.engine.stop_container(container).expect("stop the container");
    }

    /// Puts an archive holding the empty file into the directory, as
    /// `docker cp` does (the `tar` CLI makes it: the harness needs no tar
    /// crate).
    fn touch(&self, container: &str, path: &str) {
        let (dir, file) = path.rsplit_once('/').expect("an absolute path");
        let scratch = tempfile::tempdir().expect("temp dir");
        std::fs::write(scratch.path().join(file), b"").expect("write the file");
        let archive = super::run(Command::new("tar").arg("-C").arg(scratch.path()).args(["-cf", "-", file])).stdout;
        self.engine.put_archive(container, dir, &archive).expect("put the archive");
    }

    fn exists(&self, container: &str, path: &str) -> bool {
        self.engine.get_archive(container, path).is_ok()
    }
}
