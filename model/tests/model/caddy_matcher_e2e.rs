//! The path-rule translation against the real Caddy: one route per rule
//! (host `rN.test` plus the translated matcher set, answering `rN`), loaded
//! through the admin API on a unix socket, then requests proving each rule
//! matches what Traefik would match and nothing else. Loopback only.
//!
//! Skipped, with a message, when `/usr/bin/caddy` is missing
//! (`scripts/test` installs Debian's `caddy` package).

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use play_model::routing::caddy_matcher::{MAX_DEPTH, to_caddy};
use play_model::routing::rule::parse;
use play_model::testing::free_port;
use serde_json::json;

const CADDY: &str = "/usr/bin/caddy";

/// A request: the raw request target and extra header lines.
type Request = (&'static str, &'static [(&'static str, &'static str)]);

struct Case {
    rule: String,
    /// Requests the route must answer.
    hits: &'static [Request],
    /// Requests on the same host it must not answer.
    misses: &'static [Request],
}

fn case(rule: &str, hits: &'static [Request], misses: &'static [Request]) -> Case {
    Case { rule: rule.to_owned(), hits, misses }
}

const NONE: &[(&str, &str)] = &[];

/// `((Path(/d) && !Header(X-D, 1)) || Path(/never)) && PathPrefix(/) ...`,
/// alternating `||` and `&&` so nothing flattens: as deep as the edge
/// translates, the worst case for cel-go's nesting limit (a map literal in
/// the innermost call). Matches `/d` without `X-D: 1`, and `/never`.
fn deepest_rule() -> String {
    let mut rule = "Path(`/d`) && !Header(`X-D`, `1`)".to_owned();
    for level in 0..MAX_DEPTH - 2 {
        rule = match level % 2 {
            0 => format!("({rule}) || Path(`/never`)"),
            _ => format!("({rule}) && PathPrefix(`/`)"),
        };
    }
    rule
}

fn cases() -> Vec<Case> {
    let mut cases = vec![
        case("Path(`/a`)", &[("/a", NONE)], &[("/a/", NONE), ("/A", NONE), ("/ab", NONE), ("/b/a", NONE), ("/", NONE)]),
        case(
            "PathPrefix(`/api`)",
            &[("/api", NONE), ("/api/x", NONE), ("/apiv2", NONE), ("/api?x=1", NONE)],
            &[("/API", NONE), ("/Api/x", NONE), ("/ap", NONE), ("/x/api", NONE)],
        ),
        case(
            "PathRegexp(`^/v[0-9]+/`)",
            &[("/v1/", NONE), ("/v22/x", NONE)],
            &[("/v/", NONE), ("/V1/", NONE), ("/x/v1/", NONE)],
        ),
        case("Path(`/a`, `/b.c`)", &[("/a", NONE), ("/b.c", NONE)], &[("/c", NONE), ("/ab", NONE), ("/bxc", NONE)]),
        case(
            "Path(`/users/{id}`)",
            &[("/users/42", NONE), ("/users/abc", NONE)],
            &[("/users/", NONE), ("/users/4/2", NONE), ("/users", NONE)],
        ),
        case("Path(`/users/{id:[0-9]+}`)", &[("/users/42", NONE)], &[("/users/abc", NONE), ("/users/4a", NONE)]),
        case(
            "Path(`/d/{y:[0-9]{4}}/{slug}.html`)",
            &[("/d/2024/x.html", NONE)],
            &[("/d/24/x.html", NONE), ("/d/2024/x/y.html", NONE), ("/d/2024/xhtml", NONE)],
        ),
        case(
            "PathPrefix(`/api`) && !PathPrefix(`/api/admin`)",
            &[("/api/x", NONE), ("/apiv2", NONE)],
            &[("/api/admin", NONE), ("/api/admin/x", NONE), ("/other", NONE)],
        ),
        case(
            "Path(`/a`) || PathPrefix(`/b`)",
            &[("/a", NONE), ("/b", NONE), ("/bc", NONE)],
            &[("/c", NONE), ("/a/", NONE)],
        ),
        case(
            "!(Path(`/x`) || PathPrefix(`/y`)) && PathPrefix(`/`)",
            &[("/z", NONE), ("/x/", NONE)],
            &[("/x", NONE), ("/y1", NONE)],
        ),
        case("pathprefix(`/Case`)", &[("/Case/x", NONE)], &[("/case/x", NONE), ("/CASE/x", NONE)]),
        case("Path(\"/a.b\")", &[("/a.b", NONE)], &[("/aXb", NONE)]),
        case("PathRegexp(`^/a`, `b$`)", &[("/ax", NONE), ("/xb", NONE)], &[("/xa", NONE), ("/bx", NONE)]),
        // Quotes, a backslash and braces in CEL string literals.
        case(
            "PathRegexp(\"^/q'\\\"\\\\.x$\") && !Path(`/z`)",
            &[("/q'%22.x", NONE)],
            &[("/q'%22Ax", NONE), ("/q", NONE)],
        ),
        case("PathRegexp(`^/\\{ab}$`) && !Path(`/z`)", &[("/%7Bab%7D", NONE)], &[("/ab", NONE), ("/%7Bab", NONE)]),
        // Caddy matches the cleaned path (as Traefik v3's sanitizePath does).
        case("PathPrefix(`/a/`)", &[("/a/b", NONE), ("//a/b", NONE), ("/x/../a/b", NONE)], &[("/x/a/b", NONE)]),
        case(
            "Header(`X-Env`, `staging`)",
            &[("/", &[("X-Env", "staging")]), ("/", &[("x-env", "staging")])],
            &[("/", &[("X-Env", "Staging")]), ("/", &[("X-Env", "stagingx")]), ("/", NONE)],
        ),
        case("Header(`X-A`, `*`)", &[("/", &[("X-A", "*")])], &[("/", &[("X-A", "anything")]), ("/", NONE)]),
        // Caddy's header matcher would expand the placeholder (to `GET`).
        case(
            "Header(`X-T`, `{http.request.method}`) && Path(`/h`)",
            &[("/h", &[("X-T", "{http.request.method}")])],
            &[("/h", &[("X-T", "GET")]), ("/h", &[("X-T", "")]), ("/h", NONE)],
        ),
        case(
            "Path(`/h`) && Header(`X`, `') || true || ('`)",
            &[("/h", &[("X", "') || true || ('")])],
            &[("/h", NONE), ("/h", &[("X", "x")])],
        ),
        case(
            "Path(`/h`) && Header(`X`, `'])}) || true || header({'X': ['`)",
            &[("/h", &[("X", "'])}) || true || header({'X': ['")])],
            &[("/h", NONE), ("/h", &[("X", "x")])],
        ),
        case(
            "HeaderRegexp(`Accept`, `json`)",
            &[("/", &[("Accept", "application/json")])],
            &[("/", &[("Accept", "text/html")]), ("/", NONE)],
        ),
        case(
            "PathPrefix(`/`) && !HeaderRegexp(`Accept`, `^text/`)",
            &[("/", &[("Accept", "application/json")]), ("/", NONE)],
            &[("/", &[("Accept", "text/html")])],
        ),
        case("HostHeader(`other.test`) || Path(`/only`)", &[("/only", NONE)], &[("/", NONE)]),
        case(
            &deepest_rule(),
            &[("/d", NONE), ("/never", NONE), ("/never", &[("X-D", "1")])],
            &[("/d", &[("X-D", "1")]), ("/e", NONE), ("/", NONE)],
        ),
    ];
    // Its route serves `r<index>.test`.
    let host = format!("R{}.test.", cases.len());
    cases.push(case(&format!("HostHeader(`{host}`) && Path(`/`)"), &[("/", NONE)], &[("/x", NONE)]));
    cases
}

