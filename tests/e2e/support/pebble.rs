//! A real ACME server on a Docker network: Let's Encrypt's `pebble` and
//! its `pebble-challtestsrv` (Debian package `pebble`), imported as an
//! image from the host's binaries as the Caddy image is.
//!
//! - `pebble-challtestsrv` answers DNS only (`:8053`), with no default
//!   address: a name resolves only after [`Pebble::add_a`].
//! - `pebble` resolves names through it (`-dnsserver`), validates HTTP-01
//!   on the edge's HTTP port (its `httpPort`), and serves ACME on
//!   `https://pebble:14000/dir` (a network alias) with a listener
//!   certificate for `pebble` from a throwaway CA made here with
//!   `openssl`: [`Pebble::listener_root`] is what the edge must trust
//!   (`EdgeConfig::acme_root`). The root pebble issues under is another,
//!   made at its start: [`Pebble::issuance_root`].
//!
//! Both management APIs are published on 127.0.0.1 only. The containers
//! carry the installation label, so the `World`'s clean-up removes them
//! too; dropping a [`Pebble`] removes them first.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::docker::ensure_binaries_image;
use super::{require_binary, run};

pub const PEBBLE_IMAGE: &str = "play-test/pebble:1";
/// The ACME directory, as the edge reaches it on the network.
pub const DIRECTORY: &str = "https://pebble:14000/dir";
const PEBBLE: &str = "/usr/bin/pebble";
const CHALLTESTSRV: &str = "/usr/bin/pebble-challtestsrv";

