//! Repositories on ssh URLs (issue #52, item 2): the two spellings git
//! takes, `ssh://git@host[:port]/owner/repo.git` and the scp-like
//! `git@host:owner/repo.git`, read into one [`SshUrl`]; the access a call
//! carries ([`SshAccess`]: the deploy key and the pinned host key); and the
//! seam through which the gateway pins a host key on first contact
//! ([`SshHostKeys`]).
//!
//! # Invariants
//!
//! - Everything of a URL is checked against an allowlist of characters
//!   before anything is dialled: the user, the host (a DNS name or an IP
//!   literal, judged later by the operator's address policy as an https
//!   URL's host is) and the path, which becomes an argument of the
//!   remote's `git-upload-pack` / `git-receive-pack` command: letters,
//!   digits and `._-/~+`, no `..` component, no leading `-`, so it can
//!   neither leave its single quotes nor read as an option.
//! - The private key is only ever in [`SshAccess`], whose `Debug` redacts
//!   it; it is sent to no one (public-key authentication signs with it).
//! - A host key is pinned per Playzone, once: the first contact that
//!   completes the SSH handshake records the key it saw, and every later
//!   contact must present that key, as for Playrooms.

use std::fmt;

use async_trait::async_trait;

use super::RepositoryError;

/// The user of an ssh URL that names none (the forges' convention).
pub const DEFAULT_USER: &str = "git";
/// The longest repository path accepted, in bytes.
pub const MAX_PATH_LEN: usize = 1024;

/// A repository URL on ssh, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshUrl {
    pub user: String,
    /// A DNS name or an IP address (without brackets).
    pub host: String,
    pub port: u16,
    /// The path as the remote's git command gets it: `/srv/repo.git` for
    /// `ssh://host/srv/repo.git`, `owner/repo.git` (relative to the
    /// user's home) for `host:owner/repo.git`, `~/repo.git` for
    /// `ssh://host/~/repo.git`, as git sends them.
    pub path: String,
}

/// Whether `url` is meant as an ssh URL: `ssh://...`, or the scp-like
/// `user@host:path` (no scheme, a `:` before the first `/`).
pub fn is_ssh_url(url: &str) -> bool {
    if url.to_ascii_lowercase().starts_with("ssh://") {
        return true;
    }
    !url.contains("://") && url.split_once(':').is_some_and(|(before, _)| before.contains('@') && !before.contains('/'))
}

impl SshUrl {
    /// Reads `url`; the message says what is wrong.
    pub fn parse(url: &str) -> Result<SshUrl, String> {
        if url.len() > MAX_PATH_LEN + 300 || url.trim() != url || url.chars().any(char::is_control) {
            return Err("must be at most 1,300 characters, without spaces around it or control characters".into());
        }
        let (user, host, port, path) = match url.get(..6).filter(|s| s.eq_ignore_ascii_case("ssh://")) {
            Some(_) => {
                let rest = &url[6..];
                let (authority, path) = rest.split_at(rest.find('/').ok_or("must name a repository path")?);
                let (user, hostport) = split_user(authority);
                let (host, port) = split_port(hostport)?;
                // git sends `/~/x` as `~/x`: a path in the user's home.
                let path = path.strip_prefix('/').filter(|p| p.starts_with('~')).unwrap_or(path);
                (user, host, port, path.to_owned())
            }
            None if is_ssh_url(url) => {
                let (authority, path) = url.split_once(':').ok_or("must be user@host:path")?;
                let (user, host) = split_user(authority);
                if host.starts_with('[') {
                    return Err("the scp-like form takes no bracketed address: use ssh://user@[address]/path".into());
                }
                (user, host.to_owned(), 22, path.to_owned())
            }
            None => return Err("must start with ssh:// or be user@host:path".into()),
        };
        let user = user.unwrap_or(DEFAULT_USER).to_owned();
        check_user(&user)?;
        check_host(&host)?;
        check_path(&path)?;
        Ok(SshUrl { user, host, port, path })
    }

    /// `host:port` as a message names it.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The command the remote runs for `service` (`git-upload-pack` or
    /// `git-receive-pack`), the path single-quoted as git quotes it
    /// (the path's characters never need escaping: [`check_path`]).
    pub fn command(&self, service: &str) -> String {
        format!("{service} '{}'", self.path)
    }

    /// An https URL with this URL's host, for the operator's address
    /// policy, which judges hosts in URLs (`UrlPolicy::check`): the same
    /// rules (IP literals, `localhost`, single-label names, the
    /// allowlist) apply to a repository on ssh as on https.
    pub fn policy_probe(&self) -> String {
        if self.host.contains(':') { format!("https://[{}]/", self.host) } else { format!("https://{}/", self.host) }
    }
}

fn split_user(authority: &str) -> (Option<&str>, &str) {
    match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    }
}

fn split_port(hostport: &str) -> Result<(String, u16), String> {
    let bad_port = || "the port must be a number from 1 to 65535".to_owned();
    if let Some(inner) = hostport.strip_prefix('[') {
        let (host, after) = inner.split_once(']').ok_or("an IPv6 address must end with ]")?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad_port)?,
            None if after.is_empty() => 22,
            None => return Err("unexpected text after the address".into()),
        };
        return Ok((host.to_owned(), port));
    }
    match hostport.split_once(':') {
        Some((host, port)) => Ok((host.to_owned(), port.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad_port)?)),
        None => Ok((hostport.to_owned(), 22)),
    }
}

