//! Which URLs a webhook endpoint may name, and which addresses play may
//! send to.
//!
//! Two checks, one classifier. At create and update time [`UrlPolicy::check`]
//! refuses what can be refused from the text alone: a scheme other than
//! `https` (`http` only where the operator allows it), userinfo, a host that
//! is an IP literal in a non-public range, or `localhost`. A DNS name can
//! still resolve to a private address later, so the dispatcher (not this
//! module) resolves each name, passes every address through
//! [`UrlPolicy::address_allowed`] and connects to the checked address.
//!
//! The operator allowlist ([`UrlPolicy::allow`]) names hosts and networks
//! that are reachable anyway: loopback receivers in tests, a private
//! network in a private deployment.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// The longest URL accepted, in bytes.
pub const MAX_URL_LEN: usize = 2048;

/// The operator's settings for webhook targets. The default allows only
/// `https` to public addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UrlPolicy {
    /// Whether `http://` URLs are accepted (off by default: a delivery's
    /// body and signature would cross the network in clear).
    pub allow_http: bool,
    /// Hosts (exact, lowercase) and networks that are allowed although
    /// the classifier would refuse them.
    pub allowlist: Vec<AllowEntry>,
}

/// One entry of the operator allowlist.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllowEntry {
    /// A host name, compared without case.
    Host(String),
    /// An address or a network (`127.0.0.1`, `10.0.0.0/8`, `::1`).
    Net(IpNet),
}

impl AllowEntry {
    /// Parses `127.0.0.1`, `10.0.0.0/8`, `[::1]`, `fd00::/8` or a host name.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bare = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).unwrap_or(text);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(AllowEntry::Net(IpNet::from(ip)));
        }
        if let Ok(net) = bare.parse::<IpNet>() {
            return Ok(AllowEntry::Net(net.trunc()));
        }
        let valid = !text.is_empty()
            && text.len() <= 253
            && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
        if valid {
            Ok(AllowEntry::Host(text.to_ascii_lowercase()))
        } else {
            Err(format!("{text:?} is neither a host name, an address nor a network"))
        }
    }
}

impl UrlPolicy {
    /// The policy of the operator's settings: whether `http://` is allowed,
    /// and a comma-separated allowlist ([`Self::parse_allowlist`]).
    pub fn from_settings(allow_http: bool, allowlist: &str) -> Result<Self, String> {
        Ok(UrlPolicy { allow_http, allowlist: Self::parse_allowlist(allowlist)? })
    }

    /// Parses a comma-separated allowlist (`PLAY_WEBHOOK_ALLOWLIST`).
    pub fn parse_allowlist(text: &str) -> Result<Vec<AllowEntry>, String> {
        text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(AllowEntry::parse).collect()
    }

    /// Allows `entry` although the classifier would refuse it.
    pub fn allow(mut self, entry: AllowEntry) -> Self {
        self.allowlist.push(entry);
        self
    }

    /// Whether the allowlist names `host` (compared without case): every
    /// address it resolves to is then allowed.
    pub fn host_allowed(&self, host: &str) -> bool {
        self.allowlist.iter().any(|e| matches!(e, AllowEntry::Host(h) if h.eq_ignore_ascii_case(host)))
    }

