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

fn pull(number: u64, base: &str, sha: &str, state: PullState, fork: bool) -> PullRequest {
    PullRequest {
        number,
        state,
        head_sha: sha.into(),
        head_ref: format!("topic-{number}"),
        head_repo: Some(if fork { "mallory/app".into() } else { "acme/app".into() }),
        base_ref: base.into(),
        fork,
        title: "t".into(),
        html_url: String::new(),
        updated_at: crate::time::now(),
    }
}

fn pr_target(id: i64, number: u64, status: TargetStatus, commit: &str) -> Target {
    Target { ref_kind: "pull_request".into(), ..target(id, &number.to_string(), status, commit) }
}

#[test]
fn open_pull_requests_on_followed_bases_get_previews_and_closed_ones_lose_them() {
    let pulls = [
        pull(1, "main", "a", PullState::Open, false),
        pull(2, "develop", "b", PullState::Open, false),
        pull(3, "main", "c", PullState::Closed, false),
    ];
    let targets = [pr_target(7, 3, TargetStatus::Live, "c"), pr_target(8, 1, TargetStatus::Live, "0")];
    let plan = plan_pulls(Some("main"), &pulls, &targets, false, 10, long_ago());
    assert_eq!(plan.keep, vec![(8, pulls[0].clone())], "kept: the build decides whether it is behind");
    assert_eq!(plan.destroy.len(), 1);
    assert_eq!(plan.destroy[0].0, 7);
    assert!(plan.destroy[0].1.contains("#3 was closed"), "{}", plan.destroy[0].1);
    assert!(plan.launch.is_empty(), "#2 is on a base the trigger does not follow");
    let every_base = plan_pulls(None, &pulls, &[], false, 10, long_ago());
    assert_eq!(every_base.launch.iter().map(|p| p.number).collect::<Vec<_>>(), vec![1, 2]);
}

#[test]
fn a_retargeted_or_vanished_pull_request_loses_its_preview() {
    let targets = [pr_target(1, 4, TargetStatus::Live, "a"), pr_target(2, 5, TargetStatus::Live, "b")];
    let pulls = [pull(4, "release", "a", PullState::Open, false)];
    let plan = plan_pulls(Some("main"), &pulls, &targets, false, 10, long_ago());
    let reasons: Vec<&str> = plan.destroy.iter().map(|(_, r)| r.as_str()).collect();
    assert!(reasons[0].contains("now targets release"), "{reasons:?}");
    assert!(reasons[1].contains("no longer open"), "{reasons:?}");
}

#[test]
fn forks_are_refused_once_per_commit_unless_allowed() {
    let pulls = [pull(9, "main", "f", PullState::Open, true)];
    let plan = plan_pulls(Some("main"), &pulls, &[], false, 10, long_ago());
    assert!(plan.launch.is_empty());
    assert!(plan.refuse[0].1.contains("fork (mallory/app)") && plan.refuse[0].1.contains("allow_forks"));
    let mut refused = pr_target(1, 9, TargetStatus::Refused, "f");
    refused.reason = Some(plan.refuse[0].1.clone());
    let again = plan_pulls(Some("main"), &pulls, std::slice::from_ref(&refused), false, 10, long_ago());
    assert_eq!(again, PullPlan::default(), "recorded once, not every pass");
    let allowed =
        plan_pulls(Some("main"), &pulls, &[refused], true, 10, crate::time::now() + chrono::Duration::seconds(1));
    assert_eq!(allowed.launch.len(), 1, "allow_forks changed the trigger");
    // A fork's live preview goes when forks are no longer allowed.
    let live = [pr_target(1, 9, TargetStatus::Live, "f")];
    assert!(plan_pulls(Some("main"), &pulls, &live, false, 10, long_ago()).destroy[0].1.contains("no longer deploys"));
}

#[test]
fn the_cap_counts_live_previews() {
    let pulls = [pull(1, "main", "a", PullState::Open, false), pull(2, "main", "b", PullState::Open, false)];
    let live = [pr_target(1, 1, TargetStatus::Live, "a")];
    let plan = plan_pulls(None, &pulls, &live, false, 1, long_ago());
    assert!(plan.launch.is_empty());
    assert!(plan.refuse[0].1.contains("max_playgrounds"), "{}", plan.refuse[0].1);
}
