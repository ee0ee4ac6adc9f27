use super::*;

const GOOD: &str = r#"
svc:
  version: 1
  variables:
    DB_PASSWORD:
      name: Database password
      required: true
      validation: /^[A-Za-z0-9]{8,}$/
      path: services.db.environment.POSTGRES_PASSWORD
    PORT:
      default: 8080
      paths: [services.web.labels.svc/expose, "services.web.environment[0]"]
    SECRET:
      random: true
  metadata:
    description: A web app with a database
    category: web
    source_defaults: false
    job_mode: false
    muti_config: {a: 1}
    schedule_config: {enabled: true, cron: "0 * * * *", marquee_id: "12"}
    trigger_config: {enabled: true, event_type: push, repo_url: "https://x/y.git", branch: main, prop_id: 3, marquee_id: "07"}
services:
  web:
    build: .
    environment:
      - PORT=$$var__PORT
      - SECRET=$$random__SECRET
    labels:
      svc/expose: $$var__PORT
      svc/subdomain: app-$$var__PORT
      svc/path_rule: PathPrefix(`/`)
  db:
    image: postgres:16
    environment:
      POSTGRES_PASSWORD: $$var__DB_PASSWORD
"#;

fn errors(body: &str) -> FieldErrors {
    match validate_template(body) {
        Ok(info) => panic!("expected errors, got {info:?}"),
        Err(errors) => errors,
    }
}

fn has(errors: &FieldErrors, key: &str, fragment: &str) -> bool {
    errors.get(key).is_some_and(|messages| messages.iter().any(|m| m.contains(fragment)))
}

#[test]
fn a_full_template_validates() {
    let info = validate_template(GOOD).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(info.version, 1);
    assert_eq!(info.variables.keys().collect::<Vec<_>>(), ["DB_PASSWORD", "PORT", "SECRET"]);
    assert_eq!(info.variables["PORT"].default.as_deref(), Some("8080"));
    assert!(info.variables["DB_PASSWORD"].required);
    assert_eq!(info.metadata.category.as_deref(), Some("web"));
    assert_eq!(info.schedule_config.as_ref().and_then(|s| s.marquee_id), Some(12));
    assert_eq!(info.trigger_config.as_ref().and_then(|t| t.marquee_id), Some(7));
    assert_eq!(info.services, ["web", "db"]);
    assert!(!info.job_mode);
}

#[test]
fn references_and_declarations_must_match() {
    let body = "svc:\n  variables:\n    USED: {}\n    UNUSED: {}\nservices:\n  web:\n    image: \"x:$$var__USED\"\n    command: echo $$random__GHOST $$var__NOPE\n";
    let errors = errors(body);
    assert!(has(&errors, "svc.variables.UNUSED", "never used"), "{errors:?}");
    assert!(has(&errors, "services.web.command", "$$random__GHOST"), "{errors:?}");
    assert!(has(&errors, "services.web.command", "$$var__NOPE"), "{errors:?}");
    assert!(!errors.contains_key("svc.variables.USED"));
}

#[test]
fn references_in_keys_are_refused() {
    let body = "svc:\n  variables:\n    K: {}\nservices:\n  web:\n    image: x\n    environment:\n      $$var__K: v\n";
    assert!(has(&errors(body), "services.web.environment.$$var__K", "only allowed in values"));
}

#[test]
fn the_body_must_be_compose() {
    assert!(has(&errors("svc: {}\n"), "template_body", "`services` is required"));
    assert!(has(&errors(""), "template_body", "empty"));
    assert!(has(&errors("[1, 2]"), "template_body", "mapping"));
    assert!(has(&errors("services:\n  web:\n    image: x\n    ports: [\"0:0\"]\n"), "services.web.ports[0]", "port"));
}

#[test]
fn policy_is_not_applied_at_template_time() {
    assert!(validate_template("services:\n  web:\n    image: x\n    privileged: true\n").is_ok());
}

#[test]
fn labels_with_references_are_deferred_and_literals_checked() {
    let body = "svc:\n  variables:\n    P: {}\nservices:\n  web:\n    image: x\n    labels:\n      - svc/expose=$$var__P\n      - svc/production=yes\n";
    let errors = errors(body);
    assert_eq!(errors.keys().collect::<Vec<_>>(), ["services.web.labels.svc/production"], "{errors:?}");
}