    /// Whether play may connect to `ip`: a public address, or one the
    /// allowlist names. The dispatcher calls this on every resolved
    /// address before it connects.
    ///
    /// An IPv4-mapped address (`::ffff:10.0.0.1`) is what a connection to
    /// it reaches: its IPv4 address, judged as that address. An IPv6 entry
    /// covers it only when the entry is itself a mapped range
    /// (`::ffff:10.0.0.0/104`), so `::/0` or `::/8` allow no IPv4 address.
    pub fn address_allowed(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip).unwrap_or(ip);
        non_public(ip).is_none()
            || self.allowlist.iter().any(|e| match e {
                AllowEntry::Net(net) => covers(net, ip),
                AllowEntry::Host(_) => false,
            })
    }

    /// Checks every address `host` resolved to, before play connects: the
    /// addresses to connect to, or why the name is refused. One address
    /// that is not allowed refuses the name (a rebinding resolver cannot
    /// smuggle a private address in among public ones); a name the
    /// operator allowlisted is allowed whatever it resolves to. The one
    /// rule of every outbound client play has (webhook deliveries,
    /// repositories).
    pub fn check_resolved(
        &self,
        host: &str,
        addrs: Vec<std::net::SocketAddr>,
    ) -> Result<Vec<std::net::SocketAddr>, String> {
        if addrs.is_empty() {
            return Err(format!("{host} resolves to no address"));
        }
        if self.host_allowed(host.trim_end_matches('.')) {
            return Ok(addrs);
        }
        if let Some(bad) = addrs.iter().find(|a| !self.address_allowed(a.ip())) {
            let what = non_public(bad.ip()).unwrap_or("refused");
            return Err(format!("{host} resolves to {} ({what}, not allowlisted by the operator)", bad.ip()));
        }
        Ok(addrs)
    }

    /// Checks an endpoint URL; the message says what is wrong.
    pub fn check(&self, text: &str) -> Result<url::Url, String> {
        if text.len() > MAX_URL_LEN {
            return Err(format!("must be at most {MAX_URL_LEN} characters"));
        }
        if text.trim() != text || text.chars().any(char::is_control) {
            return Err("must not contain spaces around it or control characters".into());
        }
        // The parser forgives `https:/host` and `https:\\host`; the
        // document's pattern does not, and neither do we.
        let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
        if !lower.starts_with("https://") && !lower.starts_with("http://") {
            return Err("must be an absolute URL starting with https://".into());
        }
        let url = url::Url::parse(text).map_err(|e| format!("must be an absolute URL ({e})"))?;
        match url.scheme() {
            "https" => {}
            "http" if self.allow_http => {}
            "http" => {
                return Err("must use https (http is refused unless the operator sets PLAY_WEBHOOK_ALLOW_HTTP)".into());
            }
            _ => return Err("must be an https URL".into()),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not contain a user name or password".into());
        }
        if url.fragment().is_some() {
            return Err("must not contain a fragment (#...)".into());
        }
        let refused = |what: &str| format!("must not point at a {what} address (not allowlisted by the operator)");
        let address = |ip: IpAddr| match non_public(ip).filter(|_| !self.address_allowed(ip)) {
            Some(what) => Err(refused(what)),
            None => Ok(()),
        };
        match url.host() {
            None => return Err("must name a host".into()),
            Some(url::Host::Ipv4(ip)) => address(IpAddr::V4(ip))?,
            Some(url::Host::Ipv6(ip)) => address(IpAddr::V6(ip))?,
            Some(url::Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                // The parser reads a host as an address after dropping one
                // trailing dot, so `127.0.0.1..` stays a name: without its
                // dots it is the address, and judged as one.
                if let Ok(url::Host::Ipv4(ip)) = url::Host::parse(&name) {
                    address(IpAddr::V4(ip))?;
                }
                let local = name == "localhost" || name.ends_with(".localhost");
                if local && !self.host_allowed(&name) {
                    return Err(refused("loopback"));
                }
                if !name.contains('.') && !self.host_allowed(&name) {
                    return Err("must name a fully qualified host (a single-label name resolves locally)".into());
                }
            }
        }
        Ok(url)
    }
}

/// The IPv4 address an IPv4-mapped IPv6 address carries, which is what a
/// connection to it reaches.
fn canonical(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4),
        IpAddr::V4(_) => None,
    }
}

/// Whether allowlist entry `net` names `ip` (an IPv4 address also through
/// a mapped range: an IPv6 network of at least 96 bits within
/// `::ffff:0:0/96`).
fn covers(net: &IpNet, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpNet::V6(v6), IpAddr::V4(v4)) => v6.prefix_len() >= 96 && v6.contains(&v4.to_ipv6_mapped()),
        _ => net.contains(&ip),
    }
}

