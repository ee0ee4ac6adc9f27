//! Where the API's code lives (issue #28, step 3), checked on the source:
//! handlers in `src/routes/` stay thin (request types and their checks in
//! `src/input/`, responses in `src/views/`), nothing but the router imports
//! a handler module, and the Playground lifetime's default and cap are
//! written once, in `play_model::playground::ttl`.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The files under `dir` (relative to the workspace), with their text
/// before any `#[cfg(test)]` (tests may name numbers as they like).
fn sources(dir: &str) -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default().to_owned();
            (path, code)
        })
        .collect()
}

#[test]
fn handler_files_stay_thin() {
    for (path, code) in sources("api/src/routes") {
        let lines = code.lines().count();
        assert!(
            lines <= 250,
            "{} has {lines} lines: move request types to input/, responses to views/",
            path.display()
        );
    }
}

#[test]
fn only_the_router_imports_handler_modules() {
    for (path, code) in sources("api/src") {
        if path.ends_with("router.rs") {
            continue;
        }
        let imports = code.lines().filter(|l| !l.trim_start().starts_with("//") && l.contains("crate::routes"));
        assert_eq!(imports.count(), 0, "{} imports a handler module", path.display());
    }
}

#[test]
fn the_lifetime_default_and_cap_are_written_once() {
    let mut all = Vec::new();
    for dir in ["model/src", "store/src", "core/src", "api/src", "reconcilers/src", "src"] {
        all.extend(sources(dir));
    }
    for spelling in ["8 * 3600", "hours(8)", "30 * 24"] {
        let at: Vec<String> = all
            .iter()
            .filter(|(_, code)| {
                code.lines()
                    .any(|l| !l.trim_start().starts_with("//") && l.contains(spelling) && !l.contains("schema("))
            })
            .map(|(path, _)| path.display().to_string())
            .collect();
        let allowed = usize::from(spelling != "hours(8)");
        assert!(at.len() <= allowed, "`{spelling}` is written in {at:?}; use play_model::playground::ttl");
        if allowed == 1 {
            assert!(at.iter().all(|p| p.ends_with("playground/ttl.rs")), "`{spelling}` in {at:?}");
        }
    }
}
