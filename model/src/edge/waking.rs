//! The edge's part in sleep and wake (issue #32, `docs/sleep.md`): the
//! routes of sleeping Playgrounds, the wake listener, the access log that
//! measures activity, and the error page of a wake that did not finish.
//!
//! A sleeping Playground's route keeps its host and path rule, and runs,
//! in order:
//! 1. a **quiet path** (health checks: [`QUIET_PATHS`]) is answered `503`
//!    at once and wakes nothing, so an uptime monitor keeps nothing awake;
//! 2. a request **without a body** passes through the **wake listener**
//!    (a server of the edge itself on a unix socket in the container,
//!    reached as a forward-auth subrequest to `/wake/<playground id>` that
//!    it answers `204`); its access-log line reaches play at once over the
//!    Playroom's tunnel, and play wakes the Playground;
//! 3. a request **with a body** is sent to the wake listener whole, which
//!    logs it the same way and answers `503` with `Retry-After` (Caddy 2.6
//!    cannot both read a body for a subrequest and forward it after);
//! 4. a browser's page load (`GET`, `Accept: text/html`) gets the
//!    [waiting page](WAITING_PAGE), whose script asks again with
//!    `X-Play-Wake: wait` and reloads when the service answers;
//! 5. anything else is **held**: proxied to the service's container with
//!    retries for up to [`HOLD`], so the first answer is the service's own
//!    as soon as its container accepts connections; a wake that does not
//!    finish in time gets the error page (`503`, `Retry-After`).
//!
//! Activity: the `http` and `https` servers log requests only for the
//! hosts of Playgrounds that may sleep ([`Sleeping::watched_hosts`]),
//! through a logger named [`ACCESS_LOGGER`], to stdout, with headers, the
//! client's address and the query string filtered out (no secret leaves
//! the edge); the wake listener logs to the same place as
//! [`WAKE_LOGGER`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};

use crate::routing::Route;

/// How long a request to a sleeping Playground is held before the error
/// page: the bound documented for clients.
pub const HOLD: Duration = Duration::from_secs(30);
/// How often a held request tries the container again. A woken
/// Playground's route switches only after its services have accepted
/// connections for several of these (the reconciler's wake gate): a
/// switch is a config load, which ends the retries of every request the
/// old config still holds.
pub const HOLD_INTERVAL: Duration = Duration::from_millis(100);
/// The wake listener's socket inside the edge container (beside the admin
/// socket, in play's own directory).
pub const WAKE_SOCKET: &str = "/run/play-edge/wake.sock";
/// The logger of access-log lines of watched hosts.
pub const ACCESS_LOGGER: &str = "http.log.access.play";
/// The logger of the wake listener's lines (its server has no logger name).
pub const WAKE_LOGGER: &str = "http.log.access";
/// Paths that neither count as activity nor wake a Playground: health
/// checks of uptime monitors and load balancers (the path itself or below
/// it).
pub const QUIET_PATHS: &[&str] = &["/health", "/healthz", "/healthcheck", "/livez", "/readyz", "/ping"];
/// The header that marks an answer of the edge for a sleeping Playground.
pub const SLEEPING_HEADER: &str = "X-Play-Sleeping";

/// What the edge knows of sleep for one config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sleeping {
    /// The routes of sleeping (or waking) Playgrounds: route id ->
    /// Playground id.
    pub waking: BTreeMap<String, i64>,
    /// The hosts whose requests count as activity (Playgrounds that may
    /// sleep).
    pub watched_hosts: BTreeSet<String>,
}

/// `d` as Caddy reads a duration (Go's syntax: `30s`, `100ms`).
fn go_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// Whether `path` (no query) is a quiet path.
pub fn is_quiet(path: &str) -> bool {
    QUIET_PATHS.iter().any(|q| path == *q || path.strip_prefix(q).is_some_and(|rest| rest.starts_with('/')))
}