/// Why `ip` is not a public unicast address (`None` when it is one).
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => non_public_v4(v4),
            None => non_public_v6(v6),
        },
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(100, 100, 100, 200) {
        Some("cloud metadata")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        Some("broadcast, multicast or reserved")
    } else if (a == 192 && b == 0 && c == 0) || (a == 198 && (18..20).contains(&b)) || ip.is_documentation() {
        Some("special-purpose")
    } else {
        None
    }
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        Some("cloud metadata")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if first & 0xfe00 == 0xfc00 {
        Some("unique-local")
    } else if first & 0xffc0 == 0xfe80 || first & 0xffc0 == 0xfec0 {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("broadcast, multicast or reserved")
    } else if ip.segments()[..6] == [0; 6]
        || first == 0x0064
        || first == 0x2002
        || (first == 0x2001 && ip.segments()[1] < 0x0200)
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
    {
        // IPv4-compatible, NAT64, 6to4, Teredo and other special-purpose
        // blocks, and documentation: they can tunnel to any IPv4 address.
        Some("special-purpose")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_classifier_knows_the_non_public_ranges() {
        for (addr, what) in [
            ("127.0.0.1", "loopback"),
            ("127.10.0.2", "loopback"),
            ("10.0.0.1", "private"),
            ("172.16.5.4", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "cloud metadata"),
            ("169.254.1.1", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("224.0.0.1", "broadcast, multicast or reserved"),
            ("255.255.255.255", "broadcast, multicast or reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fd12::1", "unique-local"),
            ("fc00::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("fd00:ec2::254", "cloud metadata"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "cloud metadata"),
            ("::ffff:10.1.2.3", "private"),
            ("64:ff9b::a00:1", "special-purpose"),
            ("2002:a00:1::", "special-purpose"),
        ] {
            assert_eq!(non_public(ip(addr)), Some(what), "{addr}");
        }
        for addr in ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "100.128.0.1"] {
            assert_eq!(non_public(ip(addr)), None, "{addr}");
        }
    }

    #[test]
    fn urls_must_be_https_to_public_hosts() {
        let policy = UrlPolicy::default();
        assert!(policy.check("https://hooks.example.com/play?x=1").is_ok());
        assert!(policy.check("https://93.184.216.34:8443/hook").is_ok());
        for bad in [
            "hooks.example.com",
            "https:/hooks.example.com/",
            "https:\\\\hooks.example.com/",
            "javascript:alert(1)",
            "ftp://hooks.example.com/",
            "http://hooks.example.com/",
            "https://user:pw@hooks.example.com/",
            "https://user@hooks.example.com/",
            "https://127.0.0.1/",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://10.0.0.1/",
            "https://0x7f000001/",
            "https://2130706433/",
            "https://localhost/",
            "https://api.localhost/",
            "https://intranet/",
            "https://hooks.example.com/#frag",
            " https://hooks.example.com/",
            "",
        ] {
            assert!(policy.check(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(policy.check(&format!("https://h.example.com/{}", "a".repeat(MAX_URL_LEN))).is_err());
    }

    #[test]
    fn the_allowlist_and_the_http_flag_open_what_the_operator_names() {
        let policy = UrlPolicy {
            allow_http: true,
            allowlist: UrlPolicy::parse_allowlist("127.0.0.1, 10.0.0.0/8, [::1], intranet").unwrap(),
        };
        for ok in ["http://127.0.0.1:9000/hook", "https://10.20.30.40/", "https://[::1]:8443/", "https://intranet/"] {
            assert!(policy.check(ok).is_ok(), "{ok}");
        }
        assert!(policy.check("https://127.0.0.2/").is_err());
        assert!(policy.check("https://192.168.0.1/").is_err());
        assert!(policy.address_allowed(ip("::ffff:127.0.0.1")));
        assert!(!policy.address_allowed(ip("127.0.0.2")));
        assert!(UrlPolicy::parse_allowlist("not a host!").is_err());
    }

    /// Found by fuzzing (`fuzz/fuzz_targets/url_policy.rs`): the URL
    /// parser drops one trailing dot before it reads a host as an address,
    /// so `127.0.0.1..` stayed a name, which the policy then read without
    /// its dots, as an address with a dot in it, and accepted.
    #[test]
    fn an_address_with_trailing_dots_is_judged_as_the_address() {
        let policy = UrlPolicy::default();
        for bad in [
            "https://127.0.0.1../",
            "https://127.0.0.1.../hook",
            "https://0.254..%2e/latest",
            "https://169.254.169.254../latest/meta-data",
            "https://0x7f.1../",
            "https://10.0.0.1%2e%2e/",
        ] {
            assert!(policy.check(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(policy.check("https://93.184.216.34../hook").is_ok());
        let allowed = UrlPolicy { allow_http: false, allowlist: UrlPolicy::parse_allowlist("127.0.0.1").unwrap() };
        assert!(allowed.check("https://127.0.0.1../").is_ok());
    }

    /// Found by fuzzing (`fuzz/fuzz_targets/url_policy.rs`): an IPv6
    /// network such as `::/8` or `::/0` contains every IPv4-mapped
    /// address, so it allowed `::ffff:10.0.0.1` (a connection to
    /// 10.0.0.1) while 10.0.0.1 itself stayed refused. A mapped address is
    /// judged as its IPv4 address; an IPv6 entry covers it only when the
    /// entry is itself a mapped range (`::ffff:10.0.0.0/104`).
    #[test]
    fn a_mapped_address_is_allowed_exactly_when_its_ipv4_address_is() {
        for list in ["::/8", "::/0", "::ffff:0:0/95", "fd00::/8, 2000::/3"] {
            let policy = UrlPolicy { allow_http: false, allowlist: UrlPolicy::parse_allowlist(list).unwrap() };
            for v4 in ["10.0.0.1", "127.0.0.1", "169.254.169.254", "192.168.1.1"] {
                let mapped = IpAddr::V6(v4.parse::<Ipv4Addr>().unwrap().to_ipv6_mapped());
                assert!(!policy.address_allowed(ip(v4)), "{list}: {v4}");
                assert!(!policy.address_allowed(mapped), "{list}: {mapped}");
                assert!(policy.check(&format!("https://[{mapped}]/")).is_err(), "{list}: {mapped}");
            }
        }
        let policy =
            UrlPolicy { allow_http: false, allowlist: UrlPolicy::parse_allowlist("::ffff:10.0.0.0/104").unwrap() };
        for allowed in ["10.1.2.3", "::ffff:10.1.2.3"] {
            assert!(policy.address_allowed(ip(allowed)), "{allowed}");
        }
        for refused in ["192.168.0.1", "::ffff:192.168.0.1", "127.0.0.1"] {
            assert!(!policy.address_allowed(ip(refused)), "{refused}");
        }
    }
}
