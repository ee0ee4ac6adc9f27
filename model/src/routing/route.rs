//! [`Route`]: what the edge serves for one routed service, with its Caddy
//! matcher set made when the route is made.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::path_rule::PathRule;
use super::rule::Rule;

/// One service's route.
///
/// Invariant: `matcher` is `"host": [fqdn]` beside the matcher set of the
/// path rule ([`PathRule::caddy_matcher`], checked at validation), and
/// `path_rule` and `rule` are that rule's canonical text, for display only:
/// [`Route::new`] makes all three from the same [`PathRule`], and nothing
/// parses them again. Caddy ANDs the matchers of a set, so whatever the rule
/// holds a request must match the host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Route {
    /// Unique per Playground and service, `<compose project>-<service>`:
    /// the route's `@id` in the edge's config.
    pub id: String,
    /// The host the route answers for.
    pub fqdn: String,
    /// The user's `svc/path_rule`, canonical; `None` routes every path.
    pub path_rule: Option<String>,
    /// The whole rule in Traefik's notation, host included, for display.
    pub rule: String,
    /// The Caddy matcher set of the route (its `match` list holds this one
    /// set). Not shown: views show `rule`.
    #[serde(skip)]
    pub matcher: Map<String, Value>,
    /// The container port the edge sends to.
    pub port: u16,
    /// The container the edge sends to, by its name on the edge network.
    pub upstream: String,
    /// Served over HTTPS (else plain HTTP).
    pub https: bool,
    /// Where users open the service.
    pub url: String,
}

/// Where a route sends requests and how users open it: everything of a
/// [`Route`] but how it matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The route's id (see [`Route::id`]).
    pub id: String,
    pub port: u16,
    pub upstream: String,
    pub https: bool,
    pub url: String,
}

impl Route {
    /// The route answering `fqdn`, narrowed by `path_rule`, sending to
    /// `target`.
    pub fn new(fqdn: String, path_rule: Option<&PathRule>, target: Target) -> Route {
        let host = Rule::Matcher { name: "Host", args: vec![fqdn.clone()] };
        let mut matcher = path_rule.map(|p| p.caddy_matcher().clone()).unwrap_or_default();
        matcher.insert("host".into(), json!([fqdn]));
        let Target { id, port, upstream, https, url } = target;
        Route {
            id,
            rule: match path_rule {
                None => host.to_string(),
                Some(path) => format!("{host} && ({path})"),
            },
            path_rule: path_rule.map(PathRule::to_string),
            matcher,
            fqdn,
            port,
            upstream,
            https,
            url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::caddy_matcher::to_caddy;
    use crate::routing::rule::parse;

    fn target() -> Target {
        Target { id: "p-web".into(), port: 80, upstream: "p-web-1".into(), https: false, url: "http://a.test/".into() }
    }

    #[test]
    fn a_route_carries_the_checked_matcher_beside_its_host() {
        let text = "PathPrefix(`/api`) || Path(`/x`)";
        let rule = PathRule::check(text).unwrap();
        assert_eq!(rule.caddy_matcher(), &to_caddy(&parse(text).unwrap()).unwrap());
        let route = Route::new("a.test".into(), Some(&rule), target());
        let mut expected = to_caddy(&parse(text).unwrap()).unwrap();
        expected.insert("host".into(), json!(["a.test"]));
        assert_eq!(route.matcher, expected);
        assert_eq!(route.rule, "Host(`a.test`) && (PathPrefix(`/api`) || Path(`/x`))");
        assert_eq!(route.path_rule.as_deref(), Some("PathPrefix(`/api`) || Path(`/x`)"));
    }

    #[test]
    fn a_route_without_a_path_rule_matches_its_host_only() {
        let route = Route::new("a.test".into(), None, target());
        assert_eq!(Value::Object(route.matcher), json!({"host": ["a.test"]}));
        assert_eq!(route.rule, "Host(`a.test`)");
        assert_eq!(route.path_rule, None);
    }
}
