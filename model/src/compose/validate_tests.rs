use super::*;
use crate::compose::Policy;

fn untrusted(yaml: &str) -> ValidationReport {
    validate_compose(yaml, &Policy::UNTRUSTED)
}

fn error_paths(report: &ValidationReport) -> Vec<&str> {
    report.errors.iter().map(|i| i.path.as_str()).collect()
}

fn has_error(report: &ValidationReport, path: &str, fragment: &str) -> bool {
    report.errors.iter().any(|i| i.path == path && i.message.contains(fragment))
}

#[test]
fn a_small_valid_file_reports_services_and_ports() {
    let report = untrusted(
        "services:\n  web:\n    image: nginx\n    ports:\n      - \"8080:80\"\n      - target: 443\n        published: \"8443\"\n        protocol: tcp\n  db:\n    image: postgres\n",
    );
    assert!(report.valid, "{:?}", report.errors);
    assert_eq!(report.services.len(), 2);
    assert_eq!(report.services[0].name, "web");
    assert_eq!(report.services[0].ports, vec!["8080:80".to_owned(), "8443:443".to_owned()]);
    assert!(report.services[1].ports.is_empty());
}

#[test]
fn document_level_errors() {
    let cases = [
        ("", "empty"),
        ("   \n# only a comment\n", "empty"),
        ("- a\n- b\n", "must be a mapping"),
        ("just a string", "must be a mapping"),
        ("name: x\n", "`services` is required"),
        ("services:\n", "at least one service"),
        ("services: {}\n", "at least one service"),
        ("services: [web]\n", "must be a mapping"),
        ("services:\n  web: {image: x}\n---\nservices: {}\n", "more than one document"),
        ("services:\n  web:\n    image: [unclosed\n", "invalid YAML"),
    ];
    for (yaml, fragment) in cases {
        let report = untrusted(yaml);
        assert!(!report.valid, "{yaml:?}");
        assert!(report.errors.iter().any(|e| e.message.contains(fragment)), "{yaml:?}: {:?}", report.errors);
    }
}

#[test]
fn oversized_input_is_refused_before_parsing() {
    let yaml = format!("services:\n  web:\n    image: x\n# {}\n", "y".repeat(MAX_COMPOSE_BYTES));
    let report = untrusted(&yaml);
    assert!(report.errors[0].message.contains("limit"), "{:?}", report.errors);
}