/// Kills the Caddy this test started when the test ends, however it ends.
struct Caddy(Child);

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Status and body of a raw HTTP/1.1 exchange (`Connection: close`).
fn exchange(mut stream: impl Read + Write, request: &str) -> (u16, String) {
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

fn get(port: u16, host: &str, (target, headers): &Request) -> String {
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let (_, body) =
        exchange(stream, &format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{extra}\r\n"));
    body
}

#[test]
fn translated_rules_match_in_caddy_as_in_traefik() {
    if !Path::new(CADDY).exists() {
        eprintln!("skipped: {CADDY} is not installed (scripts/test installs Debian's caddy package)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("admin.sock");
    let admin = json!({"listen": format!("unix/{}", socket.display()), "config": {"persist": false}});
    std::fs::write(dir.path().join("boot.json"), json!({ "admin": admin }).to_string()).unwrap();
    let caddy = Command::new(CADDY)
        .args(["run", "--config"])
        .arg(dir.path().join("boot.json"))
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("caddy.log")).unwrap())
        .spawn()
        .unwrap();
    let _caddy = Caddy(caddy);
    let started = Instant::now();
    while UnixStream::connect(&socket).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "Caddy's admin socket did not appear");
        std::thread::sleep(Duration::from_millis(50));
    }

    let cases = cases();
    let port = free_port();
    let mut routes = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let rule = parse(&case.rule).unwrap_or_else(|e| panic!("{}: {e}", case.rule));
        let mut set = to_caddy(&rule).unwrap_or_else(|e| panic!("{}: {e}", case.rule));
        assert!(set.insert("host".to_owned(), json!([format!("r{i}.test")])).is_none());
        routes.push(json!({
            "match": [set],
            "handle": [{"handler": "static_response", "body": format!("r{i}")}],
            "terminal": true,
        }));
    }
    routes.push(json!({"handle": [{"handler": "static_response", "status_code": 404, "body": "none"}]}));
    let config = json!({
        "admin": admin,
        "apps": {"http": {"servers": {"edge": {
            "listen": [format!("127.0.0.1:{port}")],
            "automatic_https": {"disable": true},
            "routes": routes,
        }}}},
    })
    .to_string();
    let load = format!(
        "POST /load HTTP/1.1\r\nHost: \r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{config}",
        config.len()
    );
    let (status, body) = exchange(UnixStream::connect(&socket).unwrap(), &load);
    let log = || std::fs::read_to_string(dir.path().join("caddy.log")).unwrap_or_default();
    assert_eq!(status, 200, "Caddy refused the config: {body}\n{}", log());

    let mut wrong = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let host = format!("r{i}.test");
        let mut expect = |request: &Request, host: &str, answer: &str| {
            let got = get(port, host, request);
            if got != answer {
                wrong.push(format!("{} on {host}{:?}: got {got:?}, want {answer:?}", case.rule, request));
            }
        };
        for request in case.hits {
            expect(request, &host, &host[..host.len() - 5]);
            // The rule never widens the host: other hosts get nothing.
            expect(request, "nobody.test", "none");
        }
        expect(&case.hits[0], &format!("R{i}.TEST:{port}"), &host[..host.len() - 5]);
        for request in case.misses {
            expect(request, &host, "none");
        }
    }
    assert!(wrong.is_empty(), "{} wrong answers:\n{}\n{}", wrong.len(), wrong.join("\n"), log());
}
