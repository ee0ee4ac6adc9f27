//! A pass of a `pull_request` trigger: one preview per open pull request
//! whose base the trigger follows (`play_model::trigger::plan_pulls`),
//! over the Playzone's pull request index.
//!
//! The repository must be one a GitHub installation of the account
//! reaches: it is attached (a Playzone read through the installation) on
//! the first pass. Once per interval a pass reads the provider's open pull
//! requests into the index (the later description wins over a
//! delivery's), and reads one by one those the index still has open but
//! the list does not: a `closed` delivery that never arrived is repaired
//! there. Deliveries write the index themselves, so the passes in between
//! (a converging preview's reports) call the provider for reports only. Then it plans,
//! carries the plan out, and reports on each preview (`report`).

use std::collections::BTreeSet;

use play_core::scm::attach;
use play_core::scm::flows::Caller;
use play_core::scm::hosts::Choice;
use play_model::model::event::{Acting, Actor};
use play_model::model::trigger::{Trigger, TriggerSettings};
use play_model::scm::model::Provider;
use play_model::scm::names::FullName;
use play_model::scm::pulls::{PullRequest, PullState, ReviewHost, pull_ref};
use play_model::trigger::plan_pulls;
use play_store::{playzone_pulls, repositories, trigger_targets, triggers};

use super::{LaunchRef, TriggerLoop, report};
use crate::Result;
use crate::launching::describe;

/// The `owner/name` a repository URL names (its last two path segments,
/// without `.git`), lowercase as play records names.
fn full_name_in(url: &str) -> Option<FullName> {
    let (_, rest) = url.split_once("://")?;
    let (_, path) = rest.split_once('/')?;
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let mut segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let name = segments.pop()?.trim_end_matches(".git");
    let owner = segments.pop()?;
    if !segments.is_empty() {
        return None;
    }
    FullName::parse("repo_url", &format!("{owner}/{name}").to_ascii_lowercase()).ok()
}

/// A URL as compared: lowercase, without a trailing `/` or `.git`.
fn plain(url: &str) -> String {
    url.trim_end_matches('/').trim_end_matches(".git").to_ascii_lowercase()
}

/// The GitHub repository `url` names (its page's URL, `.git` or not), when
/// this play serves GitHub.
pub(super) fn github_repository(hosts: &play_core::scm::hosts::SourceHosts, url: &str) -> Option<FullName> {
    let github = |full: &FullName| hosts.urls(Provider::Github, full);
    full_name_in(url).filter(|f| github(f).is_some_and(|u| plain(&u.html_url) == plain(url)))
}

