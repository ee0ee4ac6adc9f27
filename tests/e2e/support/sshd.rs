//! Debian's sshd on a free loopback port with a throwaway configuration.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use play_model::host::{DEFAULT_DOCKER_SOCKET, HostKind, HostTarget};
use play_model::ssh_keys::{self, GeneratedKeyPair};
use tempfile::TempDir;

use super::{free_port, require_binary, run, wait_for_port};

const SSHD: &str = "/usr/sbin/sshd";

#[derive(Debug, Clone)]
pub struct SshdOptions {
    /// `AllowStreamLocalForwarding yes|no`: `no` forces the dial-stdio
    /// fallback.
    pub allow_streamlocal: bool,
}

impl Default for SshdOptions {
    fn default() -> Self {
        SshdOptions { allow_streamlocal: true }
    }
}

/// A running sshd. It logs in the machine's current user (root in CI) with
/// [`Sshd::client_key`] and reaches the machine's Docker socket. Killed, with
/// its session processes, on drop.
#[derive(Debug)]
pub struct Sshd {
    dir: TempDir,
    pub port: u16,
    pub user: String,
    pub client_key: GeneratedKeyPair,
    /// The server's host key as an OpenSSH public key line.
    pub host_key: String,
    options: SshdOptions,
    child: Option<Child>,
}

impl Sshd {
    pub fn start() -> Sshd {
        Sshd::start_with(SshdOptions::default())
    }

    pub fn start_with(options: SshdOptions) -> Sshd {
        require_binary(SSHD, "openssh-server");
        // sshd's privilege separation directory; Debian creates it at boot.
        fs::create_dir_all("/run/sshd").expect("create /run/sshd");
        let dir = tempfile::Builder::new().prefix("play-sshd-").tempdir().expect("temp dir");
        let client_key = ssh_keys::generate_ed25519("play-test").expect("client key");
        fs::write(dir.path().join("authorized_keys"), &client_key.public_openssh).expect("write authorized_keys");
        let user = String::from_utf8_lossy(&run(Command::new("id").arg("-un")).stdout).trim().to_owned();
        let mut sshd = Sshd { dir, port: free_port(), user, client_key, host_key: String::new(), options, child: None };
        sshd.new_host_key();
        sshd.write_config();
        sshd.spawn();
        sshd
    }

    /// A target logging in with the harness's client key, no pin.
    pub fn target(&self, playroom_id: i64) -> HostTarget {
        HostTarget::ssh(
            playroom_id,
            "127.0.0.1",
            self.port,
            self.user.clone(),
            self.client_key.private_openssh.clone(),
            None,
        )
    }

    /// The body of `POST /api/playrooms` for a Playroom on this sshd,
    /// logging in with the harness's client key. Its edge is off: a test
    /// that wants one turns it on with its own free ports (an edge on the
    /// default ports 80/443 would clash across parallel tests, and
    /// `play serve` would try to pull `caddy:2` from a registry).
    pub fn playroom_body(&self, name: &str) -> serde_json::Value {
        serde_json::json!({"playroom": {"name": name, "host": "127.0.0.1", "port": self.port, "user": self.user,
                           "ssh_private_key": self.client_key.private_openssh, "edge": {"enabled": false}}})
    }

    /// The same target with a different Docker socket path.
    pub fn target_with_socket(&self, playroom_id: i64, socket: &str) -> HostTarget {
        let mut target = self.target(playroom_id);
        if let HostKind::Ssh { docker_socket, .. } = &mut target.kind {
            *docker_socket = socket.to_owned();
        }
        target
    }

    pub fn docker_socket(&self) -> &'static str {
        DEFAULT_DOCKER_SOCKET
    }

    /// Kills sshd and every session it serves: existing connections drop, as
    /// when a host reboots.
    ///
    /// The listener is stopped (SIGSTOP) before its sessions are killed, so
    /// it cannot accept and fork a new session between the two: before, a
    /// connection accepted in that moment outlived the "outage" and served
    /// play through it (a flake of the outage test in CI).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id().to_string();
            let _ = Command::new("kill").args(["-STOP", &pid]).status();
            // A fork under way when it stopped shows up on the next look;
            // killed sessions stay as zombies until the parent dies.
            for _ in 0..50 {
                if children_of(child.id()).iter().all(|c| is_zombie(*c)) {
                    break;
                }
                kill_descendants(child.id());
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops and starts sshd on the same port with the same keys.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Gives the server a new host key and restarts it: the pinned key no
    /// longer matches.
    pub fn change_host_key(&mut self) {
        self.stop();
        self.new_host_key();
        self.spawn();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn new_host_key(&mut self) {
        let pair = ssh_keys::generate_ed25519("").expect("host key");
        let path = self.path("host_ed25519");
        fs::write(&path, &pair.private_openssh).expect("write host key");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod host key");
        self.host_key = pair.public_openssh.trim().to_owned();
    }

    fn write_config(&self) {
        let forwarding = if self.options.allow_streamlocal { "yes" } else { "no" };
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {key}\nAuthorizedKeysFile {keys}\n\
             PidFile {pid}\nAllowStreamLocalForwarding {forwarding}\nStrictModes no\nUsePAM no\n\
             PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nMaxStartups 100\nMaxSessions 100\nLogLevel VERBOSE\n",
            port = self.port,
            key = self.path("host_ed25519").display(),
            keys = self.path("authorized_keys").display(),
            pid = self.path("sshd.pid").display(),
        );
        fs::write(self.path("sshd_config"), config).expect("write sshd_config");
    }

    fn spawn(&mut self) {
        let log = self.path("sshd.log");
        let log_file = fs::OpenOptions::new().create(true).append(true).open(&log).expect("open sshd log");
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(self.path("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("spawn sshd");
        self.child = Some(child);
        wait_for_port(self.port, "sshd", &log);
    }

    pub fn log(&self) -> String {
        fs::read_to_string(self.path("sshd.log")).unwrap_or_default()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Kills every process whose ancestry leads to `pid` (sshd's per-connection
/// children call `setsid`, so a process group kill would miss them).
fn kill_descendants(pid: u32) {
    for child in children_of(pid) {
        kill_descendants(child);
        let _ = Command::new("kill").args(["-9", &child.to_string()]).status();
    }
}

/// Whether process `pid` has exited and waits to be reaped (or is gone).
fn is_zombie(pid: u32) -> bool {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("").split_whitespace().next();
    state.is_none_or(|s| s == "Z" || s == "X")
}

fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|candidate| {
            let stat = fs::read_to_string(format!("/proc/{candidate}/stat")).unwrap_or_default();
            // Fields after the parenthesised command name: state, ppid, ...
            let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
            after.split_whitespace().nth(1) == Some(&pid.to_string())
        })
        .collect()
}
