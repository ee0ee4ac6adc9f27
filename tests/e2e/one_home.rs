//! One home for each idea (issue #28), checked on the source:
//! - the store holds queries, not records: the only types `store/src`
//!   defines are its own plumbing (that the records never import the store
//!   is a crate boundary now: `play-model` does not depend on `play-store`,
//!   `tests/e2e/dependency_directions.rs`);
//! - every fenced write checks its lease in one place
//!   (`leases::begin_fenced`);
//! - one end-to-end harness: no test or bench outside `tests/e2e/support`
//!   starts the `play` binary or picks its own ports;
//! - no Rust source file is over 500 lines.

/// The types the store may define: its connection, its backend, where a
/// function runs (`On`), the fence of a reconciler's writes and the read
/// coalescer, the counters of this process's writes (`LocalWrites`,
/// `Stamp`), the crate's error, which table a lookup by name reads
/// (`Named`) or which kind of launch setting (`Owner`) and how an
/// activation moved it (`Activated`), the connection that listens for
/// other replicas' wakes (`Listener`), and a held PostgreSQL snapshot for
/// `pg_dump` (`Exported`: an open transaction). Anything else is a record,
/// and records live in `model/src`.
const STORE_PLUMBING: [&str; 15] = [
    "Activated",
    "Backend",
    "Coalescer",
    "Error",
    "Exported",
    "Fence",
    "Fenced",
    "LeaseLost",
    "Listener",
    "LocalWrites",
    "Named",
    "On",
    "Owner",
    "Stamp",
    "Store",
];

/// The types defined at the top level of the production code under `dir`.
fn defined_types(dir: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (path, text) in crate::source_tree::rust_files(dir) {
        let rel = crate::source_tree::relative(&path);
        for (_, line) in crate::source_tree::code_lines(&text) {
            let rest = line.strip_prefix("pub struct ").or_else(|| line.strip_prefix("pub enum "));
            if let Some(rest) = rest {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                found.push((rel.clone(), name));
            }
        }
    }
    found
}

#[test]
fn the_store_defines_no_record() {
    // Test fixtures (`testing.rs`) are no records.
    let records: Vec<_> = defined_types("store/src")
        .into_iter()
        .filter(|(path, name)| !STORE_PLUMBING.contains(&name.as_str()) && !path.ends_with("/testing.rs"))
        .collect();
    assert_eq!(records, Vec::<(String, String)>::new(), "records belong in model/src");
}

#[test]
fn the_lease_of_a_fenced_write_is_checked_in_one_place() {
    let mut sites = Vec::new();
    for (path, text) in crate::source_tree::rust_files("store/src") {
        for (number, line) in crate::source_tree::code_lines(&text) {
            if line.contains("still_held(") {
                sites.push(format!("{}:{number}", crate::source_tree::relative(&path)));
            }
        }
    }
    assert_eq!(sites.len(), 2, "the definition and its one call in begin_fenced: {sites:?}");
    assert!(sites.iter().all(|s| s.starts_with("store/src/leases.rs:")), "{sites:?}");
}

/// The production code of a crate other than the store: its files
/// without test fixtures (`testing/`, `testing.rs`, `*_tests.rs`), each cut
/// at its first `#[cfg(test)]` (the tests module closes a file).
fn production_code_outside_the_store() -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let crates = ["src", "api/src", "cli/src", "core/src", "git/src", "github/src", "model/src", "outbound/src"];
    for dir in crates.into_iter().chain(["reconcilers/src", "simhost/src", "states/src"]) {
        for (path, text) in crate::source_tree::rust_files(dir) {
            let rel = crate::source_tree::relative(&path);
            if rel.contains("/testing/") || rel.ends_with("/testing.rs") || rel.ends_with("_tests.rs") {
                continue;
            }
            for (number, line) in crate::source_tree::code_lines(&text) {
                if line.trim() == "#[cfg(test)]" {
                    break;
                }
                out.push((rel.clone(), number, line));
            }
        }
    }
    out
}

