//! No import cycles among the files of any crate of the workspace (every
//! member's `src` and the binary's `src`): a store module never reaches
//! back into the domain that uses it, the domain never into a store module
//! that imports it, `error.rs` imports no other module of its crate, the
//! binary's `args.rs` imports none of the modules that read it, and so on.
//!
//! What counts as a dependency of a file: every crate-internal path in its
//! code: `use` lines (`crate::`, `super::`, `self::`, or a child module
//! declared in the file) and paths written inline (`crate::a::b::f()`,
//! `super::job_results::holds_host!()`). A path is mapped to the file of
//! the longest module prefix it names (`crate::store::playgrounds::get` ->
//! `store/playgrounds.rs`, `crate::playground::Playground` ->
//! `playground/mod.rs`: a re-export is a dependency on the facade that
//! re-exports). Not counted:
//! - a module using what an ancestor provides (`use super::{Conn, Store}`
//!   in `store/x.rs`, `use crate::Result`): a module is part of its
//!   ancestors, and a parent naming its children is not an import;
//! - test code: files named `tests.rs` or `*_tests.rs`, and everything
//!   from a file's `#[cfg(test)]` line on (play keeps tests last).

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::collections::{BTreeMap, BTreeSet};

/// A file's module path (`["store", "playgrounds"]`; the crate root is
/// `[]`), from its path relative to the crate's `src`.
fn module_of(rel: &str) -> Vec<String> {
    let without = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = without.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// The code of a file that counts: comments removed, test code cut.
fn production_code(text: &str) -> String {
    let mut out = String::new();
    for (_, line) in crate::source_tree::code_lines(text) {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Expands a use tree (`super::{events::{self, Actor}, Conn}`) into full
/// paths (`super::events`, `super::events::Actor`, `super::Conn`).
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(&tree);
        let path = path.split("as").next().filter(|_| !tree.contains("::as")).unwrap_or(path);
        return vec![path.trim_end_matches("::self").to_owned()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|item| !item.is_empty())
        .flat_map(|item| {
            expand(item).into_iter().map(|tail| {
                if tail == "self" { prefix.trim_end_matches("::").to_owned() } else { format!("{prefix}{tail}") }
            })
        })
        .collect()
}

/// The crate-internal paths `code` names: from `use` statements and inline.
fn paths_in(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = find_use(rest) {
        let after = &rest[at..];
        let end = after.find(';').unwrap_or(after.len());
        let statement = after[after.find("use ").unwrap_or(0) + 4..end].trim();
        paths.extend(expand(statement));
        rest = &after[end..];
    }
    for anchor in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(anchor) {
            let start = from + i;
            let before = code[..start].chars().next_back();
            from = start + anchor.len();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let tail: String =
                code[start..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            paths.push(tail.trim_end_matches(':').to_owned());
        }
    }
    paths
}

/// Whether `rest` (what follows `use `) starts a path: its first segment
/// is followed by `::`, `;` or ` as`, or it opens a tree. A line of
/// prose that starts with "use " (inside a string) is not a statement.
fn starts_a_path(rest: &str) -> bool {
    let first: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    let after = &rest[first.len()..];
    rest.starts_with('{') || (!first.is_empty() && [":", ";", " as "].iter().any(|s| after.starts_with(s)))
}

/// The offset of the next `use` statement (at the start of a line, maybe
/// `pub`/`pub(crate)`).
fn find_use(code: &str) -> Option<usize> {
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let stripped = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub(super) "))
            .or_else(|| trimmed.strip_prefix("pub "))
            .unwrap_or(trimmed);
        if stripped.strip_prefix("use ").is_some_and(starts_a_path) {
            return Some(offset + (line.len() - trimmed.len()));
        }
        offset += line.len();
    }
    None
}

/// Child modules declared in `code` (`mod x;`, `pub mod x;`).
fn declared_children(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub(crate) ").or_else(|| l.strip_prefix("pub ")).unwrap_or(l);
            l.strip_prefix("mod ")?.strip_suffix(';').map(str::to_owned)
        })
        .collect()
}

