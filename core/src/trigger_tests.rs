#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use super::*;

fn head(branch: &str, commit: &str) -> Head {
    Head { branch: branch.into(), commit: commit.into() }
}

fn target(id: i64, branch: &str, status: TargetStatus, commit: &str) -> Target {
    Target {
        id,
        trigger_id: 1,
        ref_kind: "branch".into(),
        ref_name: branch.into(),
        status,
        reason: None,
        playground_id: Some(id * 10),
        commit_sha: Some(commit.into()),
        generation: 1,
        created_at: crate::time::now(),
        updated_at: crate::time::now(),
    }
}

#[test]
fn patterns_match_branches() {
    for (pattern, name, matches) in [
        ("main", "main", true),
        ("main", "mainline", false),
        ("*", "feature/x", true),
        ("feature/*", "feature/a/b", true),
        ("feature/*", "feature", false),
        ("release-*-rc", "release-2.0-rc", true),
        ("release-*-rc", "release-rc", false),
        ("*-hotfix-*", "a-hotfix-b", true),
        ("*-hotfix-*", "hotfix", false),
    ] {
        assert_eq!(branch_matches(pattern, name), matches, "{pattern} {name}");
    }
}

#[test]
fn bad_patterns_are_refused() {
    for bad in ["", "a..b", "/main", "main/", "a//b", "ma in", "main;rm", "~x", &"a".repeat(201)] {
        assert!(check_branch_pattern(bad).is_err(), "{bad}");
    }
    for good in ["main", "feature/*", "release-1.2", "*"] {
        assert!(check_branch_pattern(good).is_ok(), "{good}");
    }
}

#[test]
fn a_new_branch_launches_a_moved_one_is_kept_a_deleted_one_destroyed() {
    let heads = [head("main", "b"), head("feature/new", "c")];
    let targets = [target(1, "main", TargetStatus::Live, "a"), target(2, "feature/old", TargetStatus::Live, "x")];
    let plan = plan_push("*", &heads, &targets, 10);
    assert_eq!(plan.launch, vec![head("feature/new", "c")]);
    assert_eq!(plan.keep, vec![(1, head("main", "b"))]);
    assert_eq!(plan.destroy, vec![2]);
    assert!(plan.refuse.is_empty());
}

#[test]
fn a_stopped_target_comes_back_only_at_a_new_commit() {
    let stopped = [target(1, "main", TargetStatus::Stopped, "a")];
    assert_eq!(plan_push("main", &[head("main", "a")], &stopped, 10), PushPlan::default());
    assert_eq!(plan_push("main", &[head("main", "b")], &stopped, 10).launch, vec![head("main", "b")]);
    let gone = [target(1, "main", TargetStatus::Gone, "a")];
    assert_eq!(plan_push("main", &[head("main", "a")], &gone, 10).launch, vec![head("main", "a")], "recreated");
}

#[test]
fn the_cap_refuses_branches_beyond_it_with_the_reason() {
    let heads = [head("a", "1"), head("b", "2"), head("c", "3")];
    let targets = [target(1, "a", TargetStatus::Live, "1")];
    let plan = plan_push("*", &heads, &targets, 2);
    assert_eq!(plan.launch, vec![head("b", "2")]);
    assert_eq!(plan.refuse.len(), 1);
    assert_eq!(plan.refuse[0].0, head("c", "3"));
    assert!(plan.refuse[0].1.contains("max_playgrounds"), "{}", plan.refuse[0].1);
}