#[test]
fn a_path_rule_the_edge_cannot_serve_is_refused_at_the_label() {
    let body = "services:\n  web:\n    image: x\n    labels:\n      svc/expose: \"80\"\n      svc/path_rule: \"Path(`/users/{id`)\"\n";
    let errors = errors(body);
    assert_eq!(errors.keys().collect::<Vec<_>>(), ["services.web.labels.svc/path_rule"], "{errors:?}");
    assert!(has(&errors, "services.web.labels.svc/path_rule", "cannot be served by the edge"), "{errors:?}");
}

/// (variable definition YAML, error key suffix or None when valid)
const VARIABLE_RULES: &[(&str, Option<&str>)] = &[
    ("{}", None),
    ("null", None),
    ("{name: Port}", None),
    ("{name: \"\"}", Some("name")),
    ("{name: 3}", Some("name")),
    ("{required: true}", None),
    ("{required: \"true\"}", Some("required")),
    ("{random: false}", None),
    ("{random: 1}", Some("random")),
    ("{default: text}", None),
    ("{default: 3}", None),
    ("{default: 2.5}", None),
    ("{default: true}", None),
    ("{default: null}", None),
    ("{default: [1]}", Some("default")),
    ("{default: {a: 1}}", Some("default")),
    ("{validation: \"\"}", None),
    ("{validation: \"/^[a-z]+$/\"}", None),
    ("{validation: \"//\"}", None),
    ("{validation: \"^[a-z]+$\"}", Some("validation")),
    ("{validation: \"/abc/i\"}", Some("validation")),
    ("{validation: \"/\"}", Some("validation")),
    ("{validation: \"/(unclosed/\"}", Some("validation")),
    ("{validation: 5}", Some("validation")),
    ("{path: \"services.web.environment[0]\"}", None),
    ("{path: \"a/b-c_d.e\"}", None),
    ("{path: \"a b\"}", Some("path")),
    ("{path: \"a:b\"}", Some("path")),
    ("{path: \"\"}", Some("path")),
    ("{paths: \"services.web.image\"}", None),
    ("{paths: [a.b, \"c[1]\"]}", None),
    ("{paths: [a.b, \"c d\"]}", Some("paths[1]")),
    ("{paths: [3]}", Some("paths[0]")),
    ("{requried: true}", Some("requried")),
    ("[1]", Some("")),
];

#[test]
fn variable_definition_rules() {
    for (definition, expected) in VARIABLE_RULES {
        let body = format!("svc:\n  variables:\n    V: {definition}\nservices:\n  web:\n    image: \"x:$$var__V\"\n");
        match (validate_template(&body), expected) {
            (Ok(_), None) => {}
            (Err(errors), Some(suffix)) => {
                let key =
                    if suffix.is_empty() { "svc.variables.V".to_owned() } else { format!("svc.variables.V.{suffix}") };
                assert!(errors.contains_key(&key), "{definition}: expected {key}, got {errors:?}");
            }
            (result, _) => panic!("{definition}: expected {expected:?}, got {result:?}"),
        }
    }
}

#[test]
fn variable_names() {
    for (name, ok) in
        [("A", true), ("a_1", true), ("_", true), ("9X", true), ("A-B", false), ("A.B", false), ("Ä", false)]
    {
        let body =
            format!("svc:\n  variables:\n    \"{name}\": {{}}\nservices:\n  web:\n    image: \"x:$$var__{name}\"\n");
        let result = validate_template(&body);
        let name_error = result.as_ref().err().is_some_and(|e| has(e, &format!("svc.variables.{name}"), "letters"));
        assert_eq!(!name_error, ok, "{name}: {result:?}");
    }
}