/// The file-level dependency graph of one crate: `files` are (path
/// relative to `src`, text).
fn graph(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeMap<Vec<String>, String> =
        files.iter().filter(|(rel, _)| !is_test_file(rel)).map(|(rel, _)| (module_of(rel), rel.clone())).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, text) in files.iter().filter(|(rel, _)| !is_test_file(rel)) {
        let here = module_of(rel);
        let code = production_code(text);
        let children = declared_children(&code);
        let targets = edges.entry(rel.clone()).or_default();
        for path in paths_in(&code) {
            let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let mut module: Vec<String> = match segments.first().copied() {
                Some("crate") => Vec::new(),
                Some("self") => here.clone(),
                Some("super") => here.clone(),
                Some(first) if children.contains(first) => here.clone(),
                _ => continue,
            };
            if segments.first() == Some(&"crate") || segments.first() == Some(&"self") {
                segments.remove(0);
            }
            while segments.first() == Some(&"super") {
                segments.remove(0);
                module.pop();
            }
            for segment in segments {
                module.push(segment.to_owned());
            }
            // The longest prefix that is a module of this crate.
            while !module.is_empty() && !modules.contains_key(&module) {
                module.pop();
            }
            let Some(target) = modules.get(&module) else { continue };
            let ancestor = here.starts_with(&module);
            if target != rel && !ancestor {
                targets.insert(target.clone());
            }
        }
    }
    edges
}

/// Every cycle, as its strongly connected component (sorted file lists).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's algorithm, iteratively simple enough for a few hundred files.
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.found
}

fn crate_files(src: &str) -> Vec<(String, String)> {
    crate::source_tree::rust_files(src)
        .into_iter()
        .map(|(path, text)| {
            let rel = crate::source_tree::relative(&path);
            (rel.strip_prefix(&format!("{src}/")).unwrap_or(&rel).to_owned(), text)
        })
        .collect()
}

