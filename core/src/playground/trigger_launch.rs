//! What a trigger's launch adds to a template launch (issue #30): its
//! build services linked to the trigger's Playzone and pinned to the
//! branch (or pull request) it follows, stable subdomains for a pull
//! request's preview, and the target the launch is fenced by.

use std::collections::BTreeMap;

use super::model::{GitConfig, ServiceSettings};
use crate::compose::classify::{ServiceDefinition, ServiceType, dns_label};

/// What a trigger's launch adds to a template launch (issue #30).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerLaunch {
    /// The Playzone the trigger follows.
    pub playzone_id: i64,
    /// The branch (or a pull request's pin name, `pull/<n>/head`) its
    /// services are built from.
    pub branch: String,
    /// The repository URL the trigger follows: build services naming it
    /// are linked to `playzone_id` by id. The trigger was made to act by a
    /// key that may read Playzones, so a Playzone that reads privately
    /// (attached through an installation) may be linked this way.
    pub repo_url: String,
    /// Put before each exposed service's subdomain (`pr-3`: `pr-3-web`), so
    /// a pull request's preview keeps its URLs across rollouts.
    pub subdomain_prefix: Option<String>,
    /// The target this launch is for, and its generation: the launch
    /// commits only while the target is still live at that generation, and
    /// records its Playground on the target in the same transaction (a
    /// pull request closed meanwhile can never get its preview back, and a
    /// target never loses track of a Playground it launched).
    pub target: (i64, i64),
    /// The trigger, the ref and the commit (the Playground's
    /// `playground.created` event carries them).
    pub origin: super::model::Origin,
}

/// The settings that build every service linked to the trigger's
/// Playzone from its branch.
pub(super) fn pinned_settings(
    services: &[ServiceDefinition],
    pin: Option<&TriggerLaunch>,
) -> BTreeMap<String, ServiceSettings> {
    let Some(pin) = pin else { return BTreeMap::new() };
    services
        .iter()
        .filter(|d| d.playzone_id == Some(pin.playzone_id))
        .map(|d| {
            let git = GitConfig { branch_name: Some(pin.branch.clone()), ..GitConfig::default() };
            (d.name.clone(), ServiceSettings { git_config: Some(git), ..ServiceSettings::default() })
        })
        .collect()
}

/// Links the build services naming the trigger's repository to its
/// Playzone by id; whether any was.
pub(super) fn link_to_trigger(services: &mut [ServiceDefinition], trigger: &TriggerLaunch) -> bool {
    let same = |url: &str| {
        let plain = |u: &str| u.trim_end_matches('/').trim_end_matches(".git").to_ascii_lowercase();
        plain(url) == plain(&trigger.repo_url)
    };
    let mut any = false;
    for def in services.iter_mut().filter(|d| d.service_type == ServiceType::Dynamic) {
        if def.playzone_id.is_none() && def.repo_url.as_deref().is_some_and(same) {
            def.playzone_id = Some(trigger.playzone_id);
            any = true;
        }
    }
    any
}

/// `<prefix>-<subdomain>` for each exposed service (its definition's
/// subdomain, else its name as a DNS label; `@` is the prefix alone), cut
/// to a DNS label's 63 characters.
pub(super) fn prefixed_subdomains(services: &[ServiceDefinition], trigger: &TriggerLaunch) -> BTreeMap<String, String> {
    let Some(prefix) = &trigger.subdomain_prefix else { return BTreeMap::new() };
    services
        .iter()
        .filter(|d| d.exposure.enabled)
        .map(|d| {
            let own = d.exposure.subdomain.clone().unwrap_or_else(|| dns_label(&d.name));
            let full = if own == "@" || own.is_empty() { prefix.clone() } else { format!("{prefix}-{own}") };
            let cut: String = full.chars().take(63).collect();
            (d.name.clone(), cut.trim_end_matches('-').to_owned())
        })
        .collect()
}
