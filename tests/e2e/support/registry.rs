//! Debian's `docker-registry` on a loopback port with htpasswd auth, holding
//! the test image.

use std::fs;
use std::io::Write as _;
use std::process::{Child, Command, Stdio};

use tempfile::TempDir;

use super::docker::{BUSYBOX_IMAGE, ensure_busybox_image};
use super::{free_port, require_binary, run, wait_for_port};

const REGISTRY: &str = "/usr/bin/docker-registry";
const HTPASSWD: &str = "/usr/bin/htpasswd";

/// A running registry with one user. 127.0.0.0/8 is an insecure registry by
/// default, so the engine talks plain HTTP to it. Stopped, and its tags
/// removed from the engine, on drop.
#[derive(Debug)]
pub struct Registry {
    dir: TempDir,
    pub port: u16,
    pub username: String,
    pub password: String,
    child: Child,
    tags: Vec<String>,
}

impl Registry {
    pub fn start() -> Registry {
        require_binary(REGISTRY, "docker-registry");
        require_binary(HTPASSWD, "apache2-utils");
        let dir = tempfile::Builder::new().prefix("play-registry-").tempdir().expect("temp dir");
        let (username, password) = ("play".to_owned(), format!("pw-{}", std::process::id()));
        let htpasswd = run(Command::new(HTPASSWD).args(["-Bbn", &username, &password])).stdout;
        fs::write(dir.path().join("htpasswd"), htpasswd).expect("write htpasswd");
        let port = free_port();
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {data}\n\
             http:\n  addr: 127.0.0.1:{port}\nauth:\n  htpasswd:\n    realm: play-test\n    path: {htpasswd}\n",
            data = dir.path().join("data").display(),
            htpasswd = dir.path().join("htpasswd").display(),
        );
        let config_path = dir.path().join("config.yml");
        fs::write(&config_path, config).expect("write registry config");
        let log = dir.path().join("registry.log");
        let log_file = fs::File::create(&log).expect("registry log");
        let child = Command::new(REGISTRY)
            .arg("serve")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log handle"))
            .stderr(log_file)
            .spawn()
            .expect("spawn docker-registry");
        wait_for_port(port, "docker-registry", &log);
        Registry { dir, port, username, password, child, tags: Vec::new() }
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Pushes the busybox test image as `<registry>/<repo>:1` and removes
    /// that tag from the engine again, so a later pull really pulls. Returns
    /// the full reference.
    pub fn push_test_image(&mut self, repo: &str) -> String {
        ensure_busybox_image();
        let reference = self.push(BUSYBOX_IMAGE, repo);
        self.untag(&reference);
        reference
    }

    /// Pushes the local image `local` as `<registry>/<repo>:1` (replacing
    /// what that tag held) and returns the full reference; the tag stays on
    /// the engine.
    pub fn push(&mut self, local: &str, repo: &str) -> String {
        let reference = format!("{}/{repo}:1", self.address());
        let config = self.dir.path().join("docker-config");
        fs::create_dir_all(&config).expect("docker config dir");
        let docker = |args: &[&str]| {
            let mut cmd = Command::new("docker");
            cmd.env("DOCKER_CONFIG", &config).args(args);
            cmd
        };
        let mut login = docker(&["login", "--username", &self.username, "--password-stdin"])
            .arg(self.address())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn docker login");
        login.stdin.take().expect("login stdin").write_all(self.password.as_bytes()).expect("write password");
        let login = login.wait_with_output().expect("docker login");
        assert!(
            login.status.success(),
            "docker login to the test registry failed: {}",
            String::from_utf8_lossy(&login.stderr)
        );
        if !self.tags.contains(&reference) {
            self.tags.push(reference.clone());
        }
        run(&mut docker(&["tag", local, &reference]));
        run(&mut docker(&["push", &reference]));
        reference
    }

    /// Removes a tag from the engine (keeps the layers other tags share).
    pub fn untag(&self, reference: &str) {
        let _ = Command::new("docker").args(["rmi", reference]).output();
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        for tag in &self.tags {
            self.untag(tag);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
