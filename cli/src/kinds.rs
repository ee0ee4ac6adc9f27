//! The kinds the client commands name, how the command line spells them
//! and where the API keeps them. One table: a new kind is one row.

use std::fmt;
use std::str::FromStr;

/// A kind of API object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Playroom,
    Playzone,
    Playspec,
    Playground,
    ImportTemplate,
    WebhookEndpoint,
    /// A template's schedule (`/api/schedules`): made by the template, not
    /// by a manifest; named by its template's name or its id.
    Schedule,
    /// A template's trigger (`/api/triggers`), named as a schedule is.
    Trigger,
    /// The runs of a schedule (`get runs SCHEDULE`).
    Run,
}

/// What the command line and the API call a kind.
#[derive(Debug)]
pub struct Names {
    pub kind: Kind,
    /// As manifests and `/api/apply` write it; empty for the kinds a
    /// template makes (schedules, triggers, runs).
    pub manifest: &'static str,
    /// As `get` prints it (`playspec/web`).
    pub singular: &'static str,
    /// Every other word `get` accepts for it.
    pub aliases: &'static [&'static str],
    /// The collection's path.
    pub api: &'static str,
}

pub const KINDS: &[Names] = &[
    Names {
        kind: Kind::Playroom,
        manifest: "Playroom",
        singular: "playroom",
        aliases: &["playrooms", "pr", "room", "rooms"],
        api: "/api/playrooms",
    },
    Names {
        kind: Kind::Playzone,
        manifest: "Playzone",
        singular: "playzone",
        aliases: &["playzones", "pz", "zone", "zones"],
        api: "/api/playzones",
    },
    Names {
        kind: Kind::Playspec,
        manifest: "Playspec",
        singular: "playspec",
        aliases: &["playspecs", "ps", "spec", "specs"],
        api: "/api/playspecs",
    },
    Names {
        kind: Kind::Playground,
        manifest: "Playground",
        singular: "playground",
        aliases: &["playgrounds", "pg", "pgs"],
        api: "/api/playgrounds",
    },
    Names {
        kind: Kind::ImportTemplate,
        manifest: "ImportTemplate",
        singular: "template",
        aliases: &["templates", "importtemplates", "tpl"],
        api: "/api/import_templates",
    },
    Names {
        kind: Kind::WebhookEndpoint,
        manifest: "WebhookEndpoint",
        singular: "webhook",
        aliases: &["webhooks", "webhookendpoints", "wh", "hook", "hooks"],
        api: "/api/webhook_endpoints",
    },
    Names { kind: Kind::Schedule, manifest: "", singular: "schedule", aliases: &["schedules"], api: "/api/schedules" },
    Names { kind: Kind::Trigger, manifest: "", singular: "trigger", aliases: &["triggers"], api: "/api/triggers" },
    Names { kind: Kind::Run, manifest: "", singular: "run", aliases: &["runs"], api: "/api/schedules" },
];

impl Kind {
    pub fn names(self) -> &'static Names {
        // Every kind has its row (a test walks them).
        KINDS.iter().find(|n| n.kind == self).unwrap_or(&KINDS[0])
    }

    pub fn from_manifest(kind: &str) -> Option<Kind> {
        KINDS.iter().find(|n| !n.manifest.is_empty() && n.manifest == kind).map(|n| n.kind)
    }

    /// Whether manifests name this kind (the others are made by a
    /// template and follow it).
    pub fn in_manifests(self) -> bool {
        !self.names().manifest.is_empty()
    }

    /// Schedules, triggers and runs belong to a template and are named by
    /// its name.
    pub fn of_template(self) -> bool {
        matches!(self, Kind::Schedule | Kind::Trigger | Kind::Run)
    }

    /// `/api/playrooms/12`.
    pub fn path(self, id: i64) -> String {
        format!("{}/{id}", self.names().api)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.names().singular)
    }
}

impl FromStr for Kind {
    type Err = String;

    /// Any of a kind's words, case-insensitively.
    fn from_str(text: &str) -> Result<Kind, String> {
        let word = text.to_ascii_lowercase();
        KINDS
            .iter()
            .find(|n| {
                n.singular == word || n.manifest.eq_ignore_ascii_case(&word) || n.aliases.contains(&word.as_str())
            })
            .map(|n| n.kind)
            .ok_or_else(|| {
                let known: Vec<&str> = KINDS.iter().map(|n| n.singular).collect();
                format!("unknown kind {text:?}; one of {} (or their plurals and short names)", known.join(", "))
            })
    }
}

/// `KIND/NAME` (as `wait` takes it).
pub fn split_ref(text: &str) -> Result<(Kind, String), String> {
    let (kind, name) = text.split_once('/').ok_or_else(|| format!("{text:?} is not KIND/NAME"))?;
    if name.is_empty() {
        return Err(format!("{text:?} has no name"));
    }
    Ok((kind.parse()?, name.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_names_one_kind_and_every_kind_has_a_row() {
        let mut owner = std::collections::BTreeMap::new();
        for names in KINDS {
            assert_eq!(names.kind.names().manifest, names.manifest);
            if names.kind.in_manifests() {
                assert_eq!(Kind::from_manifest(names.manifest), Some(names.kind));
            }
            let lower =
                if names.manifest.is_empty() { names.singular.to_owned() } else { names.manifest.to_ascii_lowercase() };
            for word in [names.singular, lower.as_str()].into_iter().chain(names.aliases.iter().copied()) {
                assert_eq!(word.parse::<Kind>(), Ok(names.kind), "{word}");
                let previous = owner.insert(word.to_owned(), names.kind);
                assert!(previous.is_none_or(|k| k == names.kind), "{word} names two kinds");
            }
        }
        assert_eq!("PlayGrounds".parse::<Kind>(), Ok(Kind::Playground));
        assert!("deployments".parse::<Kind>().unwrap_err().contains("playroom, playzone"));
        assert_eq!(Kind::from_manifest(""), None, "no manifest names a schedule");
        assert_eq!("runs".parse::<Kind>(), Ok(Kind::Run));
    }

    #[test]
    fn references_split_on_the_first_slash() {
        assert_eq!(split_ref("pg/demo"), Ok((Kind::Playground, "demo".to_owned())));
        assert!(split_ref("demo").is_err());
        assert!(split_ref("pg/").is_err());
    }
}