/// SQL lives in the store (issue #50, item 2): no other crate's
/// production code builds a query, so a flow (server-side apply, Launch)
/// reads and writes through store functions that run on both backends.
#[test]
fn no_sql_outside_the_store() {
    let sites: Vec<String> = production_code_outside_the_store()
        .into_iter()
        .filter(|(_, _, line)| line.contains("sqlx::query"))
        .map(|(path, number, _)| format!("{path}:{number}"))
        .collect();
    assert_eq!(sites, Vec::<String>::new(), "queries belong in store/src");
}

/// One place wakes (issue #50, item 6): a loop is woken by the commit of
/// the change it must converge (`play_store::wakes`), never by the route,
/// the flow or the apply step that wrote it, and no transaction commits
/// past `Store::commit`, which delivers them. (A loop may still hint
/// another without a write: the edge after a pass, a request's wake.)
#[test]
fn wakes_come_from_the_commit() {
    let outside_loops = |path: &str| !path.starts_with("reconcilers/src/") && path != "core/src/wake.rs";
    let mut sites: Vec<String> = production_code_outside_the_store()
        .into_iter()
        .filter(|(path, _, line)| (outside_loops(path) && line.contains(".wake(")) || line.contains(".commit()"))
        .map(|(path, number, line)| format!("{path}:{number}: {}", line.trim()))
        .collect();
    for (path, text) in crate::source_tree::rust_files("store/src") {
        let rel = crate::source_tree::relative(&path);
        if rel == "store/src/wakes.rs" || rel.ends_with("_tests.rs") || rel.ends_with("/testing.rs") {
            continue;
        }
        let code = crate::source_tree::code_lines(&text).into_iter().take_while(|(_, l)| l.trim() != "#[cfg(test)]");
        sites.extend(code.filter(|(_, l)| l.contains(".commit()")).map(|(n, l)| format!("{rel}:{n}: {}", l.trim())));
    }
    assert_eq!(
        sites,
        Vec::<String>::new(),
        "note wakes in the store write (play_store::wakes); commit with Store::commit"
    );
}

/// Every test and bench source of the workspace, outside the shared
/// harness.
fn test_sources() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in [
        "tests",
        "model/tests",
        "store/tests",
        "api/tests",
        "reconcilers/tests",
        "reconcilers/benches",
        "git/tests",
        "cli/tests",
    ] {
        if !crate::source_tree::workspace().join(dir).is_dir() {
            continue;
        }
        for (path, text) in crate::source_tree::rust_files(dir) {
            let rel = crate::source_tree::relative(&path);
            if !rel.starts_with("tests/e2e/support/") && rel != "tests/e2e/one_home.rs" {
                out.push((rel, text));
            }
        }
    }
    out
}

#[test]
fn only_the_harness_starts_play_or_picks_ports() {
    let mut found = Vec::new();
    for (rel, text) in test_sources() {
        for (number, line) in crate::source_tree::code_lines(&text) {
            if line.contains("fn free_port") || line.contains("CARGO_BIN_EXE_play") {
                found.push(format!("{rel}:{number}: {}", line.trim()));
            }
        }
    }
    assert_eq!(found, Vec::<String>::new(), "use tests/e2e/support (Play, free_port) instead");
}

#[test]
fn no_source_file_is_over_500_lines() {
    let mut long = Vec::new();
    for dir in [
        "model",
        "store",
        "core",
        "api",
        "reconcilers",
        "git",
        "github",
        "simhost",
        "testkit",
        "cli",
        "states",
        "outbound",
        "src",
        "tests",
        "fuzz/fuzz_targets",
    ] {
        let root = crate::source_tree::workspace().join(dir);
        if !root.is_dir() {
            continue;
        }
        for (path, text) in crate::source_tree::rust_files(dir) {
            let rel = crate::source_tree::relative(&path);
            if rel.contains("/target/") {
                continue;
            }
            let lines = text.lines().count();
            if lines > 500 {
                long.push(format!("{rel}: {lines}"));
            }
        }
    }
    assert_eq!(long, Vec::<String>::new(), "split these by what they hold");
}
