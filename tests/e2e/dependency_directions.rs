//! The crate dependency rules of ARCHITECTURE.md, checked on the resolved
//! graph from `cargo metadata` (normal and build dependencies, transitively):
//! - play-api never depends on play-reconcilers, bollard or russh;
//! - play-reconcilers never depends on axum or play-api;
//! - play-model (records and pure rules) depends on no other crate of
//!   play's but play-states, nor on sqlx, axum, bollard, russh, git2;
//! - play-store (the queries) depends on play-model only of play's: a
//!   store module that imports a flow does not compile;
//! - play-core depends on none of axum, bollard, russh, play-api,
//!   play-reconcilers, play-git, git2;
//! - libgit2 (play-git, git2) is reached only by the binary: the API and
//!   the reconcilers use the `RepositoryGateway` seam;
//! - play-git depends on none of bollard, play-api, play-reconcilers
//!   (axum only through its `testing` feature, which the resolved graph
//!   cannot tell apart: the workspace's tests enable it); russh is its
//!   client for repositories on ssh URLs, as it is the reconcilers' for
//!   Playrooms;
//! - play-cli, the command-line client, talks to a server over HTTP only:
//!   it depends on no server crate (play-api, play-reconcilers, play-core,
//!   play-git, play-outbound), nor on sqlx, axum, bollard, russh or git2;
//! - play-states (the words the CLI shares with core) depends on nothing
//!   of play's, nor on sqlx;
//! - play-outbound, the one outbound HTTP client, is reached by play-git
//!   and play-reconcilers, and depends on none of axum, bollard, russh,
//!   play-api, play-reconcilers, play-git;
//! - play-backup (`play backup`, `play restore`) reads the store through
//!   play-store and the repositories as files: no flow, no server crate,
//!   no Docker or SSH client, no libgit2;
//! - play-testkit, the tests' shared support, is a dev-dependency only: no
//!   crate reaches it through a normal or build dependency.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

use serde_json::Value;

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Names of every package `root` reaches through non-dev dependencies.
fn reachable(meta: &Value, root: &str) -> BTreeSet<String> {
    let names: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let nodes: HashMap<&str, &Value> =
        meta["resolve"]["nodes"].as_array().unwrap().iter().map(|n| (n["id"].as_str().unwrap(), n)).collect();
    let root_id = names.iter().find(|(_, name)| **name == root).map(|(id, _)| *id).unwrap();
    let mut seen = BTreeSet::new();
    let mut stack = vec![root_id];
    while let Some(id) = stack.pop() {
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let non_dev = dep["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].as_str() != Some("dev"));
            let dep_id = dep["pkg"].as_str().unwrap();
            if non_dev && seen.insert(names[dep_id].to_owned()) {
                stack.push(dep_id);
            }
        }
    }
    seen
}

fn assert_none_of(meta: &Value, krate: &str, forbidden: &[&str]) {
    let deps = reachable(meta, krate);
    let found: Vec<_> = forbidden.iter().filter(|f| deps.contains(**f)).collect();
    assert!(found.is_empty(), "{krate} must not depend on {found:?}");
}

/// What the command-line client must not reach: the server's crates and
/// what only a server needs.
const SERVER: &[&str] = &[
    "play-api",
    "play-reconcilers",
    "play-core",
    "play-model",
    "play-store",
    "play-git",
    "play-outbound",
    "sqlx",
    "axum",
    "bollard",
    "russh",
    "git2",
];

#[test]
fn crate_dependencies_point_the_allowed_way() {
    let meta = metadata();
    assert_none_of(&meta, "play-api", &["play-reconcilers", "bollard", "russh", "play-git", "git2"]);
    assert_none_of(&meta, "play-reconcilers", &["axum", "play-api", "play-git", "git2"]);
    assert_none_of(
        &meta,
        "play-core",
        &["axum", "bollard", "russh", "play-api", "play-reconcilers", "play-git", "git2"],
    );
    assert_none_of(
        &meta,
        "play-model",
        &[
            "play-store",
            "play-core",
            "play-api",
            "play-reconcilers",
            "play-git",
            "sqlx",
            "axum",
            "bollard",
            "russh",
            "git2",
        ],
    );
    assert_none_of(
        &meta,
        "play-store",
        &["play-core", "play-api", "play-reconcilers", "play-git", "play-github", "axum", "bollard", "russh", "git2"],
    );
    assert!(reachable(&meta, "play-store").contains("sqlx"), "the store speaks SQL");
    assert_none_of(
        &meta,
        "play-backup",
        &["play-core", "play-api", "play-reconcilers", "play-git", "git2", "axum", "bollard", "russh"],
    );
    assert_none_of(&meta, "play-git", &["bollard", "play-api", "play-reconcilers", "sqlx", "play-store"]);
    assert_none_of(&meta, "play-github", &["bollard", "russh", "play-api", "play-reconcilers", "play-git", "git2"]);
    assert_none_of(&meta, "play-cli", SERVER);
    assert_none_of(&meta, "play-states", SERVER);
    assert_none_of(
        &meta,
        "play-outbound",
        &["axum", "bollard", "russh", "play-api", "play-reconcilers", "play-git", "git2"],
    );
    for user in ["play-git", "play-github", "play-reconcilers"] {
        assert!(reachable(&meta, user).contains("play-outbound"), "{user} should send through play-outbound");
    }
    let members: Vec<&str> =
        meta["workspace_members"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    let packages = meta["packages"].as_array().unwrap().iter().filter(|p| members.contains(&p["id"].as_str().unwrap()));
    let names: Vec<&str> = packages.map(|p| p["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"play") && names.contains(&"play-testkit"), "the workspace's members: {names:?}");
    for member in names.iter().filter(|name| **name != "play-testkit") {
        assert!(!reachable(&meta, member).contains("play-testkit"), "{member} must not reach the testkit");
    }
    // The check can fail: the binary does reach all of them.
    let play = reachable(&meta, "play");
    for name in ["play-api", "play-reconcilers", "play-git", "play-cli", "git2", "bollard", "russh", "axum", "sqlx"] {
        assert!(play.contains(name), "play should reach {name}");
    }
}
