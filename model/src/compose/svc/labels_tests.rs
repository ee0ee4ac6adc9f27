use super::*;

/// (label, valid values, invalid values) for every label of the spec.
const TABLE: &[(&str, &[&str], &[&str])] = &[
    ("dockerfile", &["", "Dockerfile", "docker/Dockerfile.prod", "./a_b-c/D.f"], &["Docker file", "a:b", "x$y", "é"]),
    (
        "source_mount",
        &["", "/app", "/src/app/", "/srv/my_app-1.0"],
        &["src/app", "/", "//", "/app/../etc", "/./app", "/app dir", "/app;rm"],
    ),
    ("env_file", &["", ".env", "config/.env.example"], &[".env local", "a,b"]),
    ("repo_url", &["", "https://github.com/a/b.git", "anything at all"], &[]),
    ("branch", &["", "main", "feature/x y"], &[]),
    ("start_command", &["", "npm run start -- --port 3000"], &[]),
    ("build_target", &["", "production"], &[]),
    ("production", &["", "true", "false"], &["yes", "True", "1", "on"]),
    ("zerodowntime", &["", "true", "false"], &["TRUE", "no"]),
    ("job_watch", &["", "true", "false"], &["maybe"]),
    (
        "expose",
        &["", "1", "80", "8080", "65535", "internal:8080", "external:443"],
        &["0", "65536", "http", "internal:", "public:80", "internal:0", "8080/tcp", "-1", " 80", "99999999999"],
    ),
    ("subdomain", &["", "@", "a", "api", "my-app-2", "0x"], &["-api", "api-", "API", "my_app", "a.b", "@@", "é"]),
    (
        "path_rule",
        &["", "PathPrefix(`/api`)", "Path(`/users/{id:[0-9]+}`)"],
        &["Host(`x`)", "/api", "PathPrefix(`/a`", "Path(`/a{`)", "PathRegexp(`(?<n>a)`)"],
    ),
    ("healthcheck_path", &["", "/", "/health", "/healthz?full=1"], &["health", "http://x/health"]),
    ("healthcheck_interval", &["", "10s", "500ms", "1m", "0s"], &["10", "1h", "1m30s", "s", "1.5s", "10 s"]),
    ("healthcheck_timeout", &["", "5s"], &["5 seconds"]),
    ("healthcheck_start_period", &["", "30s"], &["30"]),
    ("healthcheck_retries", &["", "1", "3", "10"], &["0", "-1", "two", "1.5"]),
    (
        "build_args",
        &["", "A=1", "NODE_ENV=production,API_URL=http://x/y", "A=", "_X=a=b"],
        &["A", "A=1,", "=1", "1A=2", "A B=1"],
    ),
];

#[test]
fn every_label_of_the_spec_is_in_the_table() {
    assert_eq!(LABELS.len(), TABLE.len());
    for (label, _) in LABELS {
        assert!(TABLE.iter().any(|(l, _, _)| l == label), "{label} has no cases");
    }
}

#[test]
fn label_value_rules() {
    for (label, valid, invalid) in TABLE {
        let kind = label_kind(label).unwrap_or_else(|| panic!("{label} is not a known label"));
        for value in *valid {
            assert_eq!(check_label_value(kind, value), Ok(()), "svc/{label}={value:?} should be valid");
        }
        for value in *invalid {
            assert!(check_label_value(kind, value).is_err(), "svc/{label}={value:?} should be invalid");
        }
    }
}

#[test]
fn long_subdomains_are_refused() {
    assert!(check_label_value(LabelKind::Subdomain, &"a".repeat(63)).is_ok());
    assert!(check_label_value(LabelKind::Subdomain, &"a".repeat(64)).is_err());
}

#[test]
fn expose_parses_port_and_visibility() {
    assert_eq!(parse_expose("8080"), Some((8080, "external")));
    assert_eq!(parse_expose("internal:5432"), Some((5432, "internal")));
    assert_eq!(parse_expose("external:443"), Some((443, "external")));
    assert_eq!(parse_expose("other:443"), None);
}

#[test]
fn unknown_labels() {
    assert_eq!(label_kind("expose"), Some(LabelKind::Expose));
    assert_eq!(label_kind("exposed"), None);
    assert_eq!(label_kind("svc/expose"), None);
}
