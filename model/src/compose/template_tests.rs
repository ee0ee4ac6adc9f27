use std::collections::BTreeMap;

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;

use super::*;
use crate::compose::{Policy, parse_compose};

fn vars(pairs: &[(&str, serde_json::Value)]) -> BTreeMap<String, serde_json::Value> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

fn run(body: &str, provided: &[(&str, serde_json::Value)]) -> Result<Compiled, FieldErrors> {
    compile(body, &vars(provided), &mut StdRng::seed_from_u64(7), &Policy::UNTRUSTED)
}

fn service_env(compiled: &Compiled, service: &str, key: &str) -> Option<String> {
    let (report, model) = parse_compose(&compiled.compose_yaml, &Policy::UNTRUSTED);
    assert!(report.valid, "{:?}", report.errors);
    model?.services.get(service)?.environment.get(key).cloned().flatten()
}

const BODY: &str = r#"
svc:
  variables:
    PASSWORD: {required: true, validation: "/^[^ ]{4,}$/"}
    TAG: {default: "16"}
    TOKEN: {random: true}
    NOTE: {}
services:
  db:
    image: postgres:$$var__TAG
    environment:
      POSTGRES_PASSWORD: $$var__PASSWORD
      TOKEN: $$var__TOKEN
      SESSION: $$random__TOKEN
      SALT: $$random__SALT-$$random__SALT
      NOTE: "[$$var__NOTE]"
      LITERAL: "$$HOME"
"#;

fn body_with_salt() -> String {
    BODY.replace("    NOTE: {}\n", "    NOTE: {}\n    SALT: {}\n")
}

#[test]
fn substitutes_defaults_and_generates_random_values() {
    let compiled = run(&body_with_salt(), &[("PASSWORD", json!("s3cret!"))]).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(!compiled.compose_yaml.contains("svc"));
    assert!(!compiled.compose_yaml.contains("$$var__"));
    assert_eq!(service_env(&compiled, "db", "POSTGRES_PASSWORD").as_deref(), Some("s3cret!"));
    assert_eq!(service_env(&compiled, "db", "NOTE").as_deref(), Some("[]"));
    assert_eq!(service_env(&compiled, "db", "LITERAL").as_deref(), Some("$HOME"));
    let token = service_env(&compiled, "db", "TOKEN").unwrap_or_default();
    assert_eq!(token.len(), 16);
    assert!(token.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{token}");
    assert_eq!(service_env(&compiled, "db", "SESSION"), Some(token.clone()), "same name, same value");
    let salt = &compiled.generated["SALT"];
    assert_eq!(service_env(&compiled, "db", "SALT"), Some(format!("{salt}-{salt}")));
    assert_ne!(salt, &token);
    assert_eq!(compiled.variables_used["TAG"], "16");
    let (_, model) = parse_compose(&compiled.compose_yaml, &Policy::UNTRUSTED);
    assert_eq!(model.and_then(|m| m.services["db"].image.clone()).as_deref(), Some("postgres:16"));
}

#[test]
fn provided_values_override_defaults_and_random() {
    let compiled =
        run(&body_with_salt(), &[("PASSWORD", json!("abcd")), ("TAG", json!(17)), ("TOKEN", json!("given"))])
            .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(compiled.variables_used["TAG"], "17");
    assert_eq!(service_env(&compiled, "db", "TOKEN").as_deref(), Some("given"));
    assert_ne!(service_env(&compiled, "db", "SESSION").as_deref(), Some("given"), "$$random__ is always generated");
}

#[test]
fn values_are_not_re_expanded_and_dollars_survive() {
    let tricky = "$$var__TAG ${HOME} $x $$";
    let compiled = run(&body_with_salt(), &[("PASSWORD", json!("abcd")), ("NOTE", json!(tricky))])
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(service_env(&compiled, "db", "NOTE"), Some(format!("[{tricky}]")));
}

#[test]
fn values_cannot_inject_yaml() {
    let evil = "x\n    privileged: true\n  evil:\n    image: busybox";
    let compiled = run(&body_with_salt(), &[("PASSWORD", json!("abcd")), ("NOTE", json!(evil))])
        .unwrap_or_else(|e| panic!("{e:?}"));
    let (_, model) = parse_compose(&compiled.compose_yaml, &Policy::UNTRUSTED);
    let model = model.unwrap_or_default();
    assert_eq!(model.services.len(), 1);
    assert!(!model.services["db"].privileged);
}

#[test]
fn variable_errors_are_field_addressed() {
    let body = body_with_salt();
    type Case<'a> = (Vec<(&'a str, serde_json::Value)>, &'a str, &'a str);
    let cases: Vec<Case<'_>> = vec![
        (vec![], "variables.PASSWORD", "required"),
        (vec![("PASSWORD", json!(""))], "variables.PASSWORD", "required"),
        (vec![("PASSWORD", json!(null))], "variables.PASSWORD", "required"),
        (vec![("PASSWORD", json!("a b c d"))], "variables.PASSWORD", "does not match"),
        (vec![("PASSWORD", json!(["x"]))], "variables.PASSWORD", "string, number or boolean"),
        (vec![("PASSWORD", json!("good1")), ("EXTRA", json!("x"))], "variables.EXTRA", "not a variable"),
    ];
    for (provided, key, fragment) in cases {
        let errors = run(&body, &provided).unwrap_err();
        assert!(errors.get(key).is_some_and(|m| m.iter().any(|m| m.contains(fragment))), "{provided:?}: {errors:?}");
    }
}

