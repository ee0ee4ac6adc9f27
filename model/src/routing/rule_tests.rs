use super::*;
use crate::routing::path_rule::PathRule;

fn m(name: &'static str, args: &[&str]) -> Rule {
    Rule::Matcher { name, args: args.iter().map(|s| (*s).to_owned()).collect() }
}

#[test]
fn parses_matchers_operators_and_precedence() {
    assert_eq!(parse("PathPrefix(`/api`)"), Ok(m("PathPrefix", &["/api"])));
    assert_eq!(
        parse("Path(`/a`) || Path(`/b`) && Method(`GET`)"),
        Ok(Rule::Or(vec![m("Path", &["/a"]), Rule::And(vec![m("Path", &["/b"]), m("Method", &["GET"])])]))
    );
    assert_eq!(
        parse("(Path(`/a`) || Path(`/b`)) && !Method(\"POST\")"),
        Ok(Rule::And(vec![
            Rule::Or(vec![m("Path", &["/a"]), m("Path", &["/b"])]),
            Rule::Not(Box::new(m("Method", &["POST"]))),
        ]))
    );
    assert_eq!(parse("Path(`/a`, `/b`)"), Ok(m("Path", &["/a", "/b"])));
    assert_eq!(parse("  Path ( `/a` ,\t\"/b\" )  "), Ok(m("Path", &["/a", "/b"])));
    assert_eq!(parse("!!Path(`/a`)"), Ok(Rule::Not(Box::new(Rule::Not(Box::new(m("Path", &["/a"])))))));
}

#[test]
fn same_operators_flatten() {
    let flat = Rule::Or(vec![m("Path", &["/a"]), m("Path", &["/b"]), m("Path", &["/c"])]);
    assert_eq!(parse("Path(`/a`) || (Path(`/b`) || Path(`/c`))"), Ok(flat.clone()));
    assert_eq!(parse("(Path(`/a`) || Path(`/b`)) || Path(`/c`)"), Ok(flat));
}

#[test]
fn matcher_case_forms_follow_traefik() {
    for name in ["PathPrefix", "pathprefix", "PATHPREFIX", "Pathprefix"] {
        assert_eq!(canonical_matcher(name), Some("PathPrefix"), "{name}");
    }
    for name in ["HostSNI", "hostsni", "HOSTSNI", "Hostsni"] {
        assert_eq!(canonical_matcher(name), Some("HostSNI"), "{name}");
    }
    for name in ["pathPrefix", "PathPreFix", "Prefix", "PathStrip", ""] {
        assert_eq!(canonical_matcher(name), None, "{name}");
    }
}