fn check_user(user: &str) -> Result<(), String> {
    let ok = !user.is_empty()
        && user.len() <= 64
        && !user.starts_with('-')
        && user.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok { Ok(()) } else { Err("the user must be 1 to 64 letters, digits, '.', '_' or '-'".into()) }
}

fn check_host(host: &str) -> Result<(), String> {
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    let ok = !host.is_empty()
        && host.len() <= 253
        && !host.starts_with(['-', '.'])
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'));
    if ok { Ok(()) } else { Err(format!("{host:?} is not a host name or an IP address")) }
}

/// The path's allowlist (see the module invariants).
pub fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() || path.len() > MAX_PATH_LEN {
        return Err(format!("the repository path must be 1 to {MAX_PATH_LEN} characters"));
    }
    if !path.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/' | b'~' | b'+')) {
        return Err("the repository path may hold only letters, digits and '._-/~+'".into());
    }
    if path.starts_with('-') || path.split('/').any(|part| part == "..") {
        return Err("the repository path must not start with '-' or climb with '..'".into());
    }
    Ok(())
}

/// How a call reaches a repository on an ssh URL.
#[derive(Clone, PartialEq, Eq)]
pub struct SshAccess {
    /// The Playzone the host key is pinned for.
    pub playzone_id: i64,
    /// The deploy key, OpenSSH private key text (redacted by `Debug`).
    pub private_key_openssh: String,
    /// The pinned host key (an OpenSSH public key line); `None` before
    /// the first contact, which pins what it sees ([`SshHostKeys`]).
    pub pinned_host_key: Option<String>,
}

impl fmt::Debug for SshAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshAccess")
            .field("playzone_id", &self.playzone_id)
            .field("private_key_openssh", &"<redacted>")
            .field("pinned_host_key", &self.pinned_host_key)
            .finish()
    }
}

/// Where the gateway pins a Playzone's host key on first contact.
#[async_trait]
pub trait SshHostKeys: Send + Sync + fmt::Debug {
    /// Pins `key_line` (an OpenSSH public key line) for `playzone_id`
    /// unless a key is pinned already, and answers the pinned key: the
    /// one given, or the one a concurrent first contact pinned before.
    async fn pin_first(&self, playzone_id: i64, key_line: &str) -> Result<String, RepositoryError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(url: &str) -> (String, String, u16, String) {
        let u = SshUrl::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        (u.user, u.host, u.port, u.path)
    }

    #[test]
    fn both_spellings_read_as_git_reads_them() {
        let t = |user: &str, host: &str, port: u16, path: &str| (user.into(), host.into(), port, path.into());
        assert_eq!(parsed("ssh://git@example.org/owner/repo.git"), t("git", "example.org", 22, "/owner/repo.git"));
        assert_eq!(parsed("ssh://example.org:2222/repo.git"), t("git", "example.org", 2222, "/repo.git"));
        assert_eq!(parsed("SSH://deploy@[::1]:22/srv/r.git"), t("deploy", "::1", 22, "/srv/r.git"));
        assert_eq!(parsed("ssh://git@example.org/~/repo.git"), t("git", "example.org", 22, "~/repo.git"));
        assert_eq!(parsed("git@github.com:owner/repo.git"), t("git", "github.com", 22, "owner/repo.git"));
        assert_eq!(parsed("git@host.example:/srv/repo.git"), t("git", "host.example", 22, "/srv/repo.git"));
        for ssh in ["ssh://h.example/r", "git@github.com:o/r.git"] {
            assert!(is_ssh_url(ssh), "{ssh}");
        }
        for other in ["https://github.com/o/r.git", "http://a@b:c/d", "./relative:path", "C:/x", "/srv/a:b"] {
            assert!(!is_ssh_url(other), "{other}");
        }
    }

    /// Each attack on the remote command or the address is refused from
    /// the text alone.
    #[test]
    fn hostile_urls_are_refused_before_anything_is_dialled() {
        for bad in [
            "ssh://git@example.org/repo.git'; rm -rf / #",
            "ssh://git@example.org/$(reboot)",
            "ssh://git@example.org/-oProxyCommand=x",
            "git@example.org:-oProxyCommand=x",
            "ssh://git@example.org/../../etc/passwd",
            "ssh://-oProxyCommand=x@example.org/r.git",
            "ssh://git@-oProxyCommand=x/r.git",
            "ssh://git@example.org:0/r.git",
            "ssh://git@example.org:99999/r.git",
            "ssh://git@example.org",
            "ssh://git@exa mple.org/r.git",
            "ssh://git@example.org/r.git\n",
            "ssh://git@example.org/r%20.git",
            "git@[::1]:r.git",
        ] {
            assert!(SshUrl::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let long = format!("ssh://git@example.org/{}", "a".repeat(MAX_PATH_LEN + 1));
        assert!(SshUrl::parse(&long).is_err());
    }

    #[test]
    fn the_command_quotes_the_path_and_the_probe_names_the_host() {
        let url = SshUrl::parse("ssh://git@[fd00::1]:2200/srv/repo.git").unwrap();
        assert_eq!(url.command("git-upload-pack"), "git-upload-pack '/srv/repo.git'");
        assert_eq!(url.policy_probe(), "https://[fd00::1]/");
        assert_eq!(url.address(), "[fd00::1]:2200");
        let access = SshAccess { playzone_id: 1, private_key_openssh: "SECRET".into(), pinned_host_key: None };
        assert!(!format!("{access:?}").contains("SECRET"));
    }
}
