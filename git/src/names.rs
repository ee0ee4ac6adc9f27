//! What the gateway accepts from its callers before any network call:
//! repository URLs, commit ids, branch names and archive subdirectories.

use play_model::webhook::UrlPolicy;

use crate::error::{Error, Result};

/// The longest branch name accepted, in bytes.
pub(crate) const MAX_BRANCH_LEN: usize = 200;

/// Checks a repository URL against the operator's policy (scheme, IP
/// literals, `localhost`) and refuses userinfo outright: a token belongs
/// in [`RepositoryAccess::token`](play_model::repository::RepositoryAccess),
/// where it stays out of URLs, logs and the cache.
pub(crate) fn check_url(policy: &UrlPolicy, url: &str) -> Result<String> {
    // Messages must not echo a URL with userinfo: it may hold a secret.
    if has_userinfo(url) {
        return Err(Error::Refused(
            "the repository URL must not contain a user name or password (give the token separately)".into(),
        ));
    }
    let checked = policy.check(url).map_err(|e| Error::Refused(format!("repository URL {url} {e}")))?;
    if checked.query().is_some() {
        return Err(Error::Refused(format!("repository URL {url} must not contain a query")));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

fn has_userinfo(url: &str) -> bool {
    url.split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or_default().contains('@'))
        .unwrap_or(false)
}

/// `url` as it may appear in a log line: without userinfo, which may hold
/// a secret (such a URL is refused anyway).
pub(crate) fn shown_url(url: &str) -> &str {
    // An ssh URL's user is no secret (`git@`); one that reads is shown.
    let ssh = play_model::repository::ssh::is_ssh_url(url) && play_model::repository::ssh::SshUrl::parse(url).is_ok();
    if has_userinfo(url) && !ssh { "<a URL with userinfo, not shown>" } else { url }
}

/// A full hex commit id (SHA-1, lowercase or not), parsed.
pub(crate) fn commit_id(commit: &str) -> Result<git2::Oid> {
    if commit.len() != 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::Failed(format!("{commit:?} is not a full hex commit id")));
    }
    git2::Oid::from_str(commit).map_err(|_| Error::Failed(format!("{commit:?} is not a full hex commit id")))
}

/// Checks a branch name (without `refs/heads/`) against a safe subset of
/// git's ref-name rules (`git check-ref-format`): ASCII letters, digits,
/// `.`, `_`, `-` and `/`; no empty component, none starting with `.` or
/// `-` or ending with `.lock`; no `..`; not ending with `.`; not `HEAD`.
/// libgit2's own check runs too.
pub(crate) fn check_branch(name: &str) -> Result<()> {
    let refuse = |why: &str| Err(Error::Failed(format!("invalid branch name {name:?}: {why}")));
    if name.is_empty() || name.len() > MAX_BRANCH_LEN {
        return refuse(&format!("must be 1 to {MAX_BRANCH_LEN} characters"));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/')) {
        return refuse("only letters, digits, '.', '_', '-' and '/' are allowed");
    }
    if name == "HEAD" || name.contains("..") || name.ends_with('.') {
        return refuse("must not be HEAD, contain '..' or end with '.'");
    }
    for part in name.split('/') {
        if part.is_empty() || part.starts_with('.') || part.starts_with('-') || part.ends_with(".lock") {
            return refuse(
                "each '/'-separated part must be non-empty, not start with '.' or '-', nor end with '.lock'",
            );
        }
    }
    if !git2::Reference::is_valid_name(&format!("refs/heads/{name}")) {
        return refuse("not a valid git ref name");
    }
    Ok(())
}

/// The components of an archive subdirectory (`""` or `"/"`-free
/// relative path; a trailing `/` is allowed): `..`, `.`, empty parts and
/// absolute paths are refused.
pub(crate) fn subdir_parts(subdir: &str) -> Result<Vec<&str>> {
    let trimmed = subdir.strip_suffix('/').unwrap_or(subdir);
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    if trimmed.starts_with('/') || trimmed.contains('\\') || trimmed.contains('\0') {
        return Err(Error::Refused(format!("subdirectory {subdir:?} must be a relative path")));
    }
    let parts: Vec<&str> = trimmed.split('/').collect();
    if parts.iter().any(|p| p.is_empty() || *p == "." || *p == "..") {
        return Err(Error::Refused(format!("subdirectory {subdir:?} must not contain '.', '..' or '//'")));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_follow_a_safe_subset_of_git_rules() {
        for ok in ["main", "feature/x-1", "release-2.0", "a_b", "play/pr-12", "v1.2.3"] {
            assert!(check_branch(ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(MAX_BRANCH_LEN + 1);
        for bad in [
            "",
            "HEAD",
            "a..b",
            "a.",
            "/a",
            "a/",
            "a//b",
            ".hidden",
            "a/.b",
            "-rf",
            "a/-b",
            "x.lock",
            "a/x.lock/b",
            "a b",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[b",
            "a\\b",
            "a@{1}",
            "ü",
            "a\nb",
            long.as_str(),
        ] {
            assert!(check_branch(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn commit_ids_are_full_hex() {
        assert!(commit_id("0123456789abcdef0123456789abcdef01234567").is_ok());
        assert!(commit_id("0123456789ABCDEF0123456789ABCDEF01234567").is_ok());
        for bad in ["", "0123456", "main", "g123456789abcdef0123456789abcdef01234567", "HEAD~1"] {
            assert!(commit_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn subdirectories_stay_inside_the_tree() {
        assert_eq!(subdir_parts("").unwrap(), Vec::<&str>::new());
        assert_eq!(subdir_parts("a/b/").unwrap(), vec!["a", "b"]);
        for bad in ["/etc", "..", "a/../b", "./a", "a//b", "a/.", "a\\..\\b"] {
            assert!(matches!(subdir_parts(bad), Err(Error::Refused(_))), "{bad:?}");
        }
    }

    #[test]
    fn urls_with_userinfo_are_refused_without_echoing_them() {
        let policy = UrlPolicy::default();
        for bad in ["https://x-access-token:s3cret@git.example.com/r.git", "https://s3cret@git.example.com/r.git"] {
            let error = check_url(&policy, bad).unwrap_err();
            assert!(matches!(error, Error::Refused(_)), "{error:?}");
            assert!(!error.to_string().contains("s3cret"), "{error}");
        }
        assert!(matches!(check_url(&policy, "http://git.example.com/r.git"), Err(Error::Refused(_))));
        assert!(matches!(check_url(&policy, "https://127.0.0.1/r.git"), Err(Error::Refused(_))));
        assert!(matches!(check_url(&policy, "file:///etc"), Err(Error::Refused(_))));
        assert!(matches!(check_url(&policy, "ssh://git.example.com/r.git"), Err(Error::Refused(_))));
        assert_eq!(check_url(&policy, "https://git.example.com/r.git/").unwrap(), "https://git.example.com/r.git");
        assert!(!shown_url("https://u:s3cret@git.example.com/r.git").contains("s3cret"));
        assert_eq!(shown_url("https://git.example.com/r.git"), "https://git.example.com/r.git");
    }
}
