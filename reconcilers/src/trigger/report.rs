//! Telling a pull request where its preview is (issue #30, item 4): one
//! comment per preview, created once and then edited (URLs, status,
//! commit, last update), and a GitHub Deployment of the preview's commit
//! with deployment statuses (`in_progress`, `success` with the
//! `environment_url`, `failure`, `inactive` when the preview is gone).
//!
//! Level-triggered like the rest of the pass: what a target would report
//! now is compared with a digest of what it last reported
//! (`trigger_targets::reported`), and only a difference is written. A
//! crash after the provider's write and before the record finds play's
//! comment again by its marker, and the commit's deployment by commit and
//! environment, so nothing is made twice. A provider that fails is logged
//! and tried again at the next pass.

use play_model::model::trigger::{Reported, Target, TargetStatus, Trigger};
use play_model::playground::{DesiredState, PlaygroundStatus};
use play_model::scm::names::FullName;
use play_model::scm::pulls::{DeploymentState, PreviewReport, ReviewHost};
use play_store::trigger_targets;
use play_store::{edges, playgrounds, playrooms};
use sha2::{Digest, Sha256};

use super::TriggerLoop;
use crate::Result;

/// Reports on every pull request target of `trigger`; whether one is
/// still converging (so the next pass should come soon).
pub(super) async fn all(r: &TriggerLoop, trigger: &Trigger, reviews: &dyn ReviewHost, full: &FullName) -> Result<bool> {
    let mut converging = false;
    for target in trigger_targets::list(&r.store, trigger.id).await? {
        if target.ref_kind != "pull_request" {
            continue;
        }
        let Ok(number) = target.ref_name.parse::<u64>() else { continue };
        let (report, settled) = describe(r, trigger, &target, number).await?;
        converging |= !settled;
        let mut done = trigger_targets::reported(&r.store, target.id).await?;
        let digest = digest(&report);
        if done.digest.as_deref() == Some(digest.as_str()) {
            continue;
        }
        match write(reviews, full, &report, &mut done).await {
            Ok(()) => {
                done.digest = Some(digest);
                trigger_targets::record_report(&r.store, target.id, &done).await?;
            }
            Err(e) => {
                converging = true;
                tracing::warn!(trigger = trigger.id, pull = number, error = %e, "reporting a preview failed");
                // What was written is kept, so a retry edits rather than
                // creates.
                trigger_targets::record_report(&r.store, target.id, &done).await?;
            }
        }
    }
    Ok(converging)
}

/// Writes `report`: the comment, then (when the preview has a commit to
/// deploy or a deployment to close) the deployment and its status.
async fn write(
    reviews: &dyn ReviewHost,
    full: &FullName,
    report: &PreviewReport,
    done: &mut Reported,
) -> Result<(), play_model::scm::ScmError> {
    done.comment_id = Some(reviews.comment(full, report, done.comment_id.as_deref()).await?);
    if report.commit.is_empty() {
        return Ok(());
    }
    let deployment = match (&done.deployment_id, report.state) {
        (Some(id), _) if done.deployment_sha.as_deref() == Some(report.commit.as_str()) => id.clone(),
        // Gone before anything was deployed: no deployment to close.
        (None, DeploymentState::Inactive) => return Ok(()),
        (Some(id), DeploymentState::Inactive) => id.clone(),
        _ => {
            let id = reviews.deployment(full, report).await?;
            done.deployment_id = Some(id.clone());
            done.deployment_sha = Some(report.commit.clone());
            id
        }
    };
    reviews.deployment_status(full, &deployment, report).await
}

fn digest(report: &PreviewReport) -> String {
    let mut hash = Sha256::new();
    for part in [
        report.state.as_str(),
        &report.commit,
        report.environment_url.as_deref().unwrap_or(""),
        &report.description,
        &report.body_without_time(),
    ] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    format!("{:x}", hash.finalize())
}

trait WithoutTime {
    fn body_without_time(&self) -> String;
}

impl WithoutTime for PreviewReport {
    /// The body but its last line (the time of the update, which changes
    /// at every pass and is not a change).
    fn body_without_time(&self) -> String {
        self.body.rsplit_once('\n').map_or(self.body.clone(), |(rest, _)| rest.to_owned())
    }
}

