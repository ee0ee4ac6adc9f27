//! An SSH front to [`GitServer`]'s bare repositories, for tests of an SSH
//! transport: Debian's `sshd` (package `openssh-server`) on 127.0.0.1 and
//! a free port, whose keys may only run `git-shell` (package `git`) with
//! the working directory at the repositories' root.
//!
//! Invariants:
//! - It serves the same directory as the [`GitServer`] it came from, so
//!   [`GitServer::create_repo`], [`GitServer::commit`] and
//!   [`GitServer::branch_commit`] see and change what SSH clients see and
//!   change. Drop it before (or with) that server: the directory goes with
//!   the server.
//! - It logs in the machine's current user (`id -un`; root in CI) with
//!   public keys only, and only keys given to [`GitSsh::authorize`]: each
//!   is restricted (`restrict`: no forwarding, no pty) and forced to
//!   `git-shell -c "$SSH_ORIGINAL_COMMAND"`, which runs only
//!   `git-upload-pack`, `git-receive-pack` and `git-upload-archive`.
//! - Its configuration, host key, `authorized_keys` and log live in a temp
//!   dir of its own; sshd and every session it serves are killed on drop.
//! - Nothing is skipped silently: without sshd or git-shell it panics with
//!   the package to install.
//!
//! ```no_run
//! use play_git::testing::{Access, GitServer, file};
//! let server = GitServer::start();
//! server.create_repo("app", Access::Public, &[("main", &[("README", file("hi"))])]);
//! let ssh = server.ssh();
//! # let public_key_line = "ssh-ed25519 AAAA...";
//! ssh.authorize(public_key_line);
//! let url = ssh.url("app"); // ssh://<user>@127.0.0.1:<port><root>/app.git, <root> absolute
//! let known_host = format!("[127.0.0.1]:{} {}", ssh.port(), ssh.host_key());
//! ```
#![expect(clippy::expect_used, reason = "test harness: a panic with the reason is the failure report")]

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::GitServer;

const SSHD: &str = "/usr/sbin/sshd";
const GIT_SHELL: &str = "/usr/bin/git-shell";
/// Ports tried before giving up (another process may take the free port
/// between picking it and sshd binding it).
const ATTEMPTS: usize = 5;

/// See the [module documentation](self).
#[derive(Debug)]
pub struct GitSsh {
    dir: TempDir,
    /// The [`GitServer`]'s repositories: one bare `<name>.git` each.
    root: PathBuf,
    port: u16,
    user: String,
    host_key: String,
    child: Option<Child>,
}

impl GitServer {
    /// Starts an SSH front to this server's repositories; see
    /// [`GitSsh`]. No key is authorized yet.
    pub fn ssh(&self) -> GitSsh {
        GitSsh::start(self.shared.root.clone())
    }
}

impl GitSsh {
    fn start(root: PathBuf) -> GitSsh {
        for (path, package) in [(SSHD, "openssh-server"), (GIT_SHELL, "git")] {
            assert!(
                Path::new(path).exists(),
                "{path} is missing: install it with `apt-get install -y {package}` (play-git's SSH test harness needs it)"
            );
        }
        let root = fs::canonicalize(&root).expect("canonical repositories root");
        let shown = root.to_str().expect("repositories root is UTF-8");
        assert!(!shown.contains(['\'', '"', '\\', '\n']), "repositories root {shown} needs no quoting");
        // sshd's privilege separation directory; Debian creates it at boot.
        fs::create_dir_all("/run/sshd").expect("create /run/sshd");
        let dir = tempfile::Builder::new().prefix("play-git-sshd-").tempdir().expect("temp dir");
        let host = play_model::ssh_keys::generate_ed25519("").expect("generate the host key");
        let host_key_path = dir.path().join("host_ed25519");
        write_private(&host_key_path, &host.private_openssh);
        fs::write(dir.path().join("authorized_keys"), "").expect("write authorized_keys");
        let output = Command::new("id").arg("-un").output().expect("run id -un");
        assert!(output.status.success(), "id -un failed: {}", String::from_utf8_lossy(&output.stderr));
        let user = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let mut ssh = GitSsh { dir, root, port: 0, user, host_key: host.public_openssh.trim().to_owned(), child: None };
        let mut attempt = 0;
        loop {
            attempt += 1;
            ssh.port = free_port();
            ssh.write_config();
            if ssh.spawn() {
                return ssh;
            }
            assert!(attempt < ATTEMPTS, "sshd could not bind a free port in {ATTEMPTS} tries; its log:\n{}", ssh.log());
        }
    }

