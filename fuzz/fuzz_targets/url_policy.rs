//! The URL policies: webhook endpoints (`play_model::webhook::url`) and
//! Playzone repositories (`play_model::playzone::RepositoryPolicy`), on an
//! operator allowlist and a URL from the input (`<allowlist>\n<url>`, or
//! the whole input as the URL with no allowlist).
//!
//! Invariants:
//! - no panic;
//! - an allowlist entry that parses is a network, or a lowercase host
//!   name of letters, digits, `.` and `-`;
//! - a URL the webhook policy accepts is at most 2048 bytes, `https`
//!   (`http` only where allowed), has no userinfo and no fragment, and
//!   names a host: an address literal that is public or in an allowlisted
//!   network, or a name that is no address literal in any spelling a
//!   resolver reads as one (`127.1`, `0x7f.1`, a trailing dot), that is
//!   not `localhost` nor a single label unless the operator named it;
//! - policies only widen: what the default policy accepts, the policy with
//!   `http` and the allowlist accepts too;
//! - a URL the repository policy accepts is also one the webhook policy
//!   (with `http` allowed) accepts, has no query, and is `https` unless
//!   `http` is allowed;
//! - the address classifier: a public address is allowed by every policy;
//!   an IPv4-mapped IPv6 address is classified as its IPv4 address.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};

use libfuzzer_sys::fuzz_target;
use play_model::playzone::RepositoryPolicy;
use play_model::webhook::url::{AllowEntry, MAX_URL_LEN, non_public, UrlPolicy};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (allow_text, url) = text.split_once('\n').unwrap_or(("", text));
    let Ok(allowlist) = UrlPolicy::parse_allowlist(allow_text) else { return };
    for entry in &allowlist {
        if let AllowEntry::Host(host) = entry {
            assert!(!host.is_empty() && host.len() <= 253, "{host:?}");
            assert!(host.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-'));
        }
    }
    let strict = UrlPolicy::default();
    let http = UrlPolicy { allow_http: true, allowlist: Vec::new() };
    let open = UrlPolicy { allow_http: true, allowlist };
    let mut accepted_before = false;
    for policy in [&strict, &http, &open] {
        let accepted = match policy.check(url) {
            Ok(parsed) => {
                check_accepted(policy, url, &parsed);
                true
            }
            Err(_) => false,
        };
        assert!(accepted || !accepted_before, "{policy:?} refuses {url:?}, a narrower policy accepts it");
        accepted_before = accepted;

        let repository = RepositoryPolicy { urls: policy.clone() };
        if let Ok(parsed) = repository.check(url) {
            let as_webhook = UrlPolicy { allow_http: true, ..policy.clone() };
            assert!(as_webhook.check(url).is_ok(), "{url:?}");
            assert!(parsed.query().is_none(), "{url:?}");
            assert!(parsed.scheme() == "https" || policy.allow_http, "{url:?}");
        }
    }
    // The classifier, on addresses from the input's bytes.
    for chunk in data.chunks_exact(4) {
        let v4 = Ipv4Addr::new(chunk[0], chunk[1], chunk[2], chunk[3]);
        let mapped = IpAddr::V6(v4.to_ipv6_mapped());
        assert_eq!(non_public(mapped), non_public(IpAddr::V4(v4)), "{v4}");
        for policy in [&strict, &open] {
            if non_public(IpAddr::V4(v4)).is_none() {
                assert!(policy.address_allowed(IpAddr::V4(v4)) && policy.address_allowed(mapped), "{v4}");
            }
            assert_eq!(policy.address_allowed(mapped), policy.address_allowed(IpAddr::V4(v4)), "{v4} {policy:?}");
        }
    }
});

fn check_accepted(policy: &UrlPolicy, text: &str, url: &url::Url) {
    assert!(text.len() <= MAX_URL_LEN);
    assert!(url.scheme() == "https" || (url.scheme() == "http" && policy.allow_http), "{text:?}");
    assert!(url.username().is_empty() && url.password().is_none(), "{text:?}");
    assert!(url.fragment().is_none(), "{text:?}");
    let in_allowlist = |ip: IpAddr| {
        policy.allowlist.iter().any(|e| match e {
            AllowEntry::Net(net) => net.contains(&ip),
            AllowEntry::Host(_) => false,
        })
    };
    match url.host().unwrap_or_else(|| panic!("{text:?} names no host")) {
        url::Host::Ipv4(ip) => {
            let ip = IpAddr::V4(ip);
            assert!(non_public(ip).is_none() || in_allowlist(ip), "{text:?} names {ip}");
        }
        url::Host::Ipv6(ip) => {
            let mapped = ip.to_ipv4_mapped().map(IpAddr::V4);
            let ip = IpAddr::V6(ip);
            assert!(
                non_public(ip).is_none() || in_allowlist(ip) || mapped.is_some_and(in_allowlist),
                "{text:?} names {ip}"
            );
        }
        url::Host::Domain(name) => {
            let bare = name.trim_end_matches('.');
            if let Some(ip) = inet_aton(bare) {
                let ip = IpAddr::V4(ip);
                assert!(non_public(ip).is_none() || in_allowlist(ip), "{text:?} spells {ip}");
            }
            let lower = bare.to_ascii_lowercase();
            if lower == "localhost" || lower.ends_with(".localhost") || !lower.contains('.') {
                assert!(policy.host_allowed(&lower), "{text:?}");
            }
        }
    }
}

/// An IPv4 address as the C library's `inet_aton` (and so `getaddrinfo`)
/// reads it: one to four parts, decimal, octal (`0` prefix) or hex (`0x`),
/// the last filling the remaining bytes.
fn inet_aton(text: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut values = Vec::new();
    for part in &parts {
        let (digits, radix) = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (*part, 10)
        };
        if digits.is_empty() && radix != 16 {
            return None;
        }
        let value = if digits.is_empty() { 0 } else { u32::from_str_radix(digits, radix).ok()? };
        if digits.starts_with(['+', '-']) {
            return None;
        }
        values.push(value);
    }
    let (last, head) = values.split_last()?;
    if head.iter().any(|&v| v > 255) || u64::from(*last) >= 1u64 << (8 * (4 - head.len())) {
        return None;
    }
    let mut n = *last;
    for (i, &v) in head.iter().enumerate() {
        n |= v << (8 * (3 - i));
    }
    Some(Ipv4Addr::from(n))
}
