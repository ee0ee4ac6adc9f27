//! Repository names and full names.
//!
//! One rule for every host: 1–100 characters of lowercase ASCII letters,
//! digits, `-`, `_` and `.`, starting with a letter or a digit, not ending
//! in `.git` or `.lock` (git's own suffixes). Lowercase only, so a name is
//! its own case-folded form: two repositories can never differ by case
//! alone, on a case-insensitive file system or in a URL. The owner is the
//! account's name (1–64 letters, digits, `-`, `_`, `.`; see
//! `store::accounts`), already URL-safe.

use std::fmt;

use crate::{Error, Result};

/// The longest repository name, in characters.
/// The longest description of a repository, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1_000;

pub const MAX_REPO_NAME_CHARS: usize = 100;

/// Checks a repository name (field `field` of the request).
pub fn check_repo_name(field: &str, name: &str) -> Result<()> {
    let problem = if name.is_empty() {
        Some("must not be empty".to_owned())
    } else if name.len() > MAX_REPO_NAME_CHARS {
        Some(format!("must be at most {MAX_REPO_NAME_CHARS} characters"))
    } else if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Some(format!("repository names are lowercase: try {:?}", name.to_ascii_lowercase()))
    } else if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')) {
        Some("may contain only lowercase letters, digits, '-', '_' and '.'".to_owned())
    } else if !name.as_bytes()[0].is_ascii_alphanumeric() {
        Some("must start with a letter or a digit".to_owned())
    } else if name.ends_with(".git") || name.ends_with(".lock") {
        Some("must not end in \".git\" or \".lock\"".to_owned())
    } else {
        None
    };
    match problem {
        Some(message) => Err(Error::field(field, message)),
        None => Ok(()),
    }
}

/// Whether `owner` reads as an account name (the owner half of a full
/// name).
fn valid_owner(owner: &str) -> bool {
    !owner.is_empty()
        && owner.len() <= 64
        && owner.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && owner != "."
        && owner != ".."
}

/// A repository's full name, `owner/name`, checked.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FullName {
    pub owner: String,
    pub name: String,
}

impl FullName {
    /// Parses `owner/name` (field `field`); a malformed one is a
    /// validation error, never "not found", so a typo is told apart from a
    /// repository that does not exist.
    pub fn parse(field: &str, text: &str) -> Result<FullName> {
        let Some((owner, name)) = text.split_once('/') else {
            return Err(Error::field(field, "must be a full name: owner/name"));
        };
        if !valid_owner(owner) {
            return Err(Error::field(field, "the owner must be an account name (letters, digits, '-', '_', '.')"));
        }
        check_repo_name(field, name)?;
        Ok(FullName { owner: owner.to_owned(), name: name.to_owned() })
    }
}

impl fmt::Display for FullName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}