/// Converges the trigger's pull request targets and reports on them;
/// whether a preview is still converging (the next pass comes sooner).
pub(super) async fn pass(r: &TriggerLoop, trigger: &Trigger, settings: &TriggerSettings, url: &str) -> Result<bool> {
    if !trigger.may_read_playzones {
        r.problem(trigger, play_model::model::trigger::NEEDS_PLAYZONES_READ).await?;
        return Ok(false);
    }
    let hosts = &r.config.launch.hosts;
    let Some(full) = github_repository(hosts, url) else {
        let problem = format!(
            "repo_url {url} names no GitHub repository this play serves: pull_request triggers follow a repository \
             of one of the account's GitHub App installations (https://github.com/<owner>/<name>)"
        );
        r.problem(trigger, &problem).await?;
        return Ok(false);
    };
    let caller = Caller { by: Acting::new(trigger.account_id, Actor::System), limits: &r.config.launch.quotas };
    let choice = Choice { provider: Some(Provider::Github), installation_id: None };
    let attached = match attach::attach(&r.store, hosts, &caller, &full.to_string(), choice).await {
        Ok(attached) => attached,
        Err(play_core::Error::NotFound(_)) => {
            let problem = format!(
                "no GitHub installation of this account reaches {full}: install the GitHub App on {} with access \
                 to it (POST /api/scm_installations/github)",
                full.owner
            );
            r.problem(trigger, &problem).await?;
            return Ok(false);
        }
        Err(play_core::Error::ScmAppRequired(message)) => {
            r.problem(trigger, &message).await?;
            return Ok(false);
        }
        Err(play_core::Error::Validation(errors)) => {
            r.problem(trigger, &format!("repo_url {url}: {}", describe(&errors))).await?;
            return Ok(false);
        }
        Err(e) => return Err(e.into()),
    };
    let zone = attached.playzone;
    let repository = repositories::readable_by_name(&r.store, trigger.account_id, &full).await?;
    let host = hosts.of_repository(&r.store, &repository).await?;
    let Some(reviews) = host.reviews() else {
        r.problem(trigger, &format!("{full} is on a source host without pull requests")).await?;
        return Ok(false);
    };
    if r.list_due(trigger.id)
        && let Err(problem) = refresh(r, reviews, &repository.full_name, zone.id).await
    {
        r.list_failed(trigger.id);
        r.problem(trigger, &format!("listing the pull requests of {full} failed: {problem}")).await?;
        return Ok(false);
    }
    triggers::record_pass(&r.store, trigger.id, Some(zone.id), None).await?;

    let index = playzone_pulls::list(&r.store, zone.id).await?;
    let targets: Vec<_> = trigger_targets::list(&r.store, trigger.id)
        .await?
        .into_iter()
        .filter(|t| t.ref_kind == "pull_request")
        .collect();
    let plan = plan_pulls(
        settings.branch.as_deref(),
        &index,
        &targets,
        settings.allow_forks,
        settings.max_playgrounds,
        trigger.updated_at,
    );
    for (target_id, reason) in &plan.destroy {
        let Some(target) = targets.iter().find(|t| t.id == *target_id) else { continue };
        r.destroy(trigger, target, reason).await?;
    }
    let at = |pull: &PullRequest| LaunchRef {
        playzone_id: zone.id,
        pin: pull_ref(pull.number),
        commit: pull.head_sha.clone(),
        repo_url: url.to_owned(),
        subdomain_prefix: Some(format!("pr-{}", pull.number)),
    };
    for (target_id, pull) in &plan.keep {
        let Some(target) = targets.iter().find(|t| t.id == *target_id) else { continue };
        r.keep(trigger, target, &at(pull)).await?;
    }
    for pull in &plan.launch {
        let name = pull.number.to_string();
        let target = trigger_targets::begin_launch(&r.store, trigger.id, "pull_request", &name, &pull.head_sha).await?;
        r.launch(trigger, &target, &at(pull)).await?;
    }
    for (pull, reason) in &plan.refuse {
        let name = pull.number.to_string();
        trigger_targets::refuse(&r.store, trigger, "pull_request", &name, &pull.head_sha, reason).await?;
    }
    report::all(r, trigger, reviews, &repository.full_name).await
}

/// Reads the repository's open pull requests into the index, and one by
/// one those the index still has open but the list does not (closed,
/// unless a read says otherwise: the list may lag a delivery that opened
/// one). A `closed` delivery that never arrived is repaired here.
async fn refresh(
    r: &TriggerLoop,
    reviews: &dyn ReviewHost,
    full: &FullName,
    zone: i64,
) -> std::result::Result<(), String> {
    let open = reviews.open_pulls(full).await.map_err(|e| e.to_string())?;
    playzone_pulls::record(&r.store, zone, &open).await.map_err(|e| e.to_string())?;
    let listed: BTreeSet<u64> = open.iter().map(|p| p.number).collect();
    let mut checked: Vec<PullRequest> = Vec::new();
    for stale in playzone_pulls::list(&r.store, zone).await.map_err(|e| e.to_string())? {
        if stale.state != PullState::Open || listed.contains(&stale.number) {
            continue;
        }
        match reviews.pull(full, stale.number).await {
            Ok(Some(now)) => checked.push(now),
            Ok(None) => {
                checked.push(PullRequest { state: PullState::Closed, updated_at: play_model::time::now(), ..stale })
            }
            Err(e) => tracing::warn!(zone, pull = stale.number, error = %e, "reading a pull request failed"),
        }
    }
    playzone_pulls::record(&r.store, zone, &checked).await.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_url_names_its_owner_and_name() {
        let named = |url: &str| full_name_in(url).map(|f| f.to_string());
        assert_eq!(named("https://github.com/Acme/App.git").as_deref(), Some("acme/app"));
        assert_eq!(named("https://github.com/acme/app/").as_deref(), Some("acme/app"));
        assert_eq!(named("https://github.com/acme"), None);
        assert_eq!(named("https://github.com/a/b/c"), None);
        assert_eq!(named("not a url"), None);
    }
}
