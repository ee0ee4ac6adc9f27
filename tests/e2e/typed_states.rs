//! Playground states are typed (`play_model::playground::{PlaygroundStatus,
//! DesiredState, CreationStep, ServiceState}`) and so are wake-up kinds
//! (`play_core::wake::Kind`), never strings: this test reads the code of
//! every crate (`model/src`, `store/src`, `core/src`, `api/src`, `reconcilers/src`, `src`) and fails
//! on a comparison of a state with a string literal (in Rust or in SQL
//! text), or a wake sent or subscribed under a string.
//!
//! Comments are skipped. A deliberate exception is listed in [`ALLOWED`]
//! with the reason it is safe.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

const CRATES: &[&str] = &["model/src", "store/src", "core/src", "api/src", "reconcilers/src", "cli/src", "src"];

/// Every word a Playground state is stored as.
const STATE_WORDS: &[&str] = &[
    "in_progress",
    "running",
    "failed",
    "destroying",
    "destroyed",
    "complete",
    "queued",
    "image_pull",
    "image_build",
    "healthcheck",
    "stopped",
];

/// Fields (or SQL columns) holding a state.
const STATE_FIELDS: &[&str] = &["status", "desired_state", "creation_step", "error_step"];

/// Ways of naming a wake-up kind with a string.
const WAKE_PATTERNS: &[&str] =
    &[".wake(\"", "subscribe(\"", "WAKE_KIND", "wake(&self, kind: &", "subscribe(&self, kind: &"];

/// (file, text on the line, why it is safe).
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "store/src/playspecs.rs",
        "g.status <> 'destroyed'",
        "part of a constant SQL text; a unit test there checks it is PlaygroundStatus::Destroyed",
    ),
    ("store/src/playspecs.rs", "format!(\"g.status <> '{}'\"", "that unit test"),
    ("api/src/openapi.rs", "*status == \"429\"", "an HTTP status code in the OpenAPI document"),
];

/// What on `line` compares a state with a literal.
fn offences(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for word in STATE_WORDS {
        for op in ["==", "!="] {
            let pattern = format!("{op} \"{word}\"");
            if line.contains(&pattern) {
                found.push(pattern);
            }
        }
    }
    for field in STATE_FIELDS {
        for op in ["==", "!=", "<>", "="] {
            for quote in ['"', '\''] {
                let pattern = format!("{field} {op} {quote}");
                // `x.status = '...'` in SQL, `status == "..."` in Rust; a
                // `status = "` in Rust is an assignment of a literal, also
                // a string state.
                if line.contains(&pattern) {
                    found.push(pattern);
                }
            }
            let call = format!("{field}() {op} \"");
            if line.contains(&call) {
                found.push(call);
            }
        }
    }
    for pattern in WAKE_PATTERNS {
        if line.contains(pattern) {
            found.push((*pattern).to_owned());
        }
    }
    found
}

fn allowed(file: &str, line: &str) -> bool {
    ALLOWED.iter().any(|(f, text, _)| *f == file && line.contains(text))
}

#[test]
fn the_scan_finds_string_comparisons_and_skips_comments() {
    assert!(!offences(r#"if p.status == "running" {"#).is_empty());
    assert!(!offences(r#"    if current.desired_state != "destroyed" {"#).is_empty());
    assert!(!offences(r#"let waiting = w.creation_step() == "healthcheck";"#).is_empty());
    assert!(!offences("\"UPDATE playgrounds SET desired_state = 'destroyed', status = $1\"").is_empty());
    assert!(!offences("WHERE g.status <> 'destroyed'").is_empty());
    assert!(offences("if p.status == PlaygroundStatus::Running {").is_empty());
    assert!(!offences(r#"state.waker.wake("playground", id);"#).is_empty());
    assert!(!offences(r#"let rx = waker.subscribe("playground");"#).is_empty());
    assert!(!offences("    fn wake(&self, kind: &'static str, id: i64);").is_empty());
    assert!(offences("waker.wake(Wake::Playground(id));").is_empty());
    let lines = crate::source_tree::code_lines(
        "// if p.status == \"running\"\nlet url = \"http://x\"; // status == \"failed\"",
    );
    assert!(lines.iter().all(|(_, l)| offences(l).is_empty()), "{lines:?}");
}

#[test]
fn no_state_or_wake_kind_is_a_string() {
    let mut report = Vec::new();
    for dir in CRATES {
        for (path, text) in crate::source_tree::rust_files(dir) {
            let file = crate::source_tree::relative(&path);
            for (number, line) in crate::source_tree::code_lines(&text) {
                if allowed(&file, &line) {
                    continue;
                }
                for offence in offences(&line) {
                    report.push(format!("{file}:{number}: `{offence}` in `{}`", line.trim()));
                }
            }
        }
    }
    assert!(
        report.is_empty(),
        "compare states as play_model::playground enums (bind `.as_str()` in SQL) and wake with \
         play_core::wake::Kind, not strings:\n{}",
        report.join("\n")
    );
}
