use serde_json::json;

use super::*;

#[test]
fn kinds_read_back_from_their_names_and_unknown_ones_list_the_known() {
    for kind in Kind::ALL {
        assert_eq!(kind.as_str().parse::<Kind>(), Ok(*kind));
    }
    let err = "Deployment".parse::<Kind>().unwrap_err();
    assert!(err.contains("Playground") && err.contains("Deployment"), "{err}");
}

#[test]
fn kinds_are_ordered_so_references_point_backwards() {
    assert!(Kind::Playroom < Kind::Playspec && Kind::Playspec < Kind::Playground);
    assert!(Kind::Playzone < Kind::Playspec);
}

#[test]
fn names_are_dns_labels_with_dots() {
    for good in ["web", "a", "web-1", "demo.staging", &"a".repeat(63)] {
        assert!(check_name(good).is_ok(), "{good}");
    }
    for bad in ["", "Web", "-web", "web-", "a b", "we/b", "../x", &"a".repeat(64), "web\n"] {
        assert!(check_name(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn apply_sets_are_bounded_paths() {
    assert!(check_apply_set("git:infra/envs/staging").is_ok());
    assert!(check_apply_set("").is_err());
    assert!(check_apply_set("a b").is_err());
    assert!(check_apply_set(&"a".repeat(201)).is_err());
}

#[test]
fn canonical_text_does_not_depend_on_key_order() {
    let a: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":3}}"#).unwrap();
    let b: serde_json::Value = serde_json::from_str(r#"{"a":{"x":3,"y":2},"b":1}"#).unwrap();
    assert_eq!(canonical(&a), canonical(&b));
    assert_eq!(canonical(&a), r#"{"a":{"x":3,"y":2},"b":1}"#);
}

#[test]
fn redaction_replaces_secrets_wherever_the_path_points() {
    let mut spec = json!({
        "ssh_private_key": "KEY",
        "env_overrides": {"TOKEN": "t0k", "MODE": "dev"},
        "registry_credentials": [{"password": "p1"}, {"password": "p2", "username": "u"}],
        "port": 22
    });
    let digest = |v: &str| format!("hmac:{}", v.len());
    let paths: Vec<SecretPath> =
        ["ssh_private_key", "env_overrides.TOKEN", "registry_credentials.*.password", "missing.x", "port"]
            .into_iter()
            .map(path)
            .collect();
    redact(&mut spec, &paths, &digest);
    assert_eq!(spec["ssh_private_key"], "<secret hmac:3>");
    assert_eq!(spec["env_overrides"]["TOKEN"], "<secret hmac:3>");
    assert_eq!(spec["env_overrides"]["MODE"], "dev");
    assert_eq!(spec["registry_credentials"][1]["password"], "<secret hmac:2>");
    assert_eq!(spec["registry_credentials"][1]["username"], "u");
    assert_eq!(spec["port"], 22, "not a string: left alone");
    assert!(!spec.to_string().contains("KEY") && !spec.to_string().contains("t0k"));
}

/// A key holding dots (an environment variable such as
/// `spring.datasource.password`, a service named `web.api`) is one
/// segment: its secret is redacted, not left in the clear.
#[test]
fn a_key_with_dots_is_redacted_as_one_segment() {
    let mut spec = json!({
        "env_overrides": {"spring.datasource.password": "hunter2"},
        "services": {"web.api": {"env_vars": {"API_TOKEN": "s3cret"}}}
    });
    let digest = |v: &str| format!("hmac:{}", v.len());
    let paths = vec![
        vec!["env_overrides".to_owned(), "spring.datasource.password".to_owned()],
        vec!["services".to_owned(), "web.api".to_owned(), "env_vars".to_owned(), "API_TOKEN".to_owned()],
    ];
    redact(&mut spec, &paths, &digest);
    let text = spec.to_string();
    assert!(!text.contains("hunter2") && !text.contains("s3cret"), "{text}");
    assert_eq!(spec["services"]["web.api"]["env_vars"]["API_TOKEN"], "<secret hmac:6>");
}

#[test]
fn the_diff_names_each_changed_leaf() {
    let old = json!({"a": 1, "m": {"x": "1", "gone": true}, "list": [1, 2]});
    let new = json!({"a": 1, "m": {"x": "2", "added": 5}, "list": [1, 3]});
    let d = diff("spec", Some(&old), Some(&new));
    let paths: Vec<&str> = d.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["spec.list", "spec.m.added", "spec.m.gone", "spec.m.x"]);
    assert_eq!(d[1].old, None);
    assert_eq!(d[2].new, None);
    assert!(diff("spec", Some(&old), Some(&old)).is_empty());
}

#[test]
fn decisions() {
    let spec = json!({"a": 1});
    let live = json!({"x": 1});
    let created = Decision::decide(None, &spec, None);
    assert_eq!(created.action, Action::Created);
    assert_eq!(created.diff.len(), 1);
    let same = Decision::decide(Some((&spec, &live)), &spec, Some(&live));
    assert_eq!(same.action, Action::Unchanged);
    assert!(same.diff.is_empty() && same.drift.is_empty());
    let edited = Decision::decide(Some((&spec, &live)), &json!({"a": 2}), Some(&live));
    assert_eq!(edited.action, Action::Configured);
    let drifted = Decision::decide(Some((&spec, &live)), &spec, Some(&json!({"x": 2})));
    assert_eq!(drifted.action, Action::Configured);
    assert_eq!(drifted.drift[0].path, "live.x");
}

#[test]
fn revisions_are_named_by_their_digest() {
    assert_eq!(revision_name("web", "3f2a9c1b77aa"), "web-3f2a9c1b");
}
