//! The rules of triggers (issue #30): which branches a trigger follows and
//! what a pass does about each of them. Pure: the loop
//! (`play_reconcilers::trigger`) reads the Playzone's branch index and the
//! trigger's targets, asks [`plan_push`], and carries the plan out.
//!
//! A `pull_request` trigger keeps one preview per open pull request whose
//! base it follows ([`plan_pulls`], over the Playzone's pull request
//! index).
//!
//! A `push` trigger keeps one Playground per matching branch: launched
//! when the branch appears (or moves after its Playground was destroyed
//! outside the trigger), rolled out when the branch moves, destroyed when
//! the branch is deleted. Level-triggered: the plan depends only on the
//! index and the targets, never on which event woke the pass.

use crate::model::trigger::{Target, TargetStatus};
use crate::scm::pulls::{PullRequest, PullState};

/// Playgrounds a trigger keeps at once without `max_playgrounds`.
pub const DEFAULT_MAX_PLAYGROUNDS: u64 = 10;
/// The highest `max_playgrounds` a template may ask for.
pub const MAX_PLAYGROUNDS: u64 = 50;
/// The longest branch pattern.
const MAX_PATTERN_CHARS: usize = 200;
/// How a refusal by the cap begins: such a target is launched as soon as
/// a slot frees, while a refused launch (a missing variable, a quota) is
/// tried again only at a new commit or after the trigger changed.
const CAP_REFUSAL: &str = "the trigger already keeps";

/// Checks a `trigger_config.branch`: a branch name, or a pattern in which
/// `*` stands for any characters (`feature/*`, `*`).
pub fn check_branch_pattern(pattern: &str) -> Result<(), String> {
    if pattern.is_empty() || pattern.chars().count() > MAX_PATTERN_CHARS {
        return Err(format!("must be a branch name or pattern of 1 to {MAX_PATTERN_CHARS} characters"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '*');
    if let Some(c) = pattern.chars().find(|c| !allowed(*c)) {
        return Err(format!("`{c}` is not allowed: use letters, digits, `.`, `_`, `-`, `/` and `*` (any characters)"));
    }
    if pattern.contains("..") || pattern.starts_with('/') || pattern.ends_with('/') || pattern.contains("//") {
        return Err("is not a valid branch name (`..`, or a `/` at either end or twice)".into());
    }
    Ok(())
}

/// Whether branch `name` matches `pattern` (`*`: any characters, `/`
/// included).
pub fn branch_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}

/// A branch of the Playzone's index: name and head commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub branch: String,
    pub commit: String,
}

/// What a pass of a `push` trigger does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushPlan {
    /// Branches to launch a Playground for, at their heads.
    pub launch: Vec<Head>,
    /// Targets whose branch is gone: destroy their Playgrounds.
    pub destroy: Vec<i64>,
    /// Live targets to look at (roll out when their build is behind).
    pub keep: Vec<(i64, Head)>,
    /// Branches over the cap, with the reason (recorded, not launched).
    pub refuse: Vec<(Head, String)>,
}

/// Plans a pass of a push trigger on `pattern` over the index `heads`,
/// given the trigger's `targets` (every status), its cap, and when its
/// settings last changed.
///
/// - a live target whose branch no longer matches (deleted) is destroyed;
/// - a live target whose branch is there is kept (the loop rolls it out
///   when its build is behind the index);
/// - a matching branch without a live target is launched, unless its
///   target was stopped outside the trigger at this very commit (a user
///   or the TTL destroyed it: the next commit brings it back), or the cap
///   is reached (refused with the reason, in branch order). A launch that
///   was refused is not tried again at the same commit until the trigger
///   changes (its variables, its Playroom): every pass would otherwise
///   try, fail and record it again.
pub fn plan_push(
    pattern: &str,
    heads: &[Head],
    targets: &[Target],
    max_playgrounds: u64,
    changed_at: crate::time::Timestamp,
) -> PushPlan {
    let mut plan = PushPlan::default();
    let matching: Vec<&Head> = heads.iter().filter(|h| branch_matches(pattern, &h.branch)).collect();
    let mut live = 0u64;
    for target in targets.iter().filter(|t| t.status == TargetStatus::Live) {
        match matching.iter().find(|h| h.branch == target.ref_name) {
            Some(head) => {
                live += 1;
                plan.keep.push((target.id, (*head).clone()));
            }
            None => plan.destroy.push(target.id),
        }
    }
    for head in matching {
        if settled(targets.iter().find(|t| t.ref_name == head.branch), &head.commit, changed_at) {
            continue;
        }
        if live >= max_playgrounds {
            let reason = format!(
                "{CAP_REFUSAL} {max_playgrounds} Playgrounds (max_playgrounds): delete a branch or raise the limit"
            );
            plan.refuse.push((head.clone(), reason));
            continue;
        }
        live += 1;
        plan.launch.push(head.clone());
    }
    plan
}

