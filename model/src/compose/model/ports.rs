//! Published ports: the short syntax
//! `[HOST_IP:][PUBLISHED[-END]:]TARGET[-END][/PROTOCOL]` (IPv6 host IPs in
//! brackets) and the long syntax mapping.

use std::fmt;
use std::net::IpAddr;

use serde_yaml::Value;

use crate::compose::ctx::{Ctx, untag};
use crate::compose::path::Path;

/// An inclusive range of ports; a single port has `start == end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    pub start: u16,
    pub end: u16,
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.start == self.end { write!(f, "{}", self.start) } else { write!(f, "{}-{}", self.start, self.end) }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    pub host_ip: Option<IpAddr>,
    /// `None`: Docker picks a free host port.
    pub published: Option<PortRange>,
    pub target: PortRange,
    /// `tcp`, `udp` or `sctp`.
    pub protocol: String,
}

impl Port {
    /// Canonical short syntax; `tcp` is implied and left out.
    pub fn short(&self) -> String {
        let mut out = String::new();
        match self.host_ip {
            Some(IpAddr::V6(ip)) => out.push_str(&format!("[{ip}]:")),
            Some(IpAddr::V4(ip)) => out.push_str(&format!("{ip}:")),
            None => {}
        }
        match self.published {
            Some(published) => out.push_str(&format!("{published}:")),
            None if self.host_ip.is_some() => out.push(':'),
            None => {}
        }
        out.push_str(&self.target.to_string());
        if self.protocol != "tcp" {
            out.push('/');
            out.push_str(&self.protocol);
        }
        out
    }
}

fn parse_range(text: &str, what: &str) -> Result<PortRange, String> {
    let one = |t: &str| -> Result<u16, String> {
        match t.parse::<u16>() {
            Ok(p) if p >= 1 && t.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
            _ => Err(format!("{what} `{t}` must be a port number from 1 to 65535")),
        }
    };
    let range = match text.split_once('-') {
        Some((start, end)) => PortRange { start: one(start)?, end: one(end)? },
        None => {
            let port = one(text)?;
            PortRange { start: port, end: port }
        }
    };
    if range.end < range.start {
        return Err(format!("{what} range `{text}` ends before it starts"));
    }
    Ok(range)
}

fn check_protocol(protocol: &str) -> Result<String, String> {
    match protocol {
        "tcp" | "udp" | "sctp" => Ok(protocol.to_owned()),
        other => Err(format!("protocol `{other}` must be tcp, udp or sctp")),
    }
}

fn parse_ip(text: &str) -> Result<IpAddr, String> {
    text.parse().map_err(|_| format!("host IP `{text}` is not an IPv4 or IPv6 address"))
}

/// Parses the short syntax.
pub(crate) fn parse_short(text: &str) -> Result<Port, String> {
    let (spec, protocol) = match text.rsplit_once('/') {
        Some((spec, protocol)) => (spec, check_protocol(protocol)?),
        None => (text, "tcp".to_owned()),
    };
    let (host_ip, rest) = if let Some(after) = spec.strip_prefix('[') {
        let (ip, rest) = after.split_once("]:").ok_or_else(|| format!("`{text}`: unclosed `[` in host IP"))?;
        (Some(parse_ip(ip)?), rest)
    } else {
        let parts: Vec<&str> = spec.split(':').collect();
        match parts.len() {
            1 | 2 => (None, spec),
            3 => (Some(parse_ip(parts[0])?), &spec[parts[0].len() + 1..]),
            _ => {
                return Err(format!("`{text}` is not a port mapping (write IPv6 host IPs in brackets)"));
            }
        }
    };
    let (published, target) = match rest.split_once(':') {
        Some(("", target)) if host_ip.is_some() => (None, target),
        Some((published, target)) => (Some(parse_range(published, "published port")?), target),
        None if host_ip.is_some() => {
            return Err(format!("`{text}` has a host IP but no container port"));
        }
        None => (None, rest),
    };
    let target = parse_range(target, "container port")?;
    if let Some(published) = published {
        let multi_target = target.start != target.end;
        if multi_target && published.end - published.start != target.end - target.start {
            return Err(format!("`{text}`: published and container port ranges differ in length"));
        }
    }
    Ok(Port { host_ip, published, target, protocol })
}

pub(crate) fn parse_port(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<Port> {
    match untag(value) {
        Value::Mapping(mapping) => {
            let mut target = None;
            let mut port = Port {
                host_ip: None,
                published: None,
                target: PortRange { start: 1, end: 1 },
                protocol: "tcp".to_owned(),
            };
            for (key, val) in ctx.entries(mapping, path) {
                let at = path.key(key.clone());
                let text = ctx.string(val, &at);
                let text = text.as_deref().filter(|t| !ctx.is_deferred(t));
                let result = match (key.as_str(), text) {
                    (_, None) => Ok(()),
                    ("target", Some(t)) => parse_range(t, "target").map(|r| target = Some(r)),
                    ("published", Some(t)) => parse_range(t, "published port").map(|r| port.published = Some(r)),
                    ("host_ip", Some(t)) => parse_ip(t).map(|ip| port.host_ip = Some(ip)),
                    ("protocol", Some(t)) => check_protocol(t).map(|p| port.protocol = p),
                    ("mode", Some("host" | "ingress")) | ("name" | "app_protocol", Some(_)) => Ok(()),
                    ("mode", Some(other)) => Err(format!("mode `{other}` must be host or ingress")),
                    (k, Some(_)) if k.starts_with("x-") => Ok(()),
                    (k, Some(_)) => {
                        ctx.warn(&at, format!("unknown port key `{k}` is ignored"));
                        Ok(())
                    }
                };
                if let Err(message) = result {
                    ctx.error(&at, message);
                }
            }
            match target {
                Some(target) => Some(Port { target, ..port }),
                None => {
                    if !mapping.contains_key("target") {
                        ctx.error(path, "a long-syntax port needs `target`");
                    }
                    None
                }
            }
        }
        other => {
            let text = ctx.string(other, path)?;
            if ctx.is_deferred(&text) {
                return None;
            }
            parse_short(&text).map_err(|message| ctx.error(path, message)).ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_syntax_round_trips_to_canonical_form() {
        let cases = [
            ("80", "80"),
            ("8080:80", "8080:80"),
            ("8080:80/tcp", "8080:80"),
            ("53:53/udp", "53:53/udp"),
            ("127.0.0.1:8080:80", "127.0.0.1:8080:80"),
            ("127.0.0.1::80", "127.0.0.1::80"),
            ("[::1]:6000:6000", "[::1]:6000:6000"),
            ("8000-8010:8000-8010", "8000-8010:8000-8010"),
            ("9090-9091:8080-8081", "9090-9091:8080-8081"),
            ("8000-8010:80", "8000-8010:80"),
            ("3000-3005", "3000-3005"),
            ("5000:5000/sctp", "5000:5000/sctp"),
        ];
        for (input, canonical) in cases {
            let port = parse_short(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(port.short(), canonical, "{input}");
        }
    }

    #[test]
    fn short_syntax_errors() {
        for input in [
            "",
            "0",
            "65536",
            "http",
            "80:http",
            "80/icmp",
            "1.2.3:80:80",
            "8000-8010:8000-8005",
            "90-80",
            "::1:80:80",
            "[::1:80:80",
            "127.0.0.1:80",
            "80:",
            ":80",
            "+80",
            "1:2:3:4",
        ] {
            assert!(parse_short(input).is_err(), "{input:?} should fail");
        }
    }
}