/// What `target` would report now, and whether that is settled (not a
/// preview still on its way).
async fn describe(r: &TriggerLoop, trigger: &Trigger, target: &Target, number: u64) -> Result<(PreviewReport, bool)> {
    let commit = target.commit_sha.clone().unwrap_or_default();
    let short: String = commit.chars().take(7).collect();
    let marker = format!("<!-- play-preview trigger={} pr={number} -->", trigger.id);
    let mut urls: Vec<(String, String)> = Vec::new();
    let (state, headline, settled) = match target.status {
        TargetStatus::Gone => (
            DeploymentState::Inactive,
            format!("destroyed: {}", target.reason.as_deref().unwrap_or("the pull request was closed")),
            true,
        ),
        TargetStatus::Stopped => (
            DeploymentState::Inactive,
            "destroyed outside the trigger (by a person or its TTL): the next commit launches it again".to_owned(),
            true,
        ),
        TargetStatus::Refused => {
            (DeploymentState::Failure, format!("not deployed: {}", target.reason.as_deref().unwrap_or("refused")), true)
        }
        TargetStatus::Live => match target.playground_id {
            None => (DeploymentState::InProgress, "launching".to_owned(), false),
            Some(id) => match playgrounds::get(&r.store, trigger.account_id, id).await {
                Err(play_core::Error::NotFound(_)) => (DeploymentState::InProgress, "launching".to_owned(), false),
                Err(e) => return Err(e.into()),
                Ok(p) if p.desired_state == DesiredState::Destroyed => {
                    (DeploymentState::Inactive, "being destroyed".to_owned(), false)
                }
                Ok(p) => {
                    urls = live_urls(r, &p).await?;
                    let converged = p.observed_generation >= p.generation;
                    match p.status {
                        PlaygroundStatus::Running if converged && !urls.is_empty() => {
                            (DeploymentState::Success, "running".to_owned(), true)
                        }
                        PlaygroundStatus::Running if converged => {
                            (DeploymentState::Success, "running (no service is exposed)".to_owned(), true)
                        }
                        // Asleep is deployed: its URLs answer and wake it.
                        PlaygroundStatus::Sleeping if converged => {
                            (DeploymentState::Success, "asleep: opening its URL wakes it".to_owned(), true)
                        }
                        // The step only: a pull request (perhaps public) is
                        // no place for the Playground's error text, which
                        // its events and `/debug` show to the account.
                        PlaygroundStatus::Failed => (
                            DeploymentState::Failure,
                            match p.error_step {
                                Some(step) => format!("failed at {step}: see the Playground's events in play"),
                                None => "failed: see the Playground's events in play".to_owned(),
                            },
                            true,
                        ),
                        _ => (DeploymentState::InProgress, format!("{} (deploying {short})", p.status), false),
                    }
                }
            },
        },
    };
    let mut body = format!("{marker}\n**play preview** of #{number}: {headline}\n\n");
    if !urls.is_empty() && state == DeploymentState::Success {
        body.push_str("| Service | URL |\n|---|---|\n");
        for (service, url) in &urls {
            body.push_str(&format!("| {service} | {url} |\n"));
        }
        body.push('\n');
    }
    if !short.is_empty() {
        body.push_str(&format!("Commit `{short}`"));
    }
    if let Some(id) = target.playground_id.filter(|_| target.status == TargetStatus::Live) {
        body.push_str(&format!(" · Playground {id}"));
    }
    body.push_str(&format!("\nUpdated {}", play_model::time::now().format("%Y-%m-%d %H:%M:%S UTC")));
    let environment_url = urls.first().map(|(_, url)| url.clone()).filter(|_| state == DeploymentState::Success);
    let report = PreviewReport {
        number,
        marker,
        body,
        environment: format!("play/trigger-{}/pr-{number}", trigger.id),
        commit: if target.status == TargetStatus::Refused { String::new() } else { commit },
        state,
        environment_url,
        description: headline.chars().take(140).collect(),
    };
    Ok((report, settled))
}

/// The Playground's routes the edge serves now, as URLs, by service.
async fn live_urls(r: &TriggerLoop, p: &play_model::playground::Playground) -> Result<Vec<(String, String)>> {
    let room = playrooms::get(&r.store, p.account_id, p.playroom_id).await?;
    let routes = edges::routes_of(&r.store, p.id).await?;
    Ok(routes
        .into_iter()
        .filter(|(_, row)| row.live)
        .map(|(service, row)| {
            let url = play_model::edge::hosts::url_for_host(
                &row.claim.host,
                &room.domains,
                room.acme_email.as_deref(),
                &room.edge,
            );
            (service, url)
        })
        .collect())
}
