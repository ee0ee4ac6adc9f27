//! Reading the workspace's own Rust sources, for tests that check rules
//! about the code itself (typed states, module cycles). Shared by those
//! test files only: it reads files and strips comments, nothing more.

use std::path::{Path, PathBuf};

/// The workspace root (this package's directory).
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir` (relative to the workspace), sorted, with
/// its text.
pub fn rust_files(dir: &str) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    walk(&workspace().join(dir), &mut out);
    out.sort();
    out
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { panic!("cannot read {}", dir.display()) };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let Ok(text) = std::fs::read_to_string(&path) else { panic!("cannot read {}", path.display()) };
            out.push((path, text));
        }
    }
}

/// The path relative to the workspace, with `/` separators.
pub fn relative(path: &Path) -> String {
    path.strip_prefix(workspace()).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

/// Each line with `//` comments (doc comments included) removed, keeping
/// line numbers (1-based). A `//` inside a string literal is kept: the
/// scan tracks double-quoted strings (not raw strings, which play's code
/// does not use for such lines).
pub fn code_lines(text: &str) -> Vec<(usize, String)> {
    text.lines().enumerate().map(|(i, line)| (i + 1, strip_comment(line))).collect()
}

fn strip_comment(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            // A character literal (`'"'`, `'\''`): not the start of a string.
            b'\'' if !in_string && bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'\'' if !in_string && bytes.get(i + 1) == Some(&b'\\') && bytes.get(i + 3) == Some(&b'\'') => i += 3,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return line[..i].to_owned(),
            _ => {}
        }
        i += 1;
    }
    line.to_owned()
}
