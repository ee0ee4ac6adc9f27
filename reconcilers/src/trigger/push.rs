//! A pass of a `push` trigger: one Playground per matching branch of the
//! Playzone's branch index (`play_model::trigger::plan_push`).

use play_core::playzone::link::{self, Linker};
use play_core::scm::attach;
use play_core::scm::flows::Caller;
use play_core::scm::hosts::Choice;
use play_model::model::event::{Acting, Actor};
use play_model::model::trigger::{Trigger, TriggerSettings};
use play_model::scm::model::Provider;
use play_model::trigger::{Head, plan_push};
use play_store::{playzone_branches, playzones, trigger_targets, triggers};

use super::{LaunchRef, TriggerLoop};
use crate::Result;
use crate::launching::describe;

/// Converges the trigger's branch targets; whether the next pass should
/// come sooner than the interval (never, for branches).
pub(super) async fn pass(r: &TriggerLoop, trigger: &Trigger, settings: &TriggerSettings, url: &str) -> Result<bool> {
    let linker = Linker {
        store: &r.store,
        account_id: trigger.account_id,
        policy: &r.config.launch.repository_policy,
        hosts: &r.config.launch.hosts,
        limits: &r.config.launch.quotas,
        actor: Actor::System,
        may_read_playzones: false,
    };
    let playzone_id = match attached(r, trigger, url).await? {
        Some(Ok(id)) => id,
        Some(Err(problem)) => {
            r.problem(trigger, &problem).await?;
            return Ok(false);
        }
        None => match link::for_url(linker, url).await {
            Ok(id) => id,
            Err(play_core::Error::Validation(errors)) => {
                let hint = match trigger.may_read_playzones {
                    true => "",
                    false => {
                        " (a trigger started with a key that also holds playzones:read attaches a private \
                         repository of the account's source hosts itself: PATCH /api/triggers/{id} with playroom_id)"
                    }
                };
                r.problem(trigger, &format!("repo_url {url}: {}{hint}", describe(&errors))).await?;
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        },
    };
    triggers::record_pass(&r.store, trigger.id, Some(playzone_id), None).await?;
    let Some(zone) = playzones::find(&r.store, playzone_id).await? else { return Ok(false) };
    if !r.freshen(&zone).await? {
        // Its first sync wakes this trigger.
        return Ok(false);
    }
    let heads: Vec<Head> = playzone_branches::branches(&r.store, zone.id, None, None, usize::MAX)
        .await?
        .into_iter()
        .map(|b| Head { branch: b.name, commit: b.commit })
        .collect();
    let pattern = settings.branch.clone().or(zone.default_branch.clone()).unwrap_or_else(|| "main".into());
    let targets: Vec<_> =
        trigger_targets::list(&r.store, trigger.id).await?.into_iter().filter(|t| t.ref_kind == "branch").collect();
    let plan = plan_push(&pattern, &heads, &targets, settings.max_playgrounds, trigger.updated_at);
    for target_id in &plan.destroy {
        let Some(target) = targets.iter().find(|t| t.id == *target_id) else { continue };
        r.destroy(trigger, target, &format!("branch {} was deleted", target.ref_name)).await?;
    }
    // A pattern keeps several branches' Playgrounds on one Playroom: each
    // gets its branch before its subdomains, or they would claim the
    // same hosts. One branch keeps the template's own.
    let several = pattern.contains('*');
    let at = |head: &Head| LaunchRef {
        playzone_id: zone.id,
        pin: head.branch.clone(),
        commit: head.commit.clone(),
        repo_url: url.to_owned(),
        subdomain_prefix: several.then(|| branch_label(&head.branch)),
    };
    for (target_id, head) in &plan.keep {
        let Some(target) = targets.iter().find(|t| t.id == *target_id) else { continue };
        r.keep(trigger, target, &at(head)).await?;
    }
    for head in &plan.launch {
        let target = trigger_targets::begin_launch(&r.store, trigger.id, "branch", &head.branch, &head.commit).await?;
        r.launch(trigger, &target, &at(head)).await?;
    }
    for (head, reason) in &plan.refuse {
        trigger_targets::refuse(&r.store, trigger, "branch", &head.branch, &head.commit, reason).await?;
    }
    Ok(false)
}

/// The Playzone attached to the repository `url` names on a source host of
/// the account (play's own Git host, a GitHub installation), for a trigger
/// whose key may read Playzones: attached on the first pass, as a pull
/// request trigger's is (issue #51, item 5: a private repository, which
/// `POST /api/repos` makes by default, is never linked by URL, and a
/// template cannot link one by id). `None`: not such a repository, or a
/// trigger without `playzones:read`, linked by URL as before (a public
/// repository; a private one is refused there, saying why).
async fn attached(r: &TriggerLoop, trigger: &Trigger, url: &str) -> Result<Option<std::result::Result<i64, String>>> {
    if !trigger.may_read_playzones {
        return Ok(None);
    }
    let hosts = &r.config.launch.hosts;
    let (full, provider) = if let Some(full) = hosts.builtin.as_deref().and_then(|host| host.repository_at(url)) {
        (full, Provider::Builtin)
    } else if let Some(full) = super::pulls::github_repository(hosts, url) {
        (full, Provider::Github)
    } else {
        return Ok(None);
    };
    let caller = Caller { by: Acting::new(trigger.account_id, Actor::System), limits: &r.config.launch.quotas };
    let choice = Choice { provider: Some(provider), installation_id: None };
    Ok(Some(match attach::attach(&r.store, hosts, &caller, &full.to_string(), choice).await {
        Ok(attached) => Ok(attached.playzone.id),
        Err(play_core::Error::NotFound(_)) => Err(format!("repo_url {url}: this account reaches no repository {full}")),
        Err(play_core::Error::ScmAppRequired(message)) => Err(message),
        Err(play_core::Error::Validation(errors)) => Err(format!("repo_url {url}: {}", describe(&errors))),
        Err(e) => return Err(e.into()),
    }))
}

/// `branch` as the start of a DNS label: lowercase letters, digits and
/// `-` (`feature/Login_v2` -> `feature-login-v2`), at most 40 characters,
/// so the service's own subdomain still fits after it.
fn branch_label(branch: &str) -> String {
    let label = play_model::compose::classify::dns_label(&branch.replace('/', "-"));
    let cut: String = label.chars().take(40).collect();
    let cut = cut.trim_end_matches('-');
    if cut.is_empty() { "branch".to_owned() } else { cut.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::branch_label;

    #[test]
    fn branches_become_dns_labels() {
        assert_eq!(branch_label("feature/Login_v2"), "feature-login-v2");
        assert_eq!(branch_label(&"x".repeat(60)).len(), 40);
        assert_eq!(branch_label("a/---"), "a");
        assert_eq!(branch_label("é"), "branch");
    }
}
