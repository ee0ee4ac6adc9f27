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

#[cfg(test)]
mod tests {
    use super::*;

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
}
