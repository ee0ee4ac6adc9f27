//! Host access benchmark: SSH connect + Docker ping, 100 sequential small
//! Docker API calls over one pooled SSH connection vs the local socket, and
//! 20 container inspects (about 5 KB each, which the engine writes in two
//! pieces) one at a time and 4 at a time, as an observation of a
//! 20-service Playground makes them.
//!
//! Needs root (sshd), Debian's openssh-server and a Docker engine on
//! /var/run/docker.sock, like the e2e tests. Run:
//!
//! ```text
//! cargo bench -p play-reconcilers --bench host_gateway
//! ```
//!
//! Prints medians over several rounds; numbers go to BENCHMARKS.md.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use play_core::metrics::Metrics;
use play_model::host::HostTarget;
use play_model::ssh_keys;
use play_model::testing::free_port;
use play_reconcilers::host::{DockerHostGateway, HostConfig};

type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

const CALLS: usize = 100;
const ROUNDS: usize = 7;
const CONNECTS: usize = 15;
const INSPECTS: usize = 20;
/// The container the inspects read: created (never started) from an empty
/// imported image, removed at the end.
const INSPECTED: &str = "play-bench-host-gateway-inspected";

/// Removes the inspected container (and its image) when dropped.
struct Inspected;

impl Inspected {
    fn create() -> Result<Inspected> {
        let image = "play-bench/empty:1";
        let import = "tar -cf - -T /dev/null | docker import - play-bench/empty:1 >/dev/null";
        let status = Command::new("sh").args(["-c", import]).status()?;
        if !status.success() {
            return Err("docker import of an empty image failed".into());
        }
        let _ = Command::new("docker").args(["rm", "-f", INSPECTED]).output();
        let out = Command::new("docker").args(["create", "--name", INSPECTED, image, "none"]).output()?;
        if !out.status.success() {
            return Err(format!("docker create: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        Ok(Inspected)
    }
}

impl Drop for Inspected {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rm", "-f", INSPECTED]).output();
        let _ = Command::new("docker").args(["rmi", "play-bench/empty:1"]).output();
    }
}

struct Sshd {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_sshd(port: u16, client_public: &str, streamlocal: bool) -> Result<Sshd> {
    if !std::path::Path::new("/usr/sbin/sshd").exists() {
        return Err("/usr/sbin/sshd missing: apt-get install openssh-server".into());
    }
    fs::create_dir_all("/run/sshd")?;
    let dir = tempfile::tempdir()?;
    let host = ssh_keys::generate_ed25519("")?;
    let key_path = dir.path().join("host");
    fs::write(&key_path, &host.private_openssh)?;
    fs::set_permissions(&key_path, fs::Permissions::from_mode(0o600))?;
    fs::write(dir.path().join("keys"), client_public)?;
    let config = format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\n\
         AllowStreamLocalForwarding {}\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\n",
        key_path.display(),
        dir.path().join("keys").display(),
        dir.path().join("pid").display(),
        if streamlocal { "yes" } else { "no" },
    );
    fs::write(dir.path().join("config"), config)?;
    let child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(dir.path().join("config"))
        .stderr(Stdio::null())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("sshd did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Sshd { child, _dir: dir })
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn gateway() -> DockerHostGateway {
    DockerHostGateway::new(HostConfig::default(), Arc::new(Metrics::new()))
}

/// Fresh gateway each time: TCP + SSH handshake + auth + transport probe +
/// version negotiation + one ping.
async fn connect_and_ping(target: &HostTarget) -> Result<Duration> {
    let mut samples = Vec::new();
    for _ in 0..CONNECTS {
        let gateway = gateway();
        let started = Instant::now();
        gateway.docker(target).await?.ping().await?;
        samples.push(started.elapsed());
    }
    Ok(median(samples))
}

/// `CALLS` sequential pings and `CALLS` sequential version calls over one
/// warmed-up pooled connection; median per round.
async fn sequential_calls(target: &HostTarget) -> Result<(Duration, Duration)> {
    let gateway = gateway();
    let docker = gateway.docker(target).await?;
    docker.ping().await?;
    let (mut pings, mut versions) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..CALLS {
            docker.ping().await?;
        }
        pings.push(started.elapsed());
        let started = Instant::now();
        for _ in 0..CALLS {
            docker.version().await?;
        }
        versions.push(started.elapsed());
    }
    Ok((median(pings), median(versions)))
}

/// `INSPECTS` inspects of [`INSPECTED`] one after the other, then 4 at a
/// time, over one warmed-up pooled connection; median per round.
async fn inspects(target: &HostTarget) -> Result<(Duration, Duration)> {
    use futures::{StreamExt as _, TryStreamExt as _};
    let gateway = gateway();
    let docker = gateway.docker(target).await?;
    let inspect = || docker.inspect_container(INSPECTED, None::<bollard::query_parameters::InspectContainerOptions>);
    inspect().await?;
    let (mut one, mut four) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..INSPECTS {
            inspect().await?;
        }
        one.push(started.elapsed());
        let started = Instant::now();
        let _: Vec<_> = futures::stream::iter((0..INSPECTS).map(|_| inspect())).buffered(4).try_collect().await?;
        four.push(started.elapsed());
    }
    Ok((median(one), median(four)))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Result<()> {
    // `cargo test --benches` runs bench binaries with `--bench` absent: do
    // nothing then, so test runs need no sshd.
    if !std::env::args().any(|a| a == "--bench") {
        return Ok(());
    }
    let client = ssh_keys::generate_ed25519("bench")?;
    let (port, fallback_port) = (free_port(), free_port());
    let _sshd = start_sshd(port, &client.public_openssh, true)?;
    let _fallback = start_sshd(fallback_port, &client.public_openssh, false)?;
    let ssh = HostTarget::ssh(1, "127.0.0.1", port, "root", client.private_openssh.clone(), None);
    let dial_stdio = HostTarget::ssh(2, "127.0.0.1", fallback_port, "root", client.private_openssh.clone(), None);
    let local = HostTarget::local(3, "/var/run/docker.sock");

    println!("host_gateway benchmark (loopback sshd, medians; {CONNECTS} connects, {ROUNDS} rounds of {CALLS} calls)");
    for (name, target) in [("ssh direct-streamlocal", &ssh), ("ssh dial-stdio", &dial_stdio)] {
        let connect = connect_and_ping(target).await?;
        println!("{name:<24} connect + ping: {:>8.2} ms", ms(connect));
    }
    let mut results = Vec::new();
    for (name, target) in [("local socket", &local), ("ssh direct-streamlocal", &ssh), ("ssh dial-stdio", &dial_stdio)]
    {
        let (pings, versions) = sequential_calls(target).await?;
        println!(
            "{name:<24} {CALLS} pings: {:>8.2} ms ({:.3} ms/call)   {CALLS} version: {:>8.2} ms ({:.3} ms/call)",
            ms(pings),
            ms(pings) / CALLS as f64,
            ms(versions),
            ms(versions) / CALLS as f64
        );
        results.push((name, pings, versions));
    }
    let _inspected = Inspected::create()?;
    for (name, target) in [("local socket", &local), ("ssh direct-streamlocal", &ssh), ("ssh dial-stdio", &dial_stdio)]
    {
        let (one, four) = inspects(target).await?;
        println!("{name:<24} {INSPECTS} inspects: {:>8.2} ms one at a time, {:>8.2} ms 4 at a time", ms(one), ms(four));
    }
    let (_, local_pings, local_versions) = results[0];
    for (name, pings, versions) in &results[1..] {
        println!(
            "{name:<24} vs local: pings x{:.2}, version x{:.2}",
            pings.as_secs_f64() / local_pings.as_secs_f64(),
            versions.as_secs_f64() / local_versions.as_secs_f64()
        );
    }
    Ok(())
}
