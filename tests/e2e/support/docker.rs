//! The machine's Docker engine: preconditions, the local test image, and
//! clean-up by label.

use std::fs::{self, File};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use super::{require_binary, run};

/// A busybox-static root filesystem imported as an image: no registry needed.
pub const BUSYBOX_IMAGE: &str = "play-test/busybox:1";

const APPLETS: &[&str] = &[
    "sh", "ash", "sleep", "echo", "cat", "wget", "nc", "httpd", "ls", "env", "true", "false", "printf", "test", "[",
    "mkdir", "rm", "touch", "date", "hostname", "id", "kill", "ps", "grep", "head", "tail", "wc", "sed", "tr", "seq",
    "sync", "uname",
];

/// Panics with a clear message unless the Docker engine answers.
pub fn require_docker() {
    let ok = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "the Docker engine is not reachable with the `docker` CLI: the e2e tests need a running \
         Docker daemon on /var/run/docker.sock"
    );
}

/// Builds [`BUSYBOX_IMAGE`] once per machine (idempotent; a lock file keeps
/// parallel test binaries from importing it twice).
pub fn ensure_busybox_image() {
    require_docker();
    require_binary("/bin/busybox", "busybox-static");
    let lock = File::create(std::env::temp_dir().join("play-test-busybox.lock")).expect("create the image lock file");
    lock.lock().expect("lock the image lock file");
    let present = Command::new("docker")
        .args(["image", "inspect", BUSYBOX_IMAGE])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !present {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("rootfs");
        for sub in ["bin", "tmp", "etc", "www"] {
            fs::create_dir_all(root.join(sub)).expect("rootfs dirs");
        }
        fs::copy("/bin/busybox", root.join("bin/busybox")).expect("copy busybox");
        for applet in APPLETS {
            symlink("busybox", root.join("bin").join(applet)).expect("applet symlink");
        }
        fs::write(root.join("etc/passwd"), "root:x:0:0:root:/:/bin/sh\n").expect("passwd");
        fs::write(root.join("etc/group"), "root:x:0:\n").expect("group");
        let tar = dir.path().join("rootfs.tar");
        run(Command::new("tar").arg("-C").arg(&root).arg("-cf").arg(&tar).arg("."));
        run(Command::new("docker")
            .args(["import", "--change", r#"CMD ["/bin/sh"]"#, "--change", "ENV PATH=/bin"])
            .arg(&tar)
            .arg(BUSYBOX_IMAGE));
    }
    lock.unlock().expect("unlock the image lock file");
}

/// Builds `image` once per machine from host `binaries` (dynamically
/// linked ones with the loader and the libraries `ldd` names), empty
/// `dirs` and `cmd` (a JSON array), so no test needs a registry. A lock
/// file keeps parallel test binaries from importing it twice.
pub fn ensure_binaries_image(image: &str, binaries: &[&str], dirs: &[&str], cmd: &str) {
    require_docker();
    let lock_name = format!("play-test-{}.lock", image.replace(['/', ':'], "-"));
    let lock = File::create(std::env::temp_dir().join(lock_name)).expect("create the image lock file");
    lock.lock().expect("lock the image lock file");
    let present =
        Command::new("docker").args(["image", "inspect", image]).output().map(|o| o.status.success()).unwrap_or(false);
    if !present {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("rootfs");
        for sub in dirs.iter().chain(&["usr/bin", "tmp", "etc"]) {
            fs::create_dir_all(root.join(sub)).expect("rootfs dirs");
        }
        for binary in binaries {
            copy_into(&root, Path::new(binary));
            let ldd = run(Command::new("ldd").arg(binary));
            for line in String::from_utf8_lossy(&ldd.stdout).lines() {
                let path = line.split_whitespace().find(|w| w.starts_with('/')).map(Path::new);
                if let Some(path) = path {
                    copy_into(&root, path);
                }
            }
        }
        fs::write(root.join("etc/passwd"), "root:x:0:0:root:/:/bin/sh\n").expect("passwd");
        fs::write(root.join("etc/group"), "root:x:0:\n").expect("group");
        let tar = dir.path().join("rootfs.tar");
        run(Command::new("tar").arg("-C").arg(&root).arg("-cf").arg(&tar).arg("."));
        run(Command::new("docker")
            .args(["import", "--change", &format!("CMD {cmd}"), "--change", "ENV PATH=/usr/bin"])
            .arg(&tar)
            .arg(image));
    }
    lock.unlock().expect("unlock the image lock file");
}

/// Copies `file` (following links) to the same path under `root`.
fn copy_into(root: &Path, file: &Path) {
    let target = root.join(file.strip_prefix("/").expect("absolute path"));
    fs::create_dir_all(target.parent().expect("a parent")).expect("library dir");
    fs::copy(file, &target).unwrap_or_else(|e| panic!("copy {}: {e}", file.display()));
}

/// Removes every container, network, volume and image carrying `label` (a `key` or
/// `key=value` filter), so a failed test leaves nothing behind.
pub fn remove_labelled(label: &str) {
    let filter = format!("label={label}");
    let ids = |args: &[&str]| -> Vec<String> {
        let out = Command::new("docker").args(args).output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let containers = ids(&["ps", "-aq", "--filter", &filter]);
    if !containers.is_empty() {
        let _ = Command::new("docker").args(["rm", "-f"]).args(&containers).output();
    }
    let networks = ids(&["network", "ls", "-q", "--filter", &filter]);
    if !networks.is_empty() {
        let _ = Command::new("docker").args(["network", "rm"]).args(&networks).output();
    }
    let volumes = ids(&["volume", "ls", "-q", "--filter", &filter]);
    if !volumes.is_empty() {
        let _ = Command::new("docker").args(["volume", "rm", "-f"]).args(&volumes).output();
    }
    let images = ids(&["image", "ls", "-q", "--filter", &filter]);
    if !images.is_empty() {
        // `--no-prune`: the untagged parents (the classic builder's cache
        // steps) may be what another installation's build on the same
        // engine is using right now; removing them failed that build with
        // "failed to get digest". They are left for the engine's prune.
        let _ = Command::new("docker").args(["rmi", "-f", "--no-prune"]).args(&images).output();
    }
}

/// Removes labelled objects when dropped: `let _cleanup = Labelled::new(..)`.
#[derive(Debug)]
pub struct Labelled(pub String);

impl Drop for Labelled {
    fn drop(&mut self) {
        remove_labelled(&self.0);
    }
}

/// Names of the containers of a Compose project, sorted.
pub fn project_containers(project: &str) -> Vec<String> {
    let filter = format!("label=com.docker.compose.project={project}");
    let out = super::run(Command::new("docker").args(["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"]));
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
    names.retain(|n| !n.is_empty());
    names.sort();
    names
}
