//! The shell libraries the test command and the benchmarks source
//! (`scripts/lib/`), run by bash as those scripts run them.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::path::Path;
use std::process::Command;

/// `start_postgres` sets an EXIT trap to stop the database; it must keep
/// the caller's own EXIT trap, set before it (the benchmarks' trap stops
/// the `play serve` processes that use the database). It replaced it, so
/// those processes ran on after the script.
#[test]
fn start_postgres_keeps_the_callers_exit_trap() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("caller-trap-ran");
    let pg_dir = dir.path().join("pg-dir");
    let script = format!(
        r#"set -euo pipefail
. scripts/lib/postgres.sh
trap 'echo "the caller'\''s trap" > {marker}' EXIT
start_postgres
psql -q "$PLAY_TEST_POSTGRES_URL" -c 'SELECT 1' >/dev/null
echo "$_pg_dir" > {pg_dir}
"#,
        marker = marker.display(),
        pg_dir = pg_dir.display(),
    );
    let out =
        Command::new("bash").arg("-c").arg(script).current_dir(env!("CARGO_MANIFEST_DIR")).output().expect("bash runs");
    assert!(out.status.success(), "script failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap_or_default(),
        "the caller's trap\n",
        "the caller's trap did not run"
    );
    let data = std::fs::read_to_string(&pg_dir).unwrap();
    assert!(!Path::new(data.trim()).exists(), "PostgreSQL's directory {} was not removed", data.trim());
}