fn describe(found: &[Vec<String>], edges: &BTreeMap<String, BTreeSet<String>>) -> String {
    found
        .iter()
        .map(|component| {
            let inside: BTreeSet<&String> = component.iter().collect();
            let links: Vec<String> = component
                .iter()
                .flat_map(|from| {
                    edges[from].iter().filter(|to| inside.contains(to)).map(move |to| format!("  {from} -> {to}"))
                })
                .collect();
            format!("cycle among {}:\n{}", component.join(", "), links.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(p, t)| ((*p).to_owned(), (*t).to_owned())).collect()
}

#[test]
fn use_trees_expand_to_paths() {
    assert_eq!(
        expand("super::{events::{self, Actor}, Conn}"),
        ["super::events", "super::events::Actor", "super::Conn"]
    );
    assert_eq!(
        expand("crate::store::playgrounds::{self as store, Playground}"),
        ["crate::store::playgrounds", "crate::store::playgrounds::Playground"]
    );
    assert_eq!(expand("crate::time::{self, Timestamp}"), ["crate::time", "crate::time::Timestamp"]);
    // Prose inside a string that starts a line with "use " is no statement.
    assert_eq!(paths_in("let m = \"a\n    use the key file\";\nuse crate::a::B;\n"), ["crate::a::B", "crate::a::B"]);
}

#[test]
fn the_graph_finds_a_cycle_through_use_lines_and_inline_paths() {
    // The cycle core/src/store had: job_results -> playground_status ->
    // playgrounds -> quotas -> job_results (the last one an inline macro
    // path).
    let store = files(&[
        ("lib.rs", "pub mod store;\npub use store::Store;\n"),
        ("store/mod.rs", "pub mod a;\npub mod b;\npub mod c;\nuse crate::Result;\n"),
        ("store/a.rs", "use super::b::{self, X};\nuse super::{Conn, Store};\n"),
        ("store/b.rs", "use super::c::Y;\nuse crate::store::Store;\n"),
        ("store/c.rs", "const Q: &str = concat!(\"x\", super::a::holds!());\n#[cfg(test)]\nuse crate::store::b;\n"),
    ]);
    let edges = graph(&store);
    assert_eq!(edges["store/a.rs"], BTreeSet::from(["store/b.rs".to_owned()]), "the parent is not a dependency");
    let found = cycles(&edges);
    assert_eq!(found, vec![vec!["store/a.rs".to_owned(), "store/b.rs".to_owned(), "store/c.rs".to_owned()]]);
    // Test code does not count: without the inline path there is no cycle.
    let fixed: Vec<(String, String)> = store
        .into_iter()
        .map(|(p, t)| if p == "store/c.rs" { (p, "#[cfg(test)]\nuse super::a;\n".to_owned()) } else { (p, t) })
        .collect();
    assert!(cycles(&graph(&fixed)).is_empty());
}

/// Every crate's source root: the binary's `src` and each workspace
/// member's (read from the `members` line of the root `Cargo.toml`, so a
/// new crate is covered without being named here).
fn source_roots() -> Vec<String> {
    let manifest = std::fs::read_to_string(crate::source_tree::workspace().join("Cargo.toml")).unwrap();
    let line = manifest.lines().find(|l| l.trim_start().starts_with("members")).unwrap();
    let list = &line[line.find('[').unwrap() + 1..line.rfind(']').unwrap()];
    let mut roots = vec!["src".to_owned()];
    roots.extend(
        list.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()).map(|m| format!("{m}/src")),
    );
    roots
}

#[test]
fn every_crate_is_covered() {
    let roots = source_roots();
    for root in [
        "src",
        "model/src",
        "store/src",
        "core/src",
        "api/src",
        "reconcilers/src",
        "git/src",
        "github/src",
        "simhost/src",
        "cli/src",
        "testkit/src",
    ] {
        assert!(roots.iter().any(|r| r == root), "{root} is not among {roots:?}");
    }
}

#[test]
fn the_scan_reads_the_crates() {
    let store = graph(&crate_files("store/src"));
    assert!(store.len() > 50, "the scan found the files of store/src");
    assert!(store["playgrounds.rs"].contains("events.rs"), "the scan reads use lines");
    assert!(graph(&crate_files("model/src")).len() > 50, "the scan found the files of model/src");
    assert!(graph(&crate_files("reconcilers/src")).len() > 20, "the scan found the files of reconcilers/src");
    assert!(graph(&crate_files("src"))["dispatch.rs"].contains("args.rs"), "the scan reads the binary");
}

/// Cycles left for now, each with why: (source root, the files of the
/// cycle, reason). The test fails when one of them is gone too, so that
/// it is struck from here.
const KNOWN: &[(&str, &[&str], &str)] = &[];

#[test]
fn no_crate_has_an_import_cycle() {
    let mut report = Vec::new();
    for root in source_roots() {
        let edges = graph(&crate_files(&root));
        assert!(!edges.is_empty(), "the scan found the files of {root}");
        let mut found = cycles(&edges);
        for (known_root, files, _) in KNOWN.iter().filter(|(r, _, _)| *r == root) {
            let before = found.len();
            found.retain(|component| component != files);
            if found.len() == before {
                report.push(format!("{known_root}: the cycle among {files:?} is gone: strike it from KNOWN"));
            }
        }
        if !found.is_empty() {
            report.push(format!("import cycles in {root}:\n{}", describe(&found, &edges)));
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// The files of `edges` for which `inside` holds that import a file for
/// which it does not, as `from -> to` lines.
fn imports_leaving(edges: &BTreeMap<String, BTreeSet<String>>, inside: impl Fn(&str) -> bool) -> Vec<String> {
    edges
        .iter()
        .filter(|(from, _)| inside(from))
        .flat_map(|(from, to)| to.iter().filter(|t| !inside(t)).map(move |t| format!("{from} -> {t}")))
        .collect()
}

/// Routing in one place (issue #28): `model/src/routing` imports nothing
/// else of the model, so the Compose engine, the desired-state builder and
/// the edge depend on it and never the other way round.
#[test]
fn routing_imports_nothing_else_of_the_model() {
    let edges = graph(&crate_files("model/src"));
    assert!(edges.contains_key("routing/caddy_matcher.rs"), "the Caddy matcher lives under model/src/routing");
    let misplaced: Vec<&String> = edges.keys().filter(|f| f.starts_with("compose/") && f.contains("caddy")).collect();
    assert!(misplaced.is_empty(), "Caddy matchers under model/src/compose: {misplaced:?}");
    let routing = |f: &str| f == "routing.rs" || f.starts_with("routing/");
    let leaving = imports_leaving(&edges, routing);
    assert!(leaving.is_empty(), "model/src/routing imports other modules of the model:\n{}", leaving.join("\n"));
}

/// The edge loop and the Playground loop share Docker mechanism through
/// `docker/`, never by importing each other.
#[test]
fn the_edge_loop_does_not_import_the_playground_loop() {
    let edges = graph(&crate_files("reconcilers/src"));
    let edge = |f: &str| f == "edge.rs" || f.starts_with("edge/");
    let playground = |f: &str| f == "playground/mod.rs" || f.starts_with("playground/");
    let wrong: Vec<String> = imports_leaving(&edges, edge)
        .into_iter()
        .filter(|line| line.split(" -> ").nth(1).is_some_and(playground))
        .collect();
    assert!(edges.contains_key("edge/container.rs"), "the scan found the edge loop");
    assert!(wrong.is_empty(), "the edge loop imports the Playground loop:\n{}", wrong.join("\n"));
}