/// The route of a sleeping Playground `playground_id` (see the [module
/// documentation](self)).
pub fn waking_route(route: &Route, playground_id: i64) -> Value {
    let wake = json!([{"dial": format!("unix/{WAKE_SOCKET}")}]);
    let uri = format!("/wake/{playground_id}");
    let quiet: Vec<String> = QUIET_PATHS.iter().flat_map(|p| [p.to_string(), format!("{p}/*")]).collect();
    let answer = |status: u16, body: &str| {
        json!({
            "handler": "static_response",
            "status_code": status,
            "headers": {
                SLEEPING_HEADER: ["1"],
                "Retry-After": ["2"],
                "Cache-Control": ["no-store"],
                "Content-Type": ["text/plain; charset=utf-8"],
            },
            "body": body,
            "close": true,
        })
    };
    let has_body = json!({"header": {"Content-Length": ["*"]}});
    json!({
        "@id": route.id,
        "match": [route.matcher],
        "handle": [close_after(), {"handler": "subroute", "routes": [
            {
                "match": [{"path": quiet}],
                "handle": [answer(503, "play: this Playground is asleep; health checks do not wake it\n")],
                "terminal": true,
            },
            {
                "match": [{"not": [has_body]}],
                "handle": [{
                    "handler": "reverse_proxy",
                    "upstreams": wake,
                    "rewrite": {"method": "GET", "uri": uri},
                    "handle_response": [{"match": {"status_code": [2]}, "routes": [{"handle": [{"handler": "vars"}]}]}],
                }],
            },
            {
                "match": [has_body],
                "handle": [{"handler": "reverse_proxy", "upstreams": wake, "rewrite": {"uri": uri}}],
                "terminal": true,
            },
            {
                "match": [page_load()],
                "handle": [waiting_page()],
                "terminal": true,
            },
            {
                "handle": [{
                    "handler": "reverse_proxy",
                    "upstreams": [{"dial": format!("{}:{}", route.upstream, route.port)}],
                    "load_balancing": {"try_duration": go_duration(HOLD), "try_interval": go_duration(HOLD_INTERVAL)},
                }],
            },
        ]}],
        "terminal": true,
    })
}

/// Every answer of a sleeping Playground's route closes its connection:
/// the edge switches the route when the Playground runs again, and a
/// keep-alive connection opened before would otherwise go on being served
/// by the config it was opened under (Caddy keeps an old server's busy
/// connections until they are idle), whose wake listener is gone: the
/// reload of a woken browser page got the error page (found by
/// `tests/e2e/sleep_faults_e2e.rs` in Chromium).
fn close_after() -> Value {
    json!({"handler": "headers", "response": {"set": {"Connection": ["close"]}, "deferred": true}})
}

/// The error routes of a sleeping Playground's route: a held request whose
/// wake did not finish within [`HOLD`] (or whose service refused it). A
/// browser's page load gets the waiting page instead, whose script shows
/// the error when a held request of its own gets it (and keeps asking, so
/// a wake retried later still reaches the page).
pub fn error_route(route: &Route) -> Value {
    let mut page = waiting_page();
    page["close"] = json!(true);
    json!({
        "match": [route.matcher],
        "handle": [{"handler": "subroute", "routes": [
            {"match": [page_load()], "handle": [page], "terminal": true},
            {"handle": [failed_answer()], "terminal": true},
        ]}],
        "terminal": true,
    })
}

/// A browser's page load: `GET` accepting HTML, not the waiting page's
/// own request.
fn page_load() -> Value {
    json!({
        "method": ["GET"],
        "header_regexp": {"Accept": {"pattern": "text/html"}},
        "not": [{"header": {"X-Play-Wake": ["*"]}}],
    })
}

/// The answer to a held request whose wake did not finish in time.
fn failed_answer() -> Value {
    json!({
            "handler": "static_response",
            "status_code": 503,
            "headers": {
                SLEEPING_HEADER: ["failed"],
                "Retry-After": ["5"],
                "Cache-Control": ["no-store"],
                "Content-Type": ["text/plain; charset=utf-8"],
            },
            "body": format!(
                "play: this Playground was asleep and did not answer within {} of the request ({{http.error.status_code}}); \
                 its status and events say why (play get playground). Try again in a few seconds.\n",
                go_duration(HOLD)
            ),
            "close": true,
    })
}

/// The wake listener's server: `GET /wake/<id>` (a subrequest) is `204`,
/// a request with a body `503` with `Retry-After`; both are logged.
pub fn wake_server() -> Value {
    json!({
        "listen": [format!("unix/{WAKE_SOCKET}")],
        "automatic_https": {"disable": true},
        "logs": {},
        "routes": [
            {"match": [{"method": ["GET"]}], "handle": [{"handler": "static_response", "status_code": 204}], "terminal": true},
            {"handle": [{
                "handler": "static_response",
                "status_code": 503,
                "headers": {SLEEPING_HEADER: ["1"], "Retry-After": ["2"], "Content-Type": ["text/plain; charset=utf-8"]},
                "body": "play: this Playground was asleep and is waking up; send the request again in a moment\n",
            }], "terminal": true},
        ],
    })
}

