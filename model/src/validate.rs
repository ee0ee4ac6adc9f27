//! Small validators for user-supplied names and addresses. Each answers
//! `Ok(())` or the message to show under the field.

use std::net::IpAddr;

/// A DNS name (RFC 1123 labels) or an IP address, as an SSH host.
pub fn host(text: &str) -> Result<(), &'static str> {
    if text.parse::<IpAddr>().is_ok() || dns_name(text) {
        Ok(())
    } else {
        Err("must be a DNS name or an IP address, without scheme, port or path")
    }
}

fn dns_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// A domain Playgrounds are routed under: a lowercase DNS name with at least
/// two labels; `*.` wildcards are not accepted (play adds subdomains itself).
pub fn domain(text: &str) -> Result<(), &'static str> {
    if dns_name(text) && text.contains('.') && !text.bytes().any(|b| b.is_ascii_uppercase()) {
        Ok(())
    } else {
        Err("must be a lowercase domain name such as apps.example.com")
    }
}

/// A POSIX user name as sshd accepts it.
pub fn unix_user(text: &str) -> Result<(), &'static str> {
    let mut bytes = text.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_lowercase() || b == b'_');
    if first_ok
        && text.len() <= 32
        && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-' || b == b'.')
    {
        Ok(())
    } else {
        Err("must be a user name: lowercase letters, digits, '_', '-', '.', at most 32 characters")
    }
}

/// An email address for ACME registration (shape only; deliverability is
/// the CA's business).
pub fn email(text: &str) -> Result<(), &'static str> {
    match text.split_once('@') {
        Some((local, domain))
            if !local.is_empty()
                && !local.contains(char::is_whitespace)
                && dns_name(domain)
                && domain.contains('.') =>
        {
            Ok(())
        }
        _ => Err("must be an email address"),
    }
}

/// An absolute path without `..` segments or control characters.
pub fn absolute_path(text: &str) -> Result<(), &'static str> {
    if text.starts_with('/') && !text.split('/').any(|s| s == "..") && !text.chars().any(char::is_control) {
        Ok(())
    } else {
        Err("must be an absolute path without '..'")
    }
}

/// A display name: 1-100 characters, not blank, no control characters.
pub fn display_name(text: &str) -> Result<(), &'static str> {
    let count = text.chars().count();
    if text.trim().is_empty() || count > 100 || text.chars().any(char::is_control) {
        Err("must be 1-100 characters, not blank")
    } else {
        Ok(())
    }
}

/// The name of an AI agent provider (`POST /api/launch`'s `agent`): 1-64
/// characters of `a-z`, `0-9`, `.`, `_` and `-`, starting with a letter or
/// a digit (`claude-code`, `codex`). An allowlist: it is shown in views
/// and events, never run.
pub fn agent(text: &str) -> Result<(), &'static str> {
    let mut chars = text.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    if first_ok && rest_ok && text.len() <= 64 {
        Ok(())
    } else {
        Err("must be 1-64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or a digit")
    }
}

/// The validators above as JSON Schema (ECMA-262) patterns, for the
/// OpenAPI document: a client (or a fuzzer) reads the same rules the
/// server applies. Each is tested against its validator below; where a
/// rule has a length, the schema states it as `minLength`/`maxLength`
/// beside the pattern.
///
/// The character classes spell out what Rust calls control (`Cc`: U+0000
/// to U+001F, U+007F to U+009F) and whitespace (`White_Space`), since
/// `\s` differs between regex dialects.
pub mod patterns {
    /// [`display_name`](super::display_name) (with length 1-100): no
    /// control characters and at least one that is not whitespace.
    pub const DISPLAY_NAME: &str = r"^[^\x00-\x1f\x7f-\x9f]*[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\x00-\x1f\x7f-\x9f]*$";
    /// Not blank: at least one character that is not whitespace (what
    /// `str::trim` leaves non-empty). A search, not anchored.
    pub const NOT_BLANK: &str = r"[^\x09-\x0d\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]";
    /// The DNS-name half of [`host`](super::host) (with length at most
    /// 253); an IPv4 address is one too, IPv6 is `format: ipv6`.
    pub const DNS_NAME: &str =
        r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$";
    /// [`domain`](super::domain) (with length at most 253).
    pub const DOMAIN: &str = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$";
    /// [`agent`](super::agent).
    pub const AGENT: &str = r"^[a-z0-9][a-z0-9._-]{0,63}$";
    /// [`unix_user`](super::unix_user).
    pub const UNIX_USER: &str = r"^[a-z_][a-z0-9_.-]{0,31}$";
    /// [`email`](super::email), but for the 253-character bound on the
    /// domain, which a pattern cannot state.
    pub const EMAIL: &str = r"^[^@\x09-\x0d\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$";
    /// A path without `..` anywhere and without control characters (with
    /// length at least 1): the service paths of a Playspec.
    pub const NO_DOTDOT_PATH: &str = r"^\.?([^.\x00-\x1f\x7f-\x9f]+\.)*[^.\x00-\x1f\x7f-\x9f]*$";
    /// `sleep_after` (`crate::playground::sleep::parse_after`): `never`,
    /// or one number and unit within 5 s to 30 days. The server also takes
    /// `1h 30m` and the like; the document names the shapes it always
    /// takes.
    pub const SLEEP_AFTER: &str = r"^(never|([5-9]|[1-9][0-9]{1,5})s|[1-9][0-9]{0,3}m|([1-9][0-9]?|[1-6][0-9]{2}|7[01][0-9]|720)h|([1-9]|[12][0-9]|30)d)$";
    /// [`absolute_path`](super::absolute_path): `/`-separated segments,
    /// none of them `..`, no control characters.
    pub const ABSOLUTE_PATH: &str = r"^(/([^/.\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*|\.([^/.\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*)?|\.\.[^/\x00-\x1f\x7f-\x9f]+)?)+$";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents() {
        let pattern = regex::Regex::new(patterns::AGENT).unwrap();
        for ok in ["claude-code", "codex", "a", "agent.v2_1", &"a".repeat(64)] {
            assert!(agent(ok).is_ok() && pattern.is_match(ok), "{ok}");
        }
        for bad in ["", "-x", "Claude", "a b", "x/y", "a\n", "ä", "$(id)", &"a".repeat(65)] {
            assert!(agent(bad).is_err() && !pattern.is_match(bad), "{bad}");
        }
    }

