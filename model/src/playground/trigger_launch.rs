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
pub fn pinned_settings(
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

/// Links the build services naming the trigger's repository, and those
/// naming none (`build: .` in a template written for the repository it
/// follows), to its Playzone by id; whether any was. A service naming
/// another repository keeps the usual links.
pub fn link_to_trigger(services: &mut [ServiceDefinition], trigger: &TriggerLaunch) -> bool {
    let same = |url: &str| {
        let plain = |u: &str| u.trim_end_matches('/').trim_end_matches(".git").to_ascii_lowercase();
        plain(url) == plain(&trigger.repo_url)
    };
    let mut any = false;
    for def in services.iter_mut().filter(|d| d.service_type == ServiceType::Dynamic) {
        if def.playzone_id.is_none() && def.repo_url.as_deref().is_none_or(same) {
            def.playzone_id = Some(trigger.playzone_id);
            any = true;
        }
    }
    any
}

/// `<prefix>-<subdomain>` for each exposed service (its definition's
/// subdomain, else its name as a DNS label; `@` is the prefix alone), cut
/// to a DNS label's 63 characters.
pub fn prefixed_subdomains(services: &[ServiceDefinition], trigger: &TriggerLaunch) -> BTreeMap<String, String> {
    let Some(prefix) = &trigger.subdomain_prefix else { return BTreeMap::new() };
    services
        .iter()
        .filter(|d| d.exposure.enabled)
        .map(|d| {
            let own = d.exposure.subdomain.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| dns_label(&d.name));
            let full = if own == "@" { prefix.clone() } else { format!("{prefix}-{own}") };
            let cut: String = full.chars().take(63).collect();
            (d.name.clone(), cut.trim_end_matches('-').to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compose::classify::Exposure;

    fn service(name: &str, dynamic: bool, repo_url: Option<&str>, subdomain: Option<&str>) -> ServiceDefinition {
        ServiceDefinition {
            name: name.into(),
            service_type: if dynamic { ServiceType::Dynamic } else { ServiceType::Static },
            playzone_id: None,
            dockerfile_path: None,
            env_file_path: None,
            workdir: None,
            image: None,
            exposure: Exposure {
                enabled: subdomain.is_some(),
                port: Some(80),
                subdomain: subdomain.map(Into::into),
                visibility: None,
            },
            repo_url: repo_url.map(Into::into),
        }
    }

    fn launch() -> TriggerLaunch {
        TriggerLaunch {
            playzone_id: 9,
            branch: "pull/3/head".into(),
            repo_url: "https://github.com/Acme/App".into(),
            subdomain_prefix: Some("pr-3".into()),
            target: (1, 1),
            origin: super::super::model::Origin {
                trigger_id: 1,
                ref_kind: "pull_request".into(),
                ref_name: "3".into(),
                commit: None,
            },
        }
    }

    #[test]
    fn services_of_the_trigger_repository_or_of_none_are_linked_by_id() {
        let mut services = [
            service("web", true, Some("https://github.com/acme/app.git"), Some("www")),
            service("worker", true, None, None),
            service("other", true, Some("https://github.com/acme/elsewhere"), None),
            service("db", false, None, None),
        ];
        assert!(link_to_trigger(&mut services, &launch()));
        let linked: Vec<Option<i64>> = services.iter().map(|d| d.playzone_id).collect();
        assert_eq!(linked, vec![Some(9), Some(9), None, None]);
        let pinned = pinned_settings(&services, Some(&launch()));
        assert_eq!(pinned.keys().collect::<Vec<_>>(), vec!["web", "worker"]);
        let branch = pinned["web"].git_config.as_ref().and_then(|g| g.branch_name.as_deref());
        assert_eq!(branch, Some("pull/3/head"));
    }

    #[test]
    fn exposed_services_get_the_prefix_before_their_subdomain() {
        let long = "s".repeat(70);
        let services = [
            service("web", true, None, Some("www")),
            service("api_v2", false, None, Some("")),
            service("root", false, None, Some("@")),
            service("long", false, None, Some(&long)),
            service("hidden", false, None, None),
        ];
        let subdomains = prefixed_subdomains(&services, &launch());
        assert_eq!(subdomains["web"], "pr-3-www");
        assert_eq!(subdomains["api_v2"], "pr-3-api-v2", "no subdomain: the service's name");
        assert_eq!(subdomains["root"], "pr-3", "`@` is the prefix alone");
        assert_eq!(subdomains["long"].len(), 63, "a DNS label at most");
        assert!(!subdomains.contains_key("hidden"));
        assert!(prefixed_subdomains(&services, &TriggerLaunch { subdomain_prefix: None, ..launch() }).is_empty());
    }
}