#[test]
fn generated_values_are_validated_too() {
    let body = "svc:\n  variables:\n    K: {random: true, validation: \"/^[A-Z]+$/\"}\nservices:\n  web:\n    image: \"x:$$var__K\"\n";
    let errors = run(body, &[]).unwrap_err();
    assert!(errors.contains_key("variables.K"), "{errors:?}");
}

#[test]
fn policy_is_applied_to_the_output() {
    let body = "services:\n  web:\n    image: x\n    privileged: true\n    volumes: [\"/:/host\"]\n";
    let errors = run(body, &[]).unwrap_err();
    assert!(errors.contains_key("services.web.privileged"), "{errors:?}");
    assert!(errors.contains_key("services.web.volumes[0]"), "{errors:?}");
    let trusted = compile(body, &BTreeMap::new(), &mut StdRng::seed_from_u64(1), &Policy::TRUSTED);
    assert!(trusted.is_ok(), "{trusted:?}");
}

#[test]
fn label_rules_apply_to_substituted_values() {
    let body = "svc:\n  variables:\n    PORT: {default: \"80\"}\nservices:\n  web:\n    image: x\n    labels:\n      svc/expose: $$var__PORT\n";
    assert!(run(body, &[]).is_ok());
    let errors = run(body, &[("PORT", json!("http"))]).unwrap_err();
    assert!(errors.contains_key("services.web.labels.svc/expose"), "{errors:?}");
}

#[test]
fn same_seed_same_output() {
    let a = run(&body_with_salt(), &[("PASSWORD", json!("abcd"))]).map(|c| c.compose_yaml);
    let b = run(&body_with_salt(), &[("PASSWORD", json!("abcd"))]).map(|c| c.compose_yaml);
    assert_eq!(a, b);
}

#[test]
fn invalid_templates_do_not_compile() {
    let errors = run("svc:\n  variables:\n    A: {}\nservices:\n  web:\n    image: x\n", &[]).unwrap_err();
    assert!(errors.contains_key("svc.variables.A"), "{errors:?}");
}

/// `compile` validates the substituted tree instead of parsing the text it
/// writes; that is only right if the text reads back as the same tree. A
/// value of every shape YAML could read differently (booleans, numbers,
/// nulls, comments, flow syntax, multi-line, anchors) must survive the
/// write: the text is a fixpoint of read-then-write, the value comes back
/// as given, and the warnings are those of the text's own validation.
#[test]
fn the_compiled_tree_validates_as_its_text() {
    let body = r#"
x-base: &base
  restart: unless-stopped
  labels: {tier: "$$var__NOTE"}
svc:
  variables:
    NOTE: {}
services:
  web:
    <<: *base
    image: busybox:1
    command: ["echo", "$$var__NOTE", "${UNSET}"]
    environment:
      NOTE: "$$var__NOTE"
"#;
    let tricky = [
        "true",
        "no",
        "~",
        "null",
        "0x1F",
        "1e3",
        "010",
        "-",
        "? a",
        "a: b",
        "# c",
        "[1, 2]",
        "{a: 1}",
        "&x *x",
        "line 1\nline 2\n",
        " padded ",
        "\"quoted\"",
        "'single'",
        "tab\there",
        "é ✓",
        "%TAG",
        "@at",
        "`tick`",
    ];
    for value in tricky {
        let compiled = run(body, &[("NOTE", json!(value))]).unwrap_or_else(|e| panic!("{value:?}: {e:?}"));
        let yaml = &compiled.compose_yaml;
        let reread = crate::compose::parse_yaml(yaml).unwrap_or_else(|e| panic!("{value:?}: {e:?}"));
        let rewritten = super::super::emit::to_yaml(&reread).unwrap_or_default();
        assert_eq!(&rewritten, yaml, "{value:?} does not read back as written");
        assert_eq!(service_env(&compiled, "web", "NOTE").as_deref(), Some(value), "{value:?}");
        let report = crate::compose::validate_compose(yaml, &Policy::UNTRUSTED);
        assert!(report.valid, "{value:?}: {:?}", report.errors);
        assert_eq!(compiled.warnings, report.warnings, "{value:?}");
    }
}