    #[test]
    fn hosts() {
        for ok in ["example.com", "10.0.0.1", "::1", "host-1", "a.b.c"] {
            assert!(host(ok).is_ok(), "{ok}");
        }
        for bad in ["", "http://x", "x:22", "a..b", "-a.com", "a b", "x/y"] {
            assert!(host(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn domains() {
        assert!(domain("apps.example.com").is_ok());
        for bad in ["localhost", "Apps.example.com", "*.example.com", "example..com"] {
            assert!(domain(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn users() {
        for ok in ["root", "deploy", "_svc", "a-b.c1"] {
            assert!(unix_user(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Root", "1abc", "a b", "a;rm", &"a".repeat(33)] {
            assert!(unix_user(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn emails_and_paths() {
        assert!(email("ops@example.com").is_ok());
        for bad in ["ops", "@example.com", "ops@localhost", "a b@example.com"] {
            assert!(email(bad).is_err(), "{bad}");
        }
        assert!(absolute_path("/var/run/docker.sock").is_ok());
        for bad in ["var/run", "/a/../b", ""] {
            assert!(absolute_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn display_names() {
        assert!(display_name("staging box").is_ok());
        assert!(display_name("  ").is_err());
        assert!(display_name(&"x".repeat(101)).is_err());
    }

    /// Each pattern accepts exactly what its validator accepts, on
    /// hand-picked edge cases and on strings drawn from an alphabet of the
    /// characters the rules care about.
    #[test]
    fn patterns_agree_with_the_validators() {
        // (name, pattern, maxLength stated beside it, validator)
        type Rule = (&'static str, &'static str, usize, fn(&str) -> bool);
        let rules: [Rule; 8] = [
            ("no_dotdot_path", patterns::NO_DOTDOT_PATH, usize::MAX, |t| {
                !t.contains("..") && !t.chars().any(char::is_control)
            }),
            ("not_blank", patterns::NOT_BLANK, usize::MAX, |t| !t.trim().is_empty()),
            ("display_name", patterns::DISPLAY_NAME, 100, |t| display_name(t).is_ok()),
            ("dns_name", patterns::DNS_NAME, 253, dns_name),
            ("domain", patterns::DOMAIN, 253, |t| domain(t).is_ok()),
            ("unix_user", patterns::UNIX_USER, usize::MAX, |t| unix_user(t).is_ok()),
            ("email", patterns::EMAIL, usize::MAX, |t| email(t).is_ok()),
            ("absolute_path", patterns::ABSOLUTE_PATH, usize::MAX, |t| absolute_path(t).is_ok()),
        ];
        let alphabet: Vec<char> =
            "aZ09_-.@/ \t\n\u{7f}\u{85}\u{a0}\u{2003}\u{3000}\u{feff}é\u{1f600}".chars().collect();
        let mut samples: Vec<String> = [
            "",
            "a",
            "staging box",
            " ",
            "\u{3000}",
            "a\u{85}",
            "x\n",
            "..",
            "/",
            "//",
            "/a/../b",
            "/..",
            "/...",
            "/.a",
            "/a/.",
            "a.b",
            "-a",
            "a-",
            "a..b",
            "ops@example.com",
            "o p@example.com",
            "@example.com",
            "ops@localhost",
            "Apps.example.com",
            "apps.example.com",
            "root",
            "_svc",
            "1abc",
            "a-b.c1",
            "\u{feff}",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        samples.push("x".repeat(101));
        samples.push("a".repeat(64));
        samples.push(format!("{}.b", "a".repeat(63)));
        samples.push("a".repeat(33));
        // A fixed linear congruential sequence: reproducible, no extra dependency.
        let mut state: u64 = 0x5eed;
        for _ in 0..20_000 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let len = (state >> 59) as usize;
            let mut text = String::new();
            for _ in 0..len {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                text.push(alphabet[(state >> 33) as usize % alphabet.len()]);
            }
            samples.push(text);
        }
        for (name, pattern, max_chars, rule) in rules {
            let regex = regex::Regex::new(pattern).unwrap();
            for text in &samples {
                let schema_valid = regex.is_match(text) && text.chars().count() <= max_chars;
                assert_eq!(schema_valid, rule(text), "{name}: {text:?}");
            }
        }
    }
}
