//! Routing in one place (issue #28, step 2), checked on the source: a
//! `svc/path_rule` is parsed and translated into Caddy matchers once, when
//! the Compose document is validated, and every later step (the route, the
//! edge's config) uses what validation made. The import directions of
//! `model/src/routing` and of the edge loop are checked in
//! `module_cycles.rs`.

/// Where `needle` is written in the production code of the server crates,
/// as `path:line` (comments, test files and `#[cfg(test)]` tails left out).
fn written(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for dir in ["model/src", "store/src", "core/src", "api/src", "reconcilers/src", "src"] {
        for (path, text) in crate::source_tree::rust_files(dir) {
            let rel = crate::source_tree::relative(&path);
            if rel.ends_with("/tests.rs") || rel.ends_with("_tests.rs") {
                continue;
            }
            for (number, line) in crate::source_tree::code_lines(&text) {
                if line.trim_start().starts_with("#[cfg(test)]") {
                    break;
                }
                if line.contains(needle) {
                    found.push(format!("{rel}:{number}"));
                }
            }
        }
    }
    found
}

#[test]
fn a_path_rule_is_checked_at_validation_and_nowhere_else() {
    let checks = written("PathRule::check(");
    assert_eq!(checks.len(), 1, "PathRule::check is called once, at validation: {checks:?}");
    assert!(checks[0].starts_with("model/src/compose/svc/labels.rs:"), "{checks:?}");
    assert_eq!(written("check_path_rule("), Vec::<String>::new(), "the old entry point is gone");
}

#[test]
fn only_the_routing_module_translates_rules_for_caddy() {
    let translations = written("to_caddy(");
    assert!(!translations.is_empty(), "the scan finds the translation");
    let outside: Vec<&String> = translations.iter().filter(|at| !at.starts_with("model/src/routing/")).collect();
    assert!(outside.is_empty(), "rules translated for Caddy outside model/src/routing: {outside:?}");
}

#[test]
fn the_caddy_matcher_is_not_under_compose() {
    let under_compose: Vec<String> = crate::source_tree::rust_files("model/src/compose")
        .into_iter()
        .map(|(path, _)| crate::source_tree::relative(&path))
        .filter(|rel| rel.contains("caddy"))
        .collect();
    assert!(under_compose.is_empty(), "{under_compose:?}");
}
