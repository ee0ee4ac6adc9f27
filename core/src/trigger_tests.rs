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

fn long_ago() -> crate::time::Timestamp {
    crate::time::now() - chrono::Duration::days(1)
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
    let plan = plan_push("*", &heads, &targets, 10, long_ago());
    assert_eq!(plan.launch, vec![head("feature/new", "c")]);
    assert_eq!(plan.keep, vec![(1, head("main", "b"))]);
    assert_eq!(plan.destroy, vec![2]);
    assert!(plan.refuse.is_empty());
}

#[test]
fn a_stopped_target_comes_back_only_at_a_new_commit() {
    let stopped = [target(1, "main", TargetStatus::Stopped, "a")];
    assert_eq!(plan_push("main", &[head("main", "a")], &stopped, 10, long_ago()), PushPlan::default());
    assert_eq!(plan_push("main", &[head("main", "b")], &stopped, 10, long_ago()).launch, vec![head("main", "b")]);
    let gone = [target(1, "main", TargetStatus::Gone, "a")];
    assert_eq!(
        plan_push("main", &[head("main", "a")], &gone, 10, long_ago()).launch,
        vec![head("main", "a")],
        "recreated"
    );
}

#[test]
fn the_cap_refuses_branches_beyond_it_with_the_reason() {
    let heads = [head("a", "1"), head("b", "2"), head("c", "3")];
    let targets = [target(1, "a", TargetStatus::Live, "1")];
    let plan = plan_push("*", &heads, &targets, 2, long_ago());
    assert_eq!(plan.launch, vec![head("b", "2")]);
    assert_eq!(plan.refuse.len(), 1);
    assert_eq!(plan.refuse[0].0, head("c", "3"));
    assert!(plan.refuse[0].1.contains("max_playgrounds"), "{}", plan.refuse[0].1);
}

#[test]
fn a_refused_launch_waits_for_a_new_commit_or_a_change_of_the_trigger() {
    let mut refused = target(1, "main", TargetStatus::Refused, "a");
    refused.reason = Some("the launch was refused: variables.WHO: is required".into());
    let targets = [refused.clone()];
    assert!(plan_push("main", &[head("main", "a")], &targets, 10, long_ago()).launch.is_empty(), "not every pass");
    assert_eq!(plan_push("main", &[head("main", "b")], &targets, 10, long_ago()).launch.len(), 1, "a new commit");
    let changed = crate::time::now() + chrono::Duration::seconds(1);
    assert_eq!(plan_push("main", &[head("main", "a")], &targets, 10, changed).launch.len(), 1, "variables set");
    // Refused by the cap: launched as soon as there is room.
    let plan = plan_push("*", &[head("a", "1"), head("b", "2")], &[], 1, long_ago());
    let mut capped = target(2, "b", TargetStatus::Refused, "2");
    capped.reason = Some(plan.refuse[0].1.clone());
    assert_eq!(plan_push("*", &[head("b", "2")], &[capped], 1, long_ago()).launch, vec![head("b", "2")]);
}