/// (namespace YAML under `svc:`, error key or None when valid)
const NAMESPACE_RULES: &[(&str, Option<&str>)] = &[
    ("{}", None),
    ("{version: 1}", None),
    ("{version: \"1\"}", None),
    ("{version: 2}", Some("svc.version")),
    ("{version: v1}", Some("svc.version")),
    ("{job_mode: true}", None),
    ("{job_mode: yes}", Some("svc.job_mode")),
    ("{job_mode: true, metadata: {job_mode: false}}", Some("svc.job_mode")),
    ("{sleep_after: 30m}", None),
    ("{sleep_after: never}", None),
    ("{sleep_after: 1s}", Some("svc.sleep_after")),
    ("{sleep_after: 30}", Some("svc.sleep_after")),
    ("{sleep_after: 30m, job_mode: true}", Some("svc.sleep_after")),
    ("{sleep_after: never, job_mode: true}", None),
    ("{muti_config: {x: [1, 2]}}", None),
    ("{muti_config: [1]}", Some("svc.muti_config")),
    ("{schedule_config: {enabled: false}}", None),
    ("{schedule_config: {enabled: true, cron: \"*/5 * * * *\", marquee_id: 4}}", None),
    ("{schedule_config: {enabled: true}}", Some("svc.schedule_config.cron")),
    ("{schedule_config: {marquee_id: 0}}", Some("svc.schedule_config.marquee_id")),
    ("{schedule_config: {marquee_id: \"012\"}}", Some("svc.schedule_config.marquee_id")),
    ("{schedule_config: {marquee_id: \"12\"}}", None),
    ("{schedule_config: {marquee_id: \"1a\"}}", Some("svc.schedule_config.marquee_id")),
    ("{schedule_config: {marquee_id: -3}}", Some("svc.schedule_config.marquee_id")),
    ("{schedule_config: {enabled: \"true\", cron: x}}", Some("svc.schedule_config.enabled")),
    ("{schedule_config: {every: 5m}}", Some("svc.schedule_config.every")),
    ("{schedule_config: {enabled: true, cron: \"*/2 * * * * *\", time_zone: Europe/Paris}}", None),
    ("{schedule_config: {enabled: true, cron: \"0 0 30 2 *\"}}", Some("svc.schedule_config.cron")),
    ("{schedule_config: {enabled: true, cron: \"* * *\"}}", Some("svc.schedule_config.cron")),
    (
        "{schedule_config: {enabled: true, cron: \"* * * * *\", time_zone: Nowhere}}",
        Some("svc.schedule_config.time_zone"),
    ),
    (
        "{schedule_config: {enabled: true, cron: \"* * * * *\", concurrency_policy: replace, starting_deadline_seconds: 30}}",
        None,
    ),
    (
        "{schedule_config: {cron: \"* * * * *\", concurrency_policy: queue}}",
        Some("svc.schedule_config.concurrency_policy"),
    ),
    (
        "{schedule_config: {cron: \"* * * * *\", starting_deadline_seconds: -1}}",
        Some("svc.schedule_config.starting_deadline_seconds"),
    ),
    ("{trigger_config: {enabled: true, event_type: pull_request}}", None),
    ("{trigger_config: {event_type: tag}}", Some("svc.trigger_config.event_type")),
    ("{trigger_config: {prop_id: \"007\", marquee_id: 9}}", None),
    ("{trigger_config: {prop_id: 0}}", Some("svc.trigger_config.prop_id")),
    ("{trigger_config: {prop_id: \"\"}}", Some("svc.trigger_config.prop_id")),
    ("{trigger_config: {repo_url: 5}}", Some("svc.trigger_config.repo_url")),
    ("{metadata: {description: d, category: c, source_defaults: true}}", None),
    ("{metadata: {source_defaults: \"no\"}}", Some("svc.metadata.source_defaults")),
    ("{metadata: {schedule_config: {marquee_id: 0}}}", Some("svc.metadata.schedule_config.marquee_id")),
    ("{metadata: {colour: red}}", Some("svc.metadata.colour")),
    ("{extra: 1}", Some("svc.extra")),
    ("{variables: [A]}", Some("svc.variables")),
    ("[1]", Some("svc")),
];

#[test]
fn namespace_rules() {
    for (namespace, expected) in NAMESPACE_RULES {
        let body = format!("svc: {namespace}\nservices:\n  web:\n    image: x\n");
        match (validate_template(&body), expected) {
            (Ok(_), None) => {}
            (Err(errors), Some(key)) => {
                assert!(errors.contains_key(*key), "{namespace}: expected {key}, got {errors:?}")
            }
            (result, _) => panic!("{namespace}: expected {expected:?}, got {result:?}"),
        }
    }
}

#[test]
fn errors_carry_lines() {
    let errors =
        errors("svc:\n  variables:\n    A:\n      required: yes\nservices:\n  web:\n    image: \"$$var__A\"\n");
    assert_eq!(errors["svc.variables.A.required"], ["must be a boolean (true or false) (line 4)"]);
}

#[test]
fn a_body_is_analysed_once_and_another_body_is_not_confused_with_it() {
    let body = |n: u32| {
        format!(
            "svc:\n  variables:\n    V{n}: {{default: x}}\nservices:\n  web:\n    image: busybox\n    environment: {{A: $$var__V{n}}}\n"
        )
    };
    let first = super::analyzed(&body(1)).unwrap();
    let again = super::analyzed(&body(1)).unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again), "a launch reuses the version's analysis");
    let other = super::analyzed(&body(2)).unwrap();
    assert!(other.namespace.variables.contains_key("V2") && !other.namespace.variables.contains_key("V1"));
}