/// Builds [`PEBBLE_IMAGE`] once per machine.
pub fn ensure_pebble_image() {
    require_binary(PEBBLE, "pebble");
    require_binary(CHALLTESTSRV, "pebble");
    require_binary("/usr/bin/openssl", "openssl");
    require_binary("/usr/bin/curl", "curl");
    ensure_binaries_image(PEBBLE_IMAGE, &[PEBBLE, CHALLTESTSRV], &[], r#"["pebble"]"#);
}

/// A running pebble and its DNS server; removed on drop.
pub struct Pebble {
    dir: tempfile::TempDir,
    pebble: String,
    dns: String,
    /// `127.0.0.1:<port>` of pebble's management API.
    management: String,
    /// `127.0.0.1:<port>` of the DNS server's management API.
    dns_management: String,
}

impl Pebble {
    /// Starts both on `network` (which must exist), labelled with
    /// `installation`; pebble validates HTTP-01 on `http_port`.
    pub fn start(installation: &str, network: &str, http_port: u16) -> Pebble {
        ensure_pebble_image();
        let dir = tempfile::tempdir().expect("temp dir");
        listener_certificate(dir.path());
        let config = serde_json::json!({"pebble": {
            "listenAddress": ":14000",
            "managementListenAddress": ":15000",
            "certificate": "/etc/pebble/cert.pem",
            "privateKey": "/etc/pebble/key.pem",
            "httpPort": http_port,
            // TLS-ALPN-01 is disabled on the edge: nothing validates here.
            "tlsPort": 5001,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
        }});
        std::fs::write(dir.path().join("config.json"), config.to_string()).expect("pebble config");
        let short: String = installation.chars().take(12).collect();
        let (pebble, dns) = (format!("play-test-pebble-{short}"), format!("play-test-challtestsrv-{short}"));
        let label = format!("dev.play.installation={installation}");
        run(Command::new("docker").args(["run", "-d", "--name", &dns, "--label", &label, "--network", network]).args(
            [
                "-p",
                "127.0.0.1::8055",
                PEBBLE_IMAGE,
                "pebble-challtestsrv",
                "-dns01",
                ":8053",
                "-management",
                ":8055",
                "-defaultIPv4",
                "",
                "-defaultIPv6",
                "",
                "-http01",
                "",
                "-https01",
                "",
                "-tlsalpn01",
                "",
            ],
        ));
        run(Command::new("docker")
            .args(["create", "--name", &pebble, "--label", &label, "--network", network])
            .args(["--network-alias", "pebble", "-p", "127.0.0.1::15000"])
            // No random validation delays, no rejected nonces: the test
            // measures issuance, not pebble's chaos.
            .args(["-e", "PEBBLE_VA_NOSLEEP=1", "-e", "PEBBLE_WFE_NONCEREJECT=0", PEBBLE_IMAGE])
            .args(["pebble", "-config", "/etc/pebble/config.json", "-dnsserver", &format!("{dns}:8053")]));
        run(Command::new("docker")
            .arg("cp")
            .arg(format!("{}/.", dir.path().display()))
            .arg(format!("{pebble}:/etc/pebble")));
        run(Command::new("docker").args(["start", &pebble]));
        let published = |name: &str, port: &str| {
            let out = run(Command::new("docker").args(["port", name, port]));
            let text = String::from_utf8_lossy(&out.stdout);
            text.lines().find(|l| l.starts_with("127.0.0.1:")).expect("a published loopback port").to_owned()
        };
        let started = Pebble {
            management: published(&pebble, "15000/tcp"),
            dns_management: published(&dns, "8055/tcp"),
            dir,
            pebble,
            dns,
        };
        started.wait_ready();
        started
    }

    /// The CA of pebble's own HTTPS listener (PEM file on this machine).
    pub fn listener_root(&self) -> PathBuf {
        self.dir.path().join("listener-ca.pem")
    }

    /// Makes `host` resolve to `address` for pebble.
    pub fn add_a(&self, host: &str, address: &str) {
        let body = serde_json::json!({"host": host, "addresses": [address]}).to_string();
        run(Command::new("curl").args(["-sSf", "-d", &body, &format!("http://{}/add-a", self.dns_management)]));
    }

    /// The root pebble issues certificates under, written to a PEM file.
    pub fn issuance_root(&self) -> PathBuf {
        let path = self.dir.path().join("issuance-root.pem");
        // `-k`: the management API presents the listener certificate, for
        // the name `pebble`, not 127.0.0.1.
        let out = run(Command::new("curl").args(["-sSfk", &format!("https://{}/roots/0", self.management)]));
        std::fs::write(&path, &out.stdout).expect("write the issuance root");
        path
    }

    /// Both containers' logs, for a failure report.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        for name in [&self.pebble, &self.dns] {
            let out = Command::new("docker").args(["logs", name]).output().expect("docker logs");
            text.push_str(&format!(
                "--- {name}\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        text
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        let answers =
            |url: &str| Command::new("curl").args(["-sfk", "-o", "/dev/null", url]).status().is_ok_and(|s| s.success());
        while Instant::now() < deadline {
            // The DNS server's management API answers 404 on `/`: `-f`
            // would call that a failure, so ask for an existing endpoint.
            let dns = Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", &format!("http://{}/", self.dns_management)])
                .output()
                .is_ok_and(|o| o.stdout != b"000");
            if dns && answers(&format!("https://{}/roots/0", self.management)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("pebble did not start within 15 s:\n{}", self.logs());
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rm", "-f", &self.pebble, &self.dns]).output();
    }
}

/// A throwaway CA (`listener-ca.pem`) and a certificate for `pebble`
/// signed by it (`cert.pem`, `key.pem`) in `dir`.
fn listener_certificate(dir: &Path) {
    let openssl = |args: &[&str]| run(Command::new("openssl").current_dir(dir).args(args));
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    let days = ["-days", "2"];
    let ca = ["-keyout", "ca.key", "-out", "listener-ca.pem", "-subj", "/CN=play-test pebble listener CA"];
    openssl(&[&["req", "-x509"], &ec[..], &days[..], &ca[..]].concat());
    openssl(&[&["req"], &ec[..], &["-keyout", "key.pem", "-out", "pebble.csr", "-subj", "/CN=pebble"]].concat());
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=DNS:pebble\n").expect("extensions file");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "pebble.csr",
        "-CA",
        "listener-ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "cert.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
}