#[test]
fn billion_laughs_is_a_clear_error() {
    let mut doc =
        String::from("x-a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for i in 1..10 {
        doc.push_str(&format!("x-a{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); 10].join(",")));
    }
    doc.push_str("services:\n  web:\n    image: x\n    command: *a9\n");
    // A clear error from the loader's budget (speed is not asserted).
    let report = untrusted(&doc);
    assert!(!report.valid);
    assert!(report.errors[0].message.contains("invalid YAML"), "{:?}", report.errors);
}

#[test]
fn errors_carry_paths_and_lines() {
    let yaml = "services:\n  web:\n    image: nginx\n    ports:\n      - \"80:80\"\n      - \"99999:80\"\n    restart: sometimes\n";
    let report = untrusted(yaml);
    let port = report.errors.iter().find(|e| e.path == "services.web.ports[1]").unwrap();
    assert_eq!(port.line, Some(6));
    let restart = report.errors.iter().find(|e| e.path == "services.web.restart").unwrap();
    assert_eq!(restart.line, Some(7));
}

#[test]
fn interpolation_in_values_only() {
    let report = untrusted(
        "services:\n  web:\n    image: \"nginx:${TAG:-1.27}\"\n    environment:\n      $KEY: \"${MISSING}\"\n",
    );
    assert!(report.valid, "{:?}", report.errors);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert_eq!(report.warnings[0].path, "services.web.environment.$KEY");
    assert!(report.warnings[0].message.contains("MISSING"));
}

#[test]
fn required_variable_is_an_error_and_invalid_dollar_too() {
    let report = untrusted("services:\n  web:\n    image: \"app:${TAG:?set TAG}\"\n    command: echo $5\n");
    assert!(has_error(&report, "services.web.image", "set TAG"), "{:?}", report.errors);
    assert!(has_error(&report, "services.web.command", "$$"), "{:?}", report.errors);
    let with_tag =
        validate_compose_with("services:\n  web:\n    image: \"app:${TAG:?set TAG}\"\n", &Policy::UNTRUSTED, &|n| {
            (n == "TAG").then(|| "1".to_owned())
        });
    assert!(with_tag.valid);
}

#[test]
fn cross_references() {
    let report = untrusted(
        "services:\n  web:\n    image: x\n    depends_on: [api, web]\n    networks: [front, default]\n    volumes: [\"data:/data\"]\n    secrets: [token]\n  bad/name:\n    image: x\n  nothing: {}\n",
    );
    for (path, fragment) in [
        ("services.web.depends_on.api", "undefined service"),
        ("services.web.depends_on.web", "itself"),
        ("services.web.networks.front", "not defined"),
        ("services.web.volumes[0]", "not defined"),
        ("services.web.secrets[0]", "not defined"),
        ("services.bad/name", "service name"),
        ("services.nothing", "`image` or `build`"),
    ] {
        assert!(has_error(&report, path, fragment), "{path}: {:?}", report.errors);
    }
    assert!(!report.errors.iter().any(|e| e.path.contains("default")), "{:?}", error_paths(&report));
}

#[test]
fn dependency_cycles_are_found() {
    let report = untrusted(
        "services:\n  a: {image: x, depends_on: [b]}\n  b: {image: x, depends_on: {c: {condition: service_healthy}}}\n  c: {image: x, depends_on: [a]}\n  d: {image: x, depends_on: [a]}\n",
    );
    assert!(has_error(&report, "services.a.depends_on", "cycle"), "{:?}", report.errors);
    let ok =
        untrusted("services:\n  a: {image: x, depends_on: [b]}\n  b: {image: x, depends_on: [c]}\n  c: {image: x}\n");
    assert!(ok.valid, "{:?}", ok.errors);
}

#[test]
fn unknown_keys_are_warnings_with_paths() {
    let report =
        untrusted("services:\n  web:\n    image: x\n    imagee: y\n    x-note: fine\nfoo: bar\nversion: \"3.8\"\n");
    assert!(report.valid);
    let paths: Vec<&str> = report.warnings.iter().map(|w| w.path.as_str()).collect();
    assert_eq!(paths, vec!["services.web.imagee", "foo", "version"]);
    assert_eq!(report.warnings[0].line, Some(4));
}

#[test]
fn type_errors() {
    let report = untrusted(
        "services:\n  web:\n    image: x\n    privileged: maybe\n    healthcheck:\n      test: [\"echo\"]\n      interval: 10\n      retries: -1\n    stop_grace_period: forever\n    stop_signal: SIGNOPE\n    init: sometimes\n    depends_on:\n      db: {condition: service_ready}\n    deploy:\n      resources:\n        limits: {cpus: lots, memory: 1q}\n  db: {image: x}\n",
    );
    for path in [
        "services.web.privileged",
        "services.web.healthcheck.test",
        "services.web.healthcheck.interval",
        "services.web.healthcheck.retries",
        "services.web.stop_grace_period",
        "services.web.stop_signal",
        "services.web.init",
        "services.web.depends_on.db.condition",
        "services.web.deploy.resources.limits.cpus",
        "services.web.deploy.resources.limits.memory",
    ] {
        assert!(report.errors.iter().any(|e| e.path == path), "{path}: {:?}", report.errors);
    }
}

#[test]
fn extends_and_include_are_refused() {
    let report = untrusted("include: [other.yml]\nservices:\n  web:\n    image: x\n    extends: {service: base}\n");
    assert!(has_error(&report, "include", "not supported"));
    assert!(has_error(&report, "services.web.extends", "not supported"));
}

#[test]
fn svc_labels_are_checked_in_both_forms() {
    let report = untrusted(
        "services:\n  web:\n    image: x\n    labels:\n      svc/expose: \"http\"\n      svc/bogus: x\n      com.example.other: y\n  api:\n    image: x\n    labels:\n      - svc/expose=internal:70000\n      - svc/bogus=1\n  worker:\n    image: x\n    labels:\n      svc/path_rule: PathPrefix(`/api`)\n      svc/subdomain: worker\n",
    );
    assert!(has_error(&report, "services.web.labels.svc/expose", "port"), "{:?}", report.errors);
    assert!(has_error(&report, "services.web.labels.svc/bogus", "unknown template label"));
    assert!(has_error(&report, "services.api.labels.svc/expose", "port"));
    assert!(report.warnings.iter().any(|w| w.path == "services.api.labels.svc/bogus"));
    assert!(has_error(&report, "services.worker.labels.svc/path_rule", "exposed"));
    assert!(has_error(&report, "services.worker.labels.svc/subdomain", "exposed"));
    assert_eq!(report.errors.len(), 5, "{:?}", report.errors);
}

#[test]
fn path_rules_the_edge_cannot_serve_are_label_errors() {
    for rule in ["PathRegexp(`(?x) ^/a`)", "Path(`/a}`)", "PathRegexp(`\\u0041`)"] {
        let yaml = format!(
            "services:\n  web:\n    image: x\n    labels:\n      svc/expose: \"80\"\n      svc/path_rule: '{rule}'\n"
        );
        let report = untrusted(&yaml);
        assert!(
            has_error(&report, "services.web.labels.svc/path_rule", "cannot be served by the edge"),
            "{rule}: {:?}",
            report.errors
        );
        assert_eq!(report.errors.len(), 1, "{rule}: {:?}", report.errors);
    }
}

#[test]
fn yaml_booleans_and_numbers_in_labels() {
    let report = untrusted(
        "services:\n  web:\n    image: x\n    labels:\n      svc/production: true\n      svc/zerodowntime: \"false\"\n      svc/expose: 8080\n      svc/healthcheck_retries: 3\n      svc/path_rule: \"PathPrefix(`/`)\"\n",
    );
    assert!(report.valid, "{:?}", report.errors);
}