    /// Lets `public_key_line` (`ssh-ed25519 AAAA... comment`) log in,
    /// restricted to git-shell in the repositories' root. Each session
    /// first writes a banner to stderr, as some hosts do (a client must
    /// not take it for a failure). sshd reads `authorized_keys` at each
    /// login: no restart.
    pub fn authorize(&self, public_key_line: &str) {
        let key = public_key_line.trim();
        assert!(!key.is_empty() && !key.contains('\n'), "one OpenSSH public key line, got {key:?}");
        let line = format!(
            "command=\"echo 'play-test: welcome' >&2; cd '{root}' && exec {GIT_SHELL} -c \\\"$SSH_ORIGINAL_COMMAND\\\"\",restrict {key}\n",
            root = self.root.display(),
        );
        let mut file =
            fs::OpenOptions::new().append(true).open(self.path("authorized_keys")).expect("open authorized_keys");
        file.write_all(line.as_bytes()).expect("append to authorized_keys");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The user SSH clients log in as: the machine's current user.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The server's host public key, one OpenSSH line `ssh-ed25519 AAAA...`
    /// (for `known_hosts`: `[127.0.0.1]:<port> <host_key>`).
    pub fn host_key(&self) -> &str {
        &self.host_key
    }

    /// `ssh://<user>@127.0.0.1:<port><root>/<name>.git`: the bare
    /// repository's absolute path, which git-shell takes as it is.
    pub fn url(&self, name: &str) -> String {
        format!("ssh://{}@127.0.0.1:{}{}/{name}.git", self.user, self.port, self.root.display())
    }

    /// What sshd wrote to its stderr so far (`LogLevel VERBOSE`), for
    /// failure messages.
    pub fn log(&self) -> String {
        fs::read_to_string(self.path("sshd.log")).unwrap_or_default()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write_config(&self) {
        let config = format!(
            "ListenAddress 127.0.0.1\nPort {port}\nHostKey {key}\nAuthorizedKeysFile {keys}\n\
             PidFile {pid}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             StrictModes no\nPermitRootLogin prohibit-password\nDisableForwarding yes\n\
             PermitUserEnvironment no\nAcceptEnv GIT_PROTOCOL\nMaxStartups 100\nMaxSessions 100\n\
             LogLevel VERBOSE\n",
            port = self.port,
            key = self.path("host_ed25519").display(),
            keys = self.path("authorized_keys").display(),
            pid = self.path("sshd.pid").display(),
        );
        fs::write(self.path("sshd_config"), config).expect("write sshd_config");
    }

    /// Spawns sshd and waits until it listens: `true`; `false` when it
    /// exited because the port was taken; panics on any other failure.
    fn spawn(&mut self) -> bool {
        let log = fs::OpenOptions::new().create(true).append(true).open(self.path("sshd.log")).expect("open sshd log");
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(self.path("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn sshd");
        self.child = Some(child);
        let listening = format!("Server listening on 127.0.0.1 port {}.", self.port);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.log().contains(&listening) {
                return true;
            }
            let exited = self.child.as_mut().and_then(|child| child.try_wait().expect("poll sshd"));
            if let Some(status) = exited {
                self.child = None;
                let log = self.log();
                assert!(log.contains("Address already in use"), "sshd exited ({status}); its log:\n{log}");
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("sshd did not listen on 127.0.0.1:{} within 10 s; its log:\n{}", self.port, self.log());
    }
}

impl Drop for GitSsh {
    /// Kills sshd and every session it serves. The listener is stopped
    /// (SIGSTOP) first, so it cannot fork a new session meanwhile.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id();
            let _ = Command::new("kill").args(["-STOP", &pid.to_string()]).status();
            for _ in 0..50 {
                if children_of(pid).into_iter().all(is_zombie) {
                    break;
                }
                kill_descendants(pid);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A port nothing listens on now, from the kernel.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

/// Writes a private key readable by its owner only (sshd and ssh refuse
/// others).
fn write_private(path: &Path, contents: &str) {
    fs::write(path, contents).expect("write private key");
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).expect("chmod private key");
}

/// Kills every process whose ancestry leads to `pid` (sshd's
/// per-connection children call `setsid`: a process group kill would miss
/// them).
fn kill_descendants(pid: u32) {
    for child in children_of(pid) {
        kill_descendants(child);
        let _ = Command::new("kill").args(["-9", &child.to_string()]).status();
    }
}

/// Fields of `/proc/<pid>/stat` after the parenthesised command name:
/// state, ppid, ...; empty when the process is gone.
fn stat_fields(pid: u32) -> Vec<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    after.split_whitespace().map(str::to_owned).collect()
}

/// Whether process `pid` has exited and waits to be reaped (or is gone).
fn is_zombie(pid: u32) -> bool {
    stat_fields(pid).first().is_none_or(|state| state == "Z" || state == "X")
}

fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parent = pid.to_string();
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|candidate| stat_fields(*candidate).get(1) == Some(&parent))
        .collect()
}
