//! Rules of webhook endpoints.

use std::collections::BTreeSet;
use std::path::Path;

use super::*;

fn input() -> Input {
    Input {
        url: Some("https://hooks.example.com/play".into()),
        events: Some(vec!["playground.created".into(), "playroom.updated".into()]),
        ..Input::default()
    }
}

fn fields(errors: FieldErrors) -> Vec<String> {
    errors.into_keys().collect()
}

/// Recorded types that the spec's event table does not name.
const RECORDED_NOT_OFFERED: &[&str] = &["playroom.edge.failed", "playroom.edge.restored"];

fn sources(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("webhook/tests.rs") {
            out.push(std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// The list offered to subscribers is the list play records: a new
/// `NewEvent::new(..)` must be added to `EVENT_TYPES` (or, deliberately,
/// to the recorded-but-not-offered list above).
#[test]
fn event_types_are_the_types_the_code_records() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = Vec::new();
    for crate_src in ["src", "../store/src", "../core/src", "../reconcilers/src", "../backup/src"] {
        sources(&root.join(crate_src), &mut texts);
    }
    let call = regex::Regex::new(r#"NewEvent::new\(\s*[^,]+,\s*"([a-z_]+)",\s*[^,]+,\s*"([a-z_.]+)""#).unwrap();
    let recorded: BTreeSet<String> =
        texts.iter().flat_map(|t| call.captures_iter(t).map(|c| format!("{}.{}", &c[1], &c[2]))).collect();
    let calls: usize = texts.iter().map(|t| t.matches("NewEvent::new(").count()).sum();
    let matched: usize = texts.iter().map(|t| call.find_iter(t).count()).sum();
    assert_eq!(calls, matched, "a NewEvent::new call this test cannot read: keep entity and action literal");
    let offered: BTreeSet<String> = EVENT_TYPES.iter().map(|s| s.to_string()).collect();
    let unlisted: Vec<_> =
        recorded.iter().filter(|t| !offered.contains(*t) && !RECORDED_NOT_OFFERED.contains(&t.as_str())).collect();
    assert!(unlisted.is_empty(), "recorded but neither offered nor excluded: {unlisted:?}");
    let never: Vec<_> = offered
        .iter()
        .filter(|t| !recorded.contains(*t) && t.as_str() != TEST_EVENT && !NEVER_FIRED.contains(&t.as_str()))
        .collect();
    assert!(never.is_empty(), "offered but never recorded: {never:?}");
    let fired: Vec<_> = NEVER_FIRED.iter().filter(|t| recorded.contains(**t)).collect();
    assert!(fired.is_empty(), "listed as never fired, yet recorded: {fired:?}");
    assert!(NEVER_FIRED.iter().all(|t| is_event_type(t) && !EVENT_TYPES.contains(t)), "offered, apart");
}

#[test]
fn generated_secrets_are_64_hex_characters_and_differ() {
    let (a, b) = (generate_secret(), generate_secret());
    assert_eq!(a.len(), 64);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{a}");
    assert_ne!(a, b);
}

#[test]
fn a_valid_create_passes_and_defaults_are_left_to_the_store() {
    let changes = Changes::validate(input(), true, &UrlPolicy::default()).unwrap();
    assert_eq!(changes.secret, None);
    assert_eq!(changes.events.unwrap().len(), 2);
}

#[test]
fn every_bad_field_is_named() {
    let bad = Input {
        url: Some("javascript:alert(1)".into()),
        events: Some(vec!["nope.created".into(), "playground.created".into(), "playground.created".into()]),
        event_filters: Some(BTreeMap::from([
            ("nope".to_string(), vec![1]),
            ("playground.created".to_string(), vec![3, -1]),
        ])),
        description: Some("x".repeat(MAX_DESCRIPTION_CHARS + 1)),
        secret: Some("short".into()),
        enabled: None,
    };
    let errors = Changes::validate(bad, true, &UrlPolicy::default()).unwrap_err();
    assert_eq!(
        fields(errors),
        [
            "webhook_endpoint.description",
            "webhook_endpoint.event_filters.nope",
            "webhook_endpoint.event_filters.playground.created[1]",
            "webhook_endpoint.events[0]",
            "webhook_endpoint.events[2]",
            "webhook_endpoint.secret",
            "webhook_endpoint.url",
        ]
    );
    let errors = Changes::validate(Input::default(), true, &UrlPolicy::default()).unwrap_err();
    assert_eq!(fields(errors), ["webhook_endpoint.events", "webhook_endpoint.url"]);
    let empty = Input { events: Some(vec![]), ..Input::default() };
    assert!(Changes::validate(empty, false, &UrlPolicy::default()).is_err());
    assert!(Changes::validate(Input::default(), false, &UrlPolicy::default()).is_ok());
}

#[test]
fn secrets_are_long_and_printable() {
    assert!(check_secret(&"a".repeat(32)).is_ok());
    assert!(check_secret(&"a".repeat(256)).is_ok());
    assert!(check_secret(&"a".repeat(31)).is_err());
    assert!(check_secret(&"a".repeat(257)).is_err());
    assert!(check_secret(&format!("{} x", "a".repeat(32))).is_err());
    assert!(check_secret(&format!("{}\u{e9}", "a".repeat(32))).is_err());
}

#[test]
fn filters_must_name_subscribed_types_and_follow_unsubscribes() {
    let stored = Subscription::default()
        .apply(
            Some(vec!["playground.created".into(), "playroom.updated".into()]),
            Some(BTreeMap::from([("playground.created".to_string(), vec![7])])),
        )
        .unwrap();
    assert!(stored.matches("playground.created", 7));
    assert!(!stored.matches("playground.created", 8));
    assert!(stored.matches("playroom.updated", 99));
    assert!(!stored.matches("playspec.created", 7));

    let errors = stored.apply(None, Some(BTreeMap::from([("playspec.created".to_string(), vec![])]))).unwrap_err();
    assert_eq!(fields(errors), ["webhook_endpoint.event_filters.playspec.created"]);

    // Unsubscribing from a type drops its stored filter.
    let narrowed = stored.apply(Some(vec!["playroom.updated".into()]), None).unwrap();
    assert!(narrowed.event_filters.is_empty());
    // Filters alone keep the stored events.
    let refiltered = stored.apply(None, Some(BTreeMap::new())).unwrap();
    assert_eq!((refiltered.events.len(), refiltered.event_filters.len()), (2, 0));
}

fn addrs(list: &[&str]) -> Vec<std::net::SocketAddr> {
    list.iter().map(|a| std::net::SocketAddr::new(a.parse().unwrap(), 0)).collect()
}

#[test]
fn every_resolved_address_must_be_allowed() {
    let policy = UrlPolicy { allow_http: true, allowlist: UrlPolicy::parse_allowlist("127.0.0.1").unwrap() };
    assert_eq!(policy.check_resolved("ok.example", addrs(&["93.184.216.34"])).unwrap().len(), 1);
    assert_eq!(policy.check_resolved("lo.example", addrs(&["127.0.0.1"])).unwrap().len(), 1);
    // One bad address among good ones refuses the name: a rebinding
    // resolver cannot smuggle a private address in.
    for bad in [
        &["93.184.216.34", "10.0.0.1"][..],
        &["127.0.0.2"],
        &["169.254.169.254"],
        &["::ffff:127.0.0.2"],
        &["::1"],
        &["fd00::1"],
        &["fe80::1"],
    ] {
        let error = policy.check_resolved("evil.example", addrs(bad)).unwrap_err();
        assert!(error.contains("not allowlisted"), "{bad:?}: {error}");
    }
    assert!(policy.check_resolved("none.example", vec![]).is_err());
    let named = UrlPolicy { allow_http: true, allowlist: UrlPolicy::parse_allowlist("hooks.internal").unwrap() };
    assert!(named.check_resolved("hooks.internal", addrs(&["10.1.2.3"])).is_ok());
    assert!(named.check_resolved("hooks.internal.", addrs(&["10.1.2.3"])).is_ok());
    assert!(named.check_resolved("other.internal", addrs(&["10.1.2.3"])).is_err());
}