/// Whether a ref at `commit` needs no launch: its target is live, or was
/// stopped outside the trigger at this very commit, or its launch was
/// refused at this commit since the trigger last changed (not by the cap,
/// which is tried again as soon as there is room).
fn settled(target: Option<&Target>, commit: &str, changed_at: crate::time::Timestamp) -> bool {
    let Some(t) = target else { return false };
    let same_commit = t.commit_sha.as_deref() == Some(commit);
    match t.status {
        TargetStatus::Live => true,
        TargetStatus::Stopped => same_commit,
        TargetStatus::Refused => {
            same_commit
                && t.updated_at >= changed_at
                && !t.reason.as_deref().is_some_and(|r| r.starts_with(CAP_REFUSAL))
        }
        TargetStatus::Gone => false,
    }
}

/// What a pass of a `pull_request` trigger does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullPlan {
    /// Pull requests to launch a preview for, at their heads.
    pub launch: Vec<PullRequest>,
    /// Live targets whose pull request closed or left the trigger's
    /// reach: destroy their previews, with the reason.
    pub destroy: Vec<(i64, String)>,
    /// Live targets to look at (roll out when their build is behind).
    pub keep: Vec<(i64, PullRequest)>,
    /// Pull requests not deployed, with the reason (a fork, the cap).
    pub refuse: Vec<(PullRequest, String)>,
}

/// How a refusal of a fork's pull request begins.
const FORK_REFUSAL: &str = "comes from a fork";

/// Plans a pass of a pull-request trigger over the Playzone's pull request
/// index `pulls` (open and closed), given the trigger's pull request
/// `targets`. `base`: the base branches followed (a pattern; `None`:
/// every base).
///
/// - a live target whose pull request is open on a followed base (and not
///   a fork the trigger refuses) is kept; otherwise (closed, merged,
///   retargeted, gone from the index, a fork no longer allowed) its
///   preview is destroyed with the reason;
/// - an open pull request without a live target is launched, unless its
///   preview was destroyed outside the trigger at this very commit, its
///   head is in a fork and `allow_forks` is off (refused, recorded once
///   per commit), or the cap is reached (refused, launched when a slot
///   frees). A refused launch is not tried again at the same commit until
///   the trigger changes, as for branches.
pub fn plan_pulls(
    base: Option<&str>,
    pulls: &[PullRequest],
    targets: &[Target],
    allow_forks: bool,
    max_playgrounds: u64,
    changed_at: crate::time::Timestamp,
) -> PullPlan {
    let mut plan = PullPlan::default();
    let followed = |p: &PullRequest| p.state == PullState::Open && base.is_none_or(|b| branch_matches(b, &p.base_ref));
    let find = |t: &Target| pulls.iter().find(|p| p.number.to_string() == t.ref_name);
    let mut live = 0u64;
    for target in targets.iter().filter(|t| t.status == TargetStatus::Live) {
        let why = match find(target) {
            None => Some(format!("pull request #{} is no longer open", target.ref_name)),
            Some(p) if p.state == PullState::Closed => Some(format!("pull request #{} was closed", p.number)),
            Some(p) if !followed(p) => Some(format!(
                "pull request #{} now targets {}, which the trigger does not follow",
                p.number, p.base_ref
            )),
            Some(p) if p.fork && !allow_forks => {
                Some(format!("pull request #{} {FORK_REFUSAL}, and the trigger no longer deploys forks", p.number))
            }
            Some(p) => {
                live += 1;
                plan.keep.push((target.id, p.clone()));
                None
            }
        };
        if let Some(reason) = why {
            plan.destroy.push((target.id, reason));
        }
    }
    for pull in pulls.iter().filter(|p| followed(p)) {
        let name = pull.number.to_string();
        if settled(targets.iter().find(|t| t.ref_name == name), &pull.head_sha, changed_at) {
            continue;
        }
        if pull.fork && !allow_forks {
            let from = pull.head_repo.as_deref().unwrap_or("a deleted repository");
            let reason = format!(
                "pull request #{} {FORK_REFUSAL} ({from}): its code is not deployed unless the trigger sets \
                 allow_forks: true",
                pull.number
            );
            plan.refuse.push((pull.clone(), reason));
            continue;
        }
        if live >= max_playgrounds {
            let reason = format!(
                "{CAP_REFUSAL} {max_playgrounds} previews (max_playgrounds): close a pull request or raise the limit"
            );
            plan.refuse.push((pull.clone(), reason));
            continue;
        }
        live += 1;
        plan.launch.push(pull.clone());
    }
    plan
}

#[cfg(test)]
#[path = "trigger_tests.rs"]
mod tests;