#[test]
fn quoted_strings_and_escapes() {
    assert_eq!(parse(r#"Path("/a\"b\\c\n\x41\u00e9")"#), Ok(m("Path", &["/a\"b\\c\nAé"])));
    assert_eq!(parse("Path(`/raw\\n`)"), Ok(m("Path", &["/raw\\n"])));
}

#[test]
fn syntax_errors() {
    let cases = [
        ("", "unexpected end"),
        ("Path", "expected `(`"),
        ("Path()", "string argument"),
        ("Path(/a)", "unexpected character"),
        ("Path(`/a`", "expected `,` or `)`"),
        ("Path(`/a`,)", "string argument"),
        ("Path(`/a`) &", "`&&`"),
        ("Path(`/a`) | Path(`/b`)", "`&&` or `||`"),
        ("Path(`/a`) Path(`/b`)", "unexpected text"),
        ("Path(`/a`) &&", "unexpected end"),
        ("(Path(`/a`)", "expected `)`"),
        ("Path(`/a`))", "unexpected text"),
        ("Path(`/a)", "unclosed"),
        ("Path(\"/a)", "unclosed"),
        ("Path(\"\\q\")", "unsupported escape"),
        ("Path(\"\\x4\")", "hexadecimal"),
        ("Path(\"\\ud800\")", "not a character"),
        ("Bogus(`x`)", "unknown matcher `Bogus`"),
        ("pathPrefix(`/a`)", "unknown matcher"),
        ("Path('/a')", "unexpected character"),
    ];
    for (input, expected) in cases {
        let err = parse(input).unwrap_err();
        assert!(err.message.contains(expected), "{input:?}: {err}");
    }
}

#[test]
fn error_positions_point_at_the_problem() {
    assert_eq!(parse("Path(`/a`) && Nope(`x`)").unwrap_err().position, 14);
}

#[test]
fn nesting_is_bounded() {
    let deep = format!("{}Path(`/a`){}", "(".repeat(100), ")".repeat(100));
    assert!(parse(&deep).unwrap_err().message.contains("nested"));
    let nots = format!("{}Path(`/a`)", "!".repeat(100));
    assert!(parse(&nots).is_err());
    let ok = format!("{}Path(`/a`){}", "(".repeat(30), ")".repeat(30));
    assert!(parse(&ok).is_ok());
}

#[test]
fn display_is_canonical_and_round_trips() {
    let cases = [
        ("pathprefix(`/api`)", "PathPrefix(`/api`)"),
        ("PATH(\"/a\") || path(`/b`)", "Path(`/a`) || Path(`/b`)"),
        ("(Path(`/a`) || Path(`/b`)) && !Method(`GET`)", "(Path(`/a`) || Path(`/b`)) && !Method(`GET`)"),
        ("!(Path(`/a`) && Path(`/b`))", "!(Path(`/a`) && Path(`/b`))"),
        ("Path(\"/a`b\")", "Path(\"/a`b\")"),
        ("Path(\"/a\\nb\")", "Path(\"/a\\nb\")"),
        ("((Path(`/a`)))", "Path(`/a`)"),
    ];
    for (input, canonical) in cases {
        let rule = parse(input).unwrap();
        assert_eq!(rule.to_string(), canonical, "{input}");
        assert_eq!(parse(&rule.to_string()), Ok(rule), "{input}");
    }
}

#[test]
fn path_rule_policy() {
    let ok = [
        "PathPrefix(`/api`)",
        "Path(`/`)",
        "PathRegexp(`^/v[0-9]+/`)",
        "PathPrefix(`/api`) && !PathPrefix(`/api/admin`)",
        "Path(`/a`) || PathPrefix(`/b`)",
        "pathprefix(`/x`)",
        "Path(`/users/{id:[0-9]+}`) || PathPrefix(`/u/{name}/`)",
    ];
    for rule in ok {
        assert!(PathRule::check(rule).is_ok(), "{rule}: {:?}", PathRule::check(rule));
    }
    let bad = [
        ("Host(`example.com`)", "Host matcher"),
        ("PathPrefix(`/a`) && Host(`x`)", "Host matcher"),
        ("PathPrefix(`/a`) && HostRegexp(`.*`)", "HostRegexp"),
        ("PathPrefix(`/a`) && HostSNI(`*`)", "HostSNI"),
        ("PathPrefix(`/a`) && HostSNIRegexp(`.*`)", "HostSNIRegexp"),
        ("PathPrefix(`/a`) && Headers(`X`, `y`)", "Headers"),
        ("PathPrefix(`/a`) && HeadersRegexp(`X`, `y`)", "HeadersRegexp"),
        ("PathPrefix(`/a`) && Header(`X`, `y`)", "Header matcher"),
        ("PathPrefix(`/a`) && HeaderRegexp(`X`, `y`)", "HeaderRegexp"),
        ("PathPrefix(`/a`) && Method(`GET`)", "Method"),
        ("PathPrefix(`/a`) && Query(`a=b`)", "Query matcher"),
        ("PathPrefix(`/a`) && QueryRegexp(`a`, `b`)", "QueryRegexp"),
        ("PathPrefix(`/a`) && ClientIP(`10.0.0.0/8`)", "ClientIP"),
        ("PathPrefix(`/a`) && HostHeader(`x`)", "HostHeader"),
        ("Method(`GET`)", "needs a Path"),
        ("PathRegexp(`/(unclosed`)", "not a valid regular expression"),
        ("PathPrefix(`api`)", "must start with `/`"),
        ("Path(`/a`", "not a valid routing rule"),
        ("contains Path", "not a valid routing rule"),
        // Valid Traefik syntax the edge (Caddy) cannot serve as Traefik would.
        ("Path(`/users/{id`)", "cannot be served by the edge: Path `/users/{id` has unbalanced braces"),
        ("PathRegexp(`(?x) ^/a`)", "cannot be served by the edge: PathRegexp `(?x) ^/a` uses the flag `x`"),
        ("PathPrefix(`/{x:(a)}`)", "capturing group"),
    ];
    for (rule, expected) in bad {
        let err = PathRule::check(rule).unwrap_err();
        assert!(err.contains(expected), "{rule}: {err}");
    }
}
