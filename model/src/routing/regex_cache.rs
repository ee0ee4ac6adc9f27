//! Tenant regular expressions (variable `validation`, `PathRegexp`), compiled
//! once per process and shared.
//!
//! A template is parsed when its version is created and again at every
//! launch, and each parse used to compile its patterns afresh: about a
//! tenth of the engine's time on a realistic template (issue #16's
//! profile). A compiled [`Regex`] is immutable and cheap to clone (it is
//! reference counted), so the same pattern compiled twice is the same value.
//!
//! Invariants:
//! - every pattern is compiled with the same bound ([`SIZE_LIMIT`] on the
//!   compiled program), cached or not, so caching changes no answer;
//! - the cache is bounded: at most [`MAX_ENTRIES`] patterns of at most
//!   [`MAX_PATTERN_BYTES`] each (longer ones are compiled every time, as
//!   before); full, it starts over. Held memory is therefore at most
//!   `MAX_ENTRIES x SIZE_LIMIT` of compiled programs even when a tenant
//!   submits nothing but distinct worst-case patterns;
//! - failures are not cached (an invalid pattern is rare and its error
//!   message is rebuilt each time).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use regex::{Regex, RegexBuilder};

/// The largest compiled program of one tenant pattern, in bytes.
pub(crate) const SIZE_LIMIT: usize = 1 << 20;
/// The most patterns kept.
const MAX_ENTRIES: usize = 64;
/// Longer patterns are not kept.
const MAX_PATTERN_BYTES: usize = 512;

static CACHE: LazyLock<Mutex<HashMap<String, Regex>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// `pattern` compiled under [`SIZE_LIMIT`], from the cache when it is there.
pub(crate) fn compiled(pattern: &str) -> Result<Regex, regex::Error> {
    let cacheable = pattern.len() <= MAX_PATTERN_BYTES;
    if cacheable && let Some(regex) = lock().get(pattern) {
        return Ok(regex.clone());
    }
    let regex = RegexBuilder::new(pattern).size_limit(SIZE_LIMIT).build()?;
    if cacheable {
        let mut cache = lock();
        if cache.len() >= MAX_ENTRIES {
            cache.clear();
        }
        cache.insert(pattern.to_owned(), regex.clone());
    }
    Ok(regex)
}

/// The cache holds only finished values, so a panic elsewhere while it was
/// locked cannot have left it half-written: a poisoned lock is used as is.
fn lock() -> std::sync::MutexGuard<'static, HashMap<String, Regex>> {
    CACHE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_pattern_answers_the_same_and_errors_are_not_kept() {
        let a = compiled("^[a-z]+$").unwrap();
        let b = compiled("^[a-z]+$").unwrap();
        assert!(a.is_match("abc") && b.is_match("abc") && !b.is_match("ABC"));
        assert!(compiled("(").is_err());
        assert!(!lock().contains_key("("));
    }

    #[test]
    fn the_size_bound_holds_for_cached_patterns() {
        // Far beyond 1 MiB compiled: refused, cached or not.
        assert!(compiled(r"\w{1000}\w{1000}\w{1000}").is_err());
        assert!(compiled(r"\w{1000}\w{1000}\w{1000}").is_err());
    }

    #[test]
    fn the_cache_stays_bounded() {
        for i in 0..(MAX_ENTRIES * 3) {
            compiled(&format!("^x{i}$")).unwrap();
            assert!(lock().len() <= MAX_ENTRIES);
        }
        let long = format!("^{}$", "a".repeat(MAX_PATTERN_BYTES));
        assert!(compiled(&long).unwrap().is_match(&"a".repeat(MAX_PATTERN_BYTES)));
        assert!(!lock().contains_key(&long));
    }
}
