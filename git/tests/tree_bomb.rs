//! Issue #49, item 2: a tree bomb (ten levels of ten shared subtrees,
//! 10^10 paths in a few kilobytes of objects) under a folder that
//! `.dockerignore` leaves out. Today's walk visited every path of it and
//! ran on after the call's timeout. Now an ignored folder is skipped
//! without descending, a walk an exception sends into the bomb fails at
//! the entry bound (within the timeout, naming the bound), and no thread
//! works on after the call has answered.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

#[path = "git/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::World;
use play_git::testing::{Access, file};
use play_model::build::dockerignore::Rules;
use play_model::repository::{ArchiveOptions, RepositoryError, RepositoryGateway};

/// Commits, on `main` of `name`, a root holding a Dockerfile and folder
/// `bomb`: `depth` levels of `width` names for one shared tree each.
fn plant_bomb(world: &World, name: &str, depth: usize, width: usize) -> String {
    let first = world.server.create_repo(name, Access::Public, &[("main", &[("Dockerfile", file("FROM scratch\n"))])]);
    let repo = git2::Repository::open_bare(world.server.repo_dir(name)).unwrap();
    let parent = repo.find_commit(git2::Oid::from_str(&first[0]).unwrap()).unwrap();
    let mut bomb = {
        let mut leaf = repo.treebuilder(None).unwrap();
        leaf.insert("leaf.txt", repo.blob(b"x").unwrap(), 0o100644).unwrap();
        leaf.write().unwrap()
    };
    for _ in 0..depth {
        let mut level = repo.treebuilder(None).unwrap();
        for i in 0..width {
            level.insert(format!("d{i}"), bomb, 0o040000).unwrap();
        }
        bomb = level.write().unwrap();
    }
    let mut root = repo.treebuilder(Some(&parent.tree().unwrap())).unwrap();
    root.insert("bomb", bomb, 0o040000).unwrap();
    let tree = repo.find_tree(root.write().unwrap()).unwrap();
    let who = git2::Signature::now("t", "t@example.com").unwrap();
    repo.commit(Some("refs/heads/main"), &who, &who, "a bomb", &tree, &[&parent]).unwrap().to_string()
}

/// CPU seconds this process has used (user and system), from /proc.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    // utime and stime: fields 14 and 15 of proc(5), 12 and 13 after the name.
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// Whether the process burns CPU for a second with nothing to do: a walk
/// left running after its call answered uses about one second of it.
async fn idle_for_a_second() -> f64 {
    let before = cpu_seconds();
    tokio::time::sleep(Duration::from_secs(1)).await;
    cpu_seconds() - before
}

fn options(dockerignore: &str) -> ArchiveOptions {
    let rules = Rules::parse(dockerignore).unwrap_or_else(|e| panic!("{e}"));
    ArchiveOptions { rules, dockerfile: "Dockerfile".into(), ..ArchiveOptions::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_bomb_costs_nothing_when_ignored_and_fails_at_the_entry_bound_when_walked() {
    // A bound well below the default (500,000) and a generous timeout: the
    // walk must end at the bound however loaded the machine is (CI runs
    // this beside other test binaries, on 2 cores, in a debug build).
    let timeout = Duration::from_secs(60);
    let world = World::with(|config| {
        config.timeout = timeout;
        config.max_tree_entries = 50_000;
    });
    let commit = plant_bomb(&world, "bomb", 10, 10);
    let access = world.public("bomb");
    let to = world.cache.path().join("context.tar");
    std::fs::write(&to, b"").unwrap();

    // Ignored, with no exception below it: never walked.
    let skipped = world.gateway.archive_to_file(&access, &commit, "", 1 << 20, options("bomb\n"), to.clone()).await;
    assert!(skipped.is_ok(), "{skipped:?}");
    let idle = idle_for_a_second().await;
    assert!(idle < 0.5, "{idle:.2} s of CPU in a second after the call answered");

    // An exception may reach into it: walked, and stopped at the bound.
    let started = Instant::now();
    let walked =
        world.gateway.archive_to_file(&access, &commit, "", 1 << 20, options("bomb\n!bomb/**/keep\n"), to.clone());
    match walked.await {
        Err(RepositoryError::TooLarge(message)) => {
            assert!(
                message.contains("50000 entries") && message.contains("PLAY_REPOSITORY_MAX_TREE_ENTRIES"),
                "{message}"
            )
        }
        other => panic!("expected the entry bound, got {other:?}"),
    }
    assert!(started.elapsed() < timeout, "failed at the bound, not at the timeout");
    // A folder read of it (a source mount's `./bomb`) and the in-memory
    // archive are bounded the same way.
    let folder = world.gateway.entry(&access, &commit, "bomb", 1 << 30).await;
    assert!(matches!(folder, Err(RepositoryError::TooLarge(_))), "{folder:?}");
    let idle = idle_for_a_second().await;
    assert!(idle < 0.5, "{idle:.2} s of CPU in a second after the calls answered");
    // In the same test: CPU is measured for the whole process.
    a_walk_past_its_deadline_answers_only_once_it_has_stopped().await;
}

/// A bound too high to be reached within the timeout: the deadline inside
/// the walk ends it, and the call answers after that.
async fn a_walk_past_its_deadline_answers_only_once_it_has_stopped() {
    let timeout = Duration::from_secs(2);
    let world = World::with(|config| {
        config.timeout = timeout;
        config.max_tree_entries = u64::MAX;
    });
    let commit = plant_bomb(&world, "bomb", 10, 10);
    let to = world.cache.path().join("context.tar");
    std::fs::write(&to, b"").unwrap();
    // An exception that matches nothing: the walk visits without writing.
    let rules = options("bomb\n!bomb/**/nothing\n");
    let walked = world.gateway.archive_to_file(&world.public("bomb"), &commit, "", 1 << 20, rules, to).await;
    assert!(matches!(walked, Err(RepositoryError::Timeout(_))), "{walked:?}");
    let idle = idle_for_a_second().await;
    assert!(idle < 0.5, "{idle:.2} s of CPU in a second after the call answered: the walk ran on");
}
