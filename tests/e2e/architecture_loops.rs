//! `docs/architecture.md` lists every loop `play serve` runs (issue #50,
//! item 9): the loops of `reconcilers/src/loops.rs` (`start_all`, the one
//! place they are started) and the table "The loops" must name the same
//! modules, each row's guarantees file must exist, so a loop added
//! without its row, or a row left for a loop that is gone, fails here.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::collections::BTreeSet;

use crate::source_tree::workspace;

/// Modules `loops.rs` imports that run no loop of their own: host access,
/// the runtime every keyed loop shares, and the Docker event streams that
/// feed the Playground loop (its row says "its Playroom's Docker events").
const NOT_LOOPS: [&str; 3] = ["host", "runtime", "playroom::events"];

/// The module path under `reconcilers/src` of a file: `edge.rs` is `edge`,
/// `trigger/mod.rs` is `trigger`, `playroom/sweep.rs` is `playroom::sweep`.
fn module_of(file: &str) -> String {
    let path = file.trim_start_matches("reconcilers/src/").trim_end_matches(".rs").trim_end_matches("/mod");
    path.replace('/', "::")
}

/// The guarantees files of the table's rows, as modules.
fn documented() -> BTreeSet<String> {
    let page = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let table = page.split("## The loops").nth(1).expect("docs/architecture.md has \"The loops\"");
    let table = table.split("\n## ").next().unwrap();
    let mut modules = BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| loop ")) {
        let last = row.trim_end_matches('|').rsplit('|').next().unwrap().trim();
        let file = last.trim_matches('`');
        assert!(file.starts_with("reconcilers/src/"), "the row {row:?} names its guarantees file last");
        assert!(workspace().join(file).is_file(), "{file} (named by the loop table) exists");
        modules.insert(module_of(file));
    }
    modules
}

/// The modules `loops.rs` imports from its own crate, less `NOT_LOOPS`.
fn started() -> BTreeSet<String> {
    let source = std::fs::read_to_string(workspace().join("reconcilers/src/loops.rs")).unwrap();
    assert!(source.contains("pub fn start_all("), "loops.rs starts every loop in start_all");
    source
        .lines()
        .filter_map(|l| l.trim().strip_prefix("use crate::"))
        .map(|path| {
            let path = path.trim_end_matches(';');
            let module = path.split("::{").next().unwrap();
            // `use crate::heartbeat::Heartbeat;`: the module is all but the item.
            if path.contains("::{") { module.to_owned() } else { module.rsplit_once("::").unwrap().0.to_owned() }
        })
        .filter(|m| !NOT_LOOPS.contains(&m.as_str()))
        .collect()
}

#[test]
fn the_loop_table_lists_every_loop_started() {
    let started = started();
    assert!(started.len() >= 8, "the scan found the loops: {started:?}");
    assert_eq!(documented(), started, "docs/architecture.md's loop table against reconcilers/src/loops.rs");
}

#[test]
fn a_module_path_is_read_from_its_file() {
    assert_eq!(module_of("reconcilers/src/edge.rs"), "edge");
    assert_eq!(module_of("reconcilers/src/trigger/mod.rs"), "trigger");
    assert_eq!(module_of("reconcilers/src/playroom/sweep.rs"), "playroom::sweep");
}
