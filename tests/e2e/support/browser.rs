//! The real browser of the browser tests: Debian's chromium through
//! Debian's chromium-driver, driven by Selenium from a venv that
//! `scripts/lib/browser-venv.sh` installs (pinned) when missing. The
//! scripts themselves are in `tests/browser/`.

use std::process::{Command, Output};

/// The Python with Selenium (installed on first use).
pub fn selenium_python() -> String {
    let out = Command::new("bash").arg("scripts/lib/browser-venv.sh").output().expect("run browser-venv.sh");
    assert!(out.status.success(), "installing Selenium failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("a UTF-8 path").trim().to_owned()
}

/// Runs `tests/browser/<script>` with `env`, off the async runtime's
/// threads; answers its output and its stdout and stderr together.
pub async fn run_script(script: &str, env: Vec<(&'static str, String)>) -> (Output, String) {
    let python = selenium_python();
    let script = format!("tests/browser/{script}");
    let run = tokio::task::spawn_blocking(move || {
        Command::new(python).arg(script).envs(env).output().expect("run the browser script")
    })
    .await
    .expect("the browser script's thread");
    let said = format!("{}\n{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    (run, said)
}
