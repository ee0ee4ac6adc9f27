//! API key scopes, as the spec's Authentication section names them.
//!
//! Deny by default: a key grants exactly the scopes it holds, plus the one
//! implication the spec states (`playrooms:manage` grants the spec's other
//! playrooms scopes). Nothing else implies anything.
//!
//! `playrooms:trust` is play's own addition and an operator's scope:
//! marking a Playroom trusted lifts the Compose policy, which on a shared
//! host is root on it. No implication grants it and `all` in a list does
//! not include it; the first-start admin credential holds it
//! ([`ScopeSet::all`]), and a key gets it only when it is named.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

macro_rules! scopes {
    ($($variant:ident => $name:literal, $grants:literal;)*) => {
        /// One permission a key may hold.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Scope { $($variant),* }

        impl Scope {
    /// The refusal of a caller whose key lacks this scope: `403
    /// FORBIDDEN`, the scope named under `scope`.
    pub fn missing(self) -> crate::Error {
        let mut details = crate::FieldErrors::new();
        details.insert("scope".into(), vec![format!("this key lacks the scope {self}")]);
        crate::Error::Forbidden { message: format!("the scope {self} is required"), details }
    }

            /// Every scope, in the spec's order.
            pub const ALL: &'static [Scope] = &[$(Scope::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(Scope::$variant => $name),* }
            }

            /// What the scope grants, from the spec's scope table.
            pub fn description(self) -> &'static str {
                match self { $(Scope::$variant => $grants),* }
            }
        }

        impl FromStr for Scope {
            type Err = UnknownScope;
            fn from_str(s: &str) -> Result<Self, UnknownScope> {
                match s { $($name => Ok(Scope::$variant),)* other => Err(UnknownScope(other.to_owned())) }
            }
        }
    };
}

scopes! {
    PlayroomsRead => "playrooms:read", "view Playrooms";
    PlayroomsWrite => "playrooms:write", "create and update Playrooms";
    PlayroomsDelete => "playrooms:delete", "delete Playrooms";
    PlayroomsManage => "playrooms:manage", "full Playroom management: read, write, delete and SSH key operations";
    PlayroomsTrust => "playrooms:trust", "mark a Playroom trusted, which lifts the Compose policy on its host (an operator's scope: `all` does not include it)";
    PlayzonesRead => "playzones:read", "view Playzones";
    PlayzonesWrite => "playzones:write", "create, update, attach and sync Playzones";
    PlayzonesDelete => "playzones:delete", "delete Playzones";
    PlayspecsRead => "playspecs:read", "view Playspecs (also validate_compose)";
    PlayspecsWrite => "playspecs:write", "create and update Playspecs, including mounted files and registry credentials";
    PlayspecsDelete => "playspecs:delete", "delete Playspecs";
    PlaygroundsRead => "playgrounds:read", "view Playgrounds, including logs, compose and env metadata";
    PlaygroundsWrite => "playgrounds:write", "create, recreate and extend Playgrounds (also rollout and hard restart)";
    PlaygroundsDelete => "playgrounds:delete", "destroy Playgrounds";
    ImportTemplatesRead => "import_templates:read", "view import templates (also launch)";
    ImportTemplatesWrite => "import_templates:write", "create and update import templates";
    LaunchWrite => "launch:write", "use the Launch endpoint";
    KeysManage => "keys:manage", "create and delete API keys";
    ReposRead => "repos:read", "list repositories and source-hosting installations";
    ReposWrite => "repos:write", "repository create and push endpoints";
    WebhooksRead => "webhooks:read", "list webhook endpoints and delivery history";
    WebhooksWrite => "webhooks:write", "create, update and test webhook endpoints";
    WebhooksDelete => "webhooks:delete", "delete webhook endpoints";
}

impl Scope {
    /// Scopes for the operator of the installation, not for tenants: never
    /// implied, never part of `all`.
    pub fn is_operator(self) -> bool {
        matches!(self, Scope::PlayroomsTrust)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownScope(pub String);

impl fmt::Display for UnknownScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown scope {:?}", self.0)
    }
}

impl std::error::Error for UnknownScope {}

/// The scopes a key holds: one bit per [`Scope`] (by its place in
/// [`Scope::ALL`]), so that a set is copied with the key on every
/// authenticated request without an allocation (issue #16). Iterates,
/// stores and serializes in the spec's order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScopeSet(u32);

// Every scope has a bit.
const _: () = assert!(Scope::ALL.len() <= u32::BITS as usize);

