//! Quotas: the countable resources of an account and the configured
//! default limits (`store::quotas` counts and checks them).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A countable resource. Each maps to the table holding it; resources are
/// added here as their tables arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    ApiKeys,
    Playrooms,
    Playspecs,
    Playgrounds,
    ImportTemplates,
    WebhookEndpoints,
    Playzones,
    Repositories,
    /// Templates with an enabled trigger.
    Triggers,
    /// Templates with an enabled schedule.
    Schedules,
}

impl Resource {
    pub const ALL: &'static [Resource] = &[
        Resource::ApiKeys,
        Resource::Playrooms,
        Resource::Playspecs,
        Resource::Playgrounds,
        Resource::ImportTemplates,
        Resource::WebhookEndpoints,
        Resource::Playzones,
        Resource::Repositories,
        Resource::Triggers,
        Resource::Schedules,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Resource::ApiKeys => "api_keys",
            Resource::Playrooms => "playrooms",
            Resource::Playspecs => "playspecs",
            Resource::Playgrounds => "playgrounds",
            Resource::ImportTemplates => "import_templates",
            Resource::WebhookEndpoints => "webhook_endpoints",
            Resource::Playzones => "playzones",
            Resource::Repositories => "repositories",
            Resource::Triggers => "triggers",
            Resource::Schedules => "schedules",
        }
    }

    pub fn default_limit(self) -> i64 {
        match self {
            Resource::ApiKeys => 100,
            Resource::Playrooms => 20,
            Resource::Playspecs => 200,
            Resource::Playgrounds => 20,
            Resource::ImportTemplates => 100,
            Resource::WebhookEndpoints => 20,
            Resource::Playzones => 100,
            Resource::Repositories => 100,
            Resource::Triggers => 20,
            Resource::Schedules => 20,
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Resource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Resource::ALL.iter().copied().find(|r| r.as_str() == s).ok_or_else(|| format!("unknown quota resource {s:?}"))
    }
}

/// The configured default limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuotaLimits(BTreeMap<Resource, i64>);

impl QuotaLimits {
    pub fn limit(&self, resource: Resource) -> i64 {
        self.0.get(&resource).copied().unwrap_or_else(|| resource.default_limit())
    }

    pub fn set(&mut self, resource: Resource, limit: i64) {
        self.0.insert(resource, limit);
    }

    /// Parses `api_keys=50,playgrounds=10`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut limits = QuotaLimits::default();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item.split_once('=').ok_or_else(|| format!("expected RESOURCE=N, got {item:?}"))?;
            let resource: Resource = name.trim().parse()?;
            let limit: i64 = value.trim().parse().map_err(|_| format!("{name}: {value:?} is not a whole number"))?;
            if limit < 0 {
                return Err(format!("{name}: a limit cannot be negative"));
            }
            limits.set(resource, limit);
        }
        Ok(limits)
    }
}
