//! The edge's test image: Debian's Caddy binary (package `caddy`) and the
//! libraries it links, imported as an image, so no test needs a registry.
//! play runs it as it runs the official `caddy:2` image: `caddy run
//! --config <bootstrap> --resume` with `XDG_*` under volumes.

use std::fs::{self, File};
use std::path::Path;
use std::process::Command;

use super::docker::require_docker;
use super::{require_binary, run};

pub const CADDY_IMAGE: &str = "play-test/caddy:2";
const CADDY: &str = "/usr/bin/caddy";

/// Builds [`CADDY_IMAGE`] once per machine (a lock file keeps parallel test
/// binaries from importing it twice).
pub fn ensure_caddy_image() {
    require_docker();
    require_binary(CADDY, "caddy");
    let lock = File::create(std::env::temp_dir().join("play-test-caddy.lock")).expect("create the image lock file");
    lock.lock().expect("lock the image lock file");
    let present = Command::new("docker")
        .args(["image", "inspect", CADDY_IMAGE])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !present {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("rootfs");
        for sub in ["usr/bin", "tmp", "etc", "data", "config"] {
            fs::create_dir_all(root.join(sub)).expect("rootfs dirs");
        }
        copy_into(&root, Path::new(CADDY));
        // The dynamic loader and the libraries `ldd` names.
        let ldd = run(Command::new("ldd").arg(CADDY));
        for line in String::from_utf8_lossy(&ldd.stdout).lines() {
            let path = line.split_whitespace().find(|w| w.starts_with('/')).map(Path::new);
            if let Some(path) = path {
                copy_into(&root, path);
            }
        }
        fs::write(root.join("etc/passwd"), "root:x:0:0:root:/:/bin/sh\n").expect("passwd");
        fs::write(root.join("etc/group"), "root:x:0:\n").expect("group");
        let tar = dir.path().join("rootfs.tar");
        run(Command::new("tar").arg("-C").arg(&root).arg("-cf").arg(&tar).arg("."));
        run(Command::new("docker")
            .args(["import", "--change", r#"CMD ["caddy", "run"]"#, "--change", "ENV PATH=/usr/bin"])
            .arg(&tar)
            .arg(CADDY_IMAGE));
    }
    lock.unlock().expect("unlock the image lock file");
}

/// Copies `file` (following links) to the same path under `root`.
fn copy_into(root: &Path, file: &Path) {
    let target = root.join(file.strip_prefix("/").expect("absolute path"));
    fs::create_dir_all(target.parent().expect("a parent")).expect("library dir");
    fs::copy(file, &target).unwrap_or_else(|e| panic!("copy {}: {e}", file.display()));
}