impl Scope {
    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl ScopeSet {
    /// Every scope, the operator's included: the first-start admin
    /// credential.
    pub fn all() -> Self {
        Scope::ALL.iter().copied().collect()
    }

    /// Every scope a tenant's key may hold: what `all` means in a list.
    pub fn tenant() -> Self {
        Scope::ALL.iter().copied().filter(|s| !s.is_operator()).collect()
    }

    fn contains(&self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    fn insert(&mut self, scope: Scope) {
        self.0 |= scope.bit();
    }

    /// Whether holding this set permits an action that needs `required`.
    pub fn grants(&self, required: Scope) -> bool {
        self.contains(required)
            || (self.contains(Scope::PlayroomsManage)
                && matches!(required, Scope::PlayroomsRead | Scope::PlayroomsWrite | Scope::PlayroomsDelete))
    }

    /// Whether every scope of `other` is granted by this set: a key may only
    /// hand out what its creator holds.
    pub fn covers(&self, other: &ScopeSet) -> bool {
        other.iter().all(|s| self.grants(s))
    }

    /// The scopes of `other` this set does not grant.
    pub fn missing_from(&self, other: &ScopeSet) -> Vec<Scope> {
        other.iter().filter(|s| !self.grants(*s)).collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        Scope::ALL.iter().copied().filter(|s| self.contains(*s))
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The stored form: names separated by single spaces, sorted.
    pub fn to_db(&self) -> String {
        self.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")
    }

    /// Parses the stored form. Unknown names (from a newer version) are
    /// skipped rather than failing the key: deny by default.
    pub fn from_db(text: &str) -> Self {
        text.split_whitespace().filter_map(|s| s.parse().ok()).collect()
    }

    /// Parses a user list, comma or whitespace separated; `all` means every
    /// scope. Returns the unknown names as errors.
    pub fn parse_list(text: &str) -> Result<Self, Vec<UnknownScope>> {
        let mut set = ScopeSet::default();
        let mut unknown = Vec::new();
        for name in text.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()) {
            if name == "all" {
                set.0 |= ScopeSet::tenant().0;
                continue;
            }
            match name.parse() {
                Ok(scope) => set.insert(scope),
                Err(e) => unknown.push(e),
            }
        }
        if unknown.is_empty() { Ok(set) } else { Err(unknown) }
    }
}

impl FromIterator<Scope> for ScopeSet {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        let mut set = ScopeSet::default();
        for scope in iter {
            set.insert(scope);
        }
        set
    }
}

/// A list of names, in the spec's order.
impl Serialize for ScopeSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// A list of names; an unknown one is an error (unlike [`ScopeSet::from_db`]).
impl<'de> Deserialize<'de> for ScopeSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Vec::<Scope>::deserialize(d)?.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scope_round_trips_through_its_name() {
        assert_eq!(Scope::ALL.len(), 23);
        for scope in Scope::ALL {
            assert_eq!(scope.as_str().parse::<Scope>().unwrap(), *scope);
        }
    }

    #[test]
    fn manage_implies_the_other_playrooms_scopes_and_nothing_else() {
        let set: ScopeSet = [Scope::PlayroomsManage].into_iter().collect();
        for scope in Scope::ALL {
            let expected = scope.as_str().starts_with("playrooms:") && !scope.is_operator();
            assert_eq!(set.grants(*scope), expected, "{scope}");
        }
        let read_only: ScopeSet = [Scope::PlayroomsRead].into_iter().collect();
        assert!(!read_only.grants(Scope::PlayroomsManage));
    }

    #[test]
    fn parse_list_accepts_all_and_reports_unknown_names() {
        assert_eq!(ScopeSet::parse_list("all").unwrap(), ScopeSet::tenant());
        assert!(!ScopeSet::parse_list("all").unwrap().grants(Scope::PlayroomsTrust), "trust is named, never implied");
        assert!(ScopeSet::parse_list("all,playrooms:trust").unwrap().grants(Scope::PlayroomsTrust));
        let set = ScopeSet::parse_list("keys:manage, playrooms:read").unwrap();
        assert_eq!(set.to_db(), "playrooms:read keys:manage");
        let err = ScopeSet::parse_list("keys:manage,nope").unwrap_err();
        assert_eq!(err, vec![UnknownScope("nope".into())]);
    }

    #[test]
    fn covers_uses_implication() {
        let creator: ScopeSet = [Scope::PlayroomsManage].into_iter().collect();
        let wanted: ScopeSet = [Scope::PlayroomsRead, Scope::PlayroomsDelete].into_iter().collect();
        assert!(creator.covers(&wanted));
        let more: ScopeSet = [Scope::PlayroomsRead, Scope::KeysManage].into_iter().collect();
        assert_eq!(creator.missing_from(&more), vec![Scope::KeysManage]);
    }

    #[test]
    fn json_is_the_list_of_names_in_the_specs_order() {
        let set: ScopeSet = [Scope::WebhooksDelete, Scope::PlayroomsRead, Scope::KeysManage].into_iter().collect();
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(json, r#"["playrooms:read","keys:manage","webhooks:delete"]"#);
        assert_eq!(serde_json::from_str::<ScopeSet>(&json).unwrap(), set);
        assert!(serde_json::from_str::<ScopeSet>(r#"["keys:manage","nope"]"#).is_err());
        assert_eq!(serde_json::to_string(&ScopeSet::all()).unwrap().matches(':').count(), Scope::ALL.len());
    }

    #[test]
    fn stored_form_skips_unknown_names() {
        assert_eq!(ScopeSet::from_db("keys:manage retired:scope").to_db(), "keys:manage");
    }
}
