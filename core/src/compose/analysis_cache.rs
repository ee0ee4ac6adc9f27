//! Analysed template bodies, kept per process and shared: a template
//! version is immutable, so the YAML parse, the namespace and the
//! reference scan of its body are done once, when the version is created
//! (or the first time this process sees it), and every launch compiles from
//! that analysis (issue #33, item 3).
//!
//! Keyed by the body text itself, not by a version id: two versions with
//! one body share an entry, nothing must be invalidated when a version is
//! deleted, and a caller cannot get the analysis of a body other than the
//! one it passed (the key is compared in full on a hit).
//!
//! Invariants:
//! - an analysis is a pure function of the body, so a cached one is the
//!   one [`analyze`](super::svc::analyze) would return now;
//! - only successful analyses are kept (a body that does not load is
//!   rejected again each time, at the cost of its parse);
//! - bounded: bodies over [`MAX_BODY_BYTES`] are never kept, and the kept
//!   bodies total at most [`MAX_TOTAL_BYTES`] and [`MAX_ENTRIES`]; the
//!   oldest entries go first. A parsed tree is about ten times its text,
//!   so the cache holds a few tens of MiB at most, and nothing at start.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use super::svc::{Analyzed, analyze};
use crate::FieldErrors;

/// Larger bodies are analysed every time.
const MAX_BODY_BYTES: usize = 64 * 1024;
/// The text of every kept body together.
const MAX_TOTAL_BYTES: usize = 2 * 1024 * 1024;
/// The most bodies kept.
const MAX_ENTRIES: usize = 512;

#[derive(Default)]
struct Cache {
    entries: HashMap<Arc<str>, Arc<Analyzed>>,
    /// Insertion order, oldest first.
    order: VecDeque<Arc<str>>,
    bytes: usize,
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Mutex::default);

/// The cache holds only finished values, so a panic elsewhere while it was
/// locked cannot have left an entry half-written; `bytes` is updated with
/// the maps in one critical section that does not panic.
fn lock() -> MutexGuard<'static, Cache> {
    CACHE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The analysis of `body`, from the cache when this process has seen it.
pub(crate) fn analyzed(body: &str) -> Result<Arc<Analyzed>, FieldErrors> {
    if let Some(hit) = lock().entries.get(body) {
        return Ok(Arc::clone(hit));
    }
    let analysis = Arc::new(analyze(body)?);
    if body.len() <= MAX_BODY_BYTES {
        // Evicted trees are freed after the lock is released: freeing a
        // tree costs about as much as building its text.
        let mut evicted = Vec::new();
        let mut cache = lock();
        if !cache.entries.contains_key(body) {
            while cache.entries.len() >= MAX_ENTRIES || cache.bytes + body.len() > MAX_TOTAL_BYTES {
                let Some(oldest) = cache.order.pop_front() else { break };
                cache.bytes -= oldest.len();
                evicted.extend(cache.entries.remove(&oldest));
            }
            let key: Arc<str> = Arc::from(body);
            cache.bytes += key.len();
            cache.order.push_back(Arc::clone(&key));
            cache.entries.insert(key, Arc::clone(&analysis));
        }
        drop(cache);
        drop(evicted);
    }
    Ok(analysis)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(n: usize) -> String {
        format!(
            "svc:\n  variables:\n    V{n}: {{default: x}}\nservices:\n  web:\n    image: busybox\n    environment: {{A: $$var__V{n}}}\n"
        )
    }

    #[test]
    fn one_body_is_analysed_once_and_a_different_body_is_not_confused_with_it() {
        let a = analyzed(&body(1)).unwrap();
        let again = analyzed(&body(1)).unwrap();
        assert!(Arc::ptr_eq(&a, &again), "the second call is the cached analysis");
        let other = analyzed(&body(2)).unwrap();
        assert!(other.namespace.variables.contains_key("V2") && !other.namespace.variables.contains_key("V1"));
    }

    #[test]
    fn failures_are_not_kept_and_large_bodies_are_not_cached() {
        assert!(analyzed("services: [").is_err());
        assert!(!lock().entries.contains_key("services: ["));
        let large = format!("{}# {}\n", body(3), "x".repeat(MAX_BODY_BYTES));
        let first = analyzed(&large).unwrap();
        let second = analyzed(&large).unwrap();
        assert!(!Arc::ptr_eq(&first, &second), "analysed again");
    }

    #[test]
    fn the_cache_stays_within_its_bounds() {
        for n in 0..(MAX_ENTRIES + 50) {
            analyzed(&body(1000 + n)).unwrap();
        }
        let cache = lock();
        assert!(cache.entries.len() <= MAX_ENTRIES && cache.bytes <= MAX_TOTAL_BYTES);
        assert_eq!(cache.entries.len(), cache.order.len());
        assert_eq!(cache.bytes, cache.order.iter().map(|k| k.len()).sum::<usize>());
    }
}