/// The `logs` of the `http` and `https` servers: log only `hosts` (with
/// and without the server's port), under [`ACCESS_LOGGER`].
pub fn server_logs(hosts: &BTreeSet<String>, ports: &[u16]) -> Value {
    let mut names = serde_json::Map::new();
    for host in hosts {
        names.insert(host.clone(), json!("play"));
        for port in ports {
            names.insert(format!("{host}:{port}"), json!("play"));
        }
    }
    json!({"logger_names": names, "skip_unmapped_hosts": true})
}

/// The `logging` app: access-log lines to stdout, filtered to what the
/// activity monitor reads; everything else stays on stderr.
pub fn logging() -> Value {
    let delete = json!({"filter": "delete"});
    json!({"logs": {
        "default": {"exclude": ["http.log.access"]},
        "play-activity": {
            "include": ["http.log.access"],
            "writer": {"output": "stdout"},
            "encoder": {"format": "filter", "wrap": {"format": "json"}, "fields": {
                "request>headers": delete, "resp_headers": delete, "request>tls": delete,
                "request>remote_ip": delete, "request>remote_port": delete, "request>client_ip": delete,
                "user_id": delete,
                "request>uri": {"filter": "regexp", "regexp": "\\?.*$", "value": ""},
            }},
        },
    }})
}

/// The waiting page a browser gets while the Playground wakes: it asks
/// again with `X-Play-Wake: wait` (a held request: it returns when the
/// service answers, no polling interval) and reloads once the answer is
/// the service's; without script it refreshes every 2 s.
fn waiting_page() -> Value {
    json!({
        "handler": "static_response",
        "status_code": 503,
        "headers": {
            SLEEPING_HEADER: ["1"],
            "Retry-After": ["1"],
            "Cache-Control": ["no-store"],
            "Content-Type": ["text/html; charset=utf-8"],
            "Content-Security-Policy": [format!(
                "default-src 'none'; script-src '{}'; style-src 'unsafe-inline'; connect-src 'self'", script_hash()
            )],
        },
        "body": WAITING_PAGE.replace("{script}", WAITING_SCRIPT),
    })
}

/// The page (see [`waiting_page`]); `{script}` is [`WAITING_SCRIPT`].
pub const WAITING_PAGE: &str = "<!doctype html><html lang=en><head><meta charset=utf-8>\
<meta name=viewport content=\"width=device-width\"><title>Waking up…</title>\
<noscript><meta http-equiv=refresh content=2></noscript>\
<style>body{font:16px system-ui,sans-serif;margin:20vh auto;max-width:32em;text-align:center;color:#222}</style>\
</head><body><h1>Waking up…</h1><p id=play-wake>This environment was asleep. It is starting and this page \
reloads by itself when it answers.</p><script>{script}</script></body></html>";

/// The waiting page's script (hashed into its policy).
pub const WAITING_SCRIPT: &str = "(async()=>{const m=document.getElementById('play-wake');\
for(let i=0;i<20;i++){try{const r=await fetch(location.href,{cache:'no-store',headers:{'X-Play-Wake':'wait'}});\
const s=r.headers.get('X-Play-Sleeping');if(!s){location.reload();return}\
if(s==='failed'){m.textContent=await r.text();await new Promise(f=>setTimeout(f,5000))}}\
catch(e){await new Promise(f=>setTimeout(f,1000))}}})();";

fn script_hash() -> String {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    format!("sha256-{}", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(WAITING_SCRIPT.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_paths_are_the_path_or_below_it() {
        assert!(is_quiet("/healthz"));
        assert!(is_quiet("/health/live"));
        assert!(!is_quiet("/healthcheckers"));
        assert!(!is_quiet("/"));
        assert!(!is_quiet("/api/health"));
    }

    #[test]
    fn the_waiting_page_runs_only_its_own_script() {
        let page = waiting_page();
        let csp = page["headers"]["Content-Security-Policy"][0].as_str().unwrap();
        assert!(csp.starts_with("default-src 'none'; script-src 'sha256-"), "{csp}");
        assert!(page["body"].as_str().unwrap().contains(WAITING_SCRIPT));
        assert_eq!(page["status_code"], 503);
    }

    #[test]
    fn access_logs_name_hosts_with_and_without_ports() {
        let hosts = BTreeSet::from(["a.example".to_owned()]);
        let logs = server_logs(&hosts, &[8080]);
        assert_eq!(logs["logger_names"]["a.example"], "play");
        assert_eq!(logs["logger_names"]["a.example:8080"], "play");
        assert_eq!(logs["skip_unmapped_hosts"], true);
    }
}
